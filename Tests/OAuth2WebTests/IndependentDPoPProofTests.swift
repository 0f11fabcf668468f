import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2JOSE
@testable import OAuth2Web
import Testing

/// DPoP proofs made by an independent implementation — Python joserfc, through
/// Tests/Support/dpop/make-proofs.py — accepted or refused by the verifier exactly as the
/// RFC says, so that our checks are not only consistent with our own proof maker.
/// The venv: scripts/test-servers/jose.sh (up.sh makes it and exports its python as
/// OAUTH2_TEST_JOSE_PYTHON). Without it the test fails: it does not skip.
@Suite("DPoP proofs made by joserfc", .timeLimit(.minutes(1)))
struct IndependentDPoPProofTests {
    struct Made: Decodable {
        let jkt: String
        let otherJkt: String
        let proofs: [String: String]
    }

    static func make(url: String, method: String, accessToken: String, nonce: String, now: Date) async throws -> Made {
        let python = try #require(
            ProcessInfo.processInfo.environment["OAUTH2_TEST_JOSE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 },
            "OAUTH2_TEST_JOSE_PYTHON is not set: scripts/test-servers/jose.sh install (up.sh does), then source its env")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/dpop/make-proofs.py")
        let run = try await ChildProcess.run(python, arguments: [
            script.path, "--url", url, "--method", method, "--access-token", accessToken, "--nonce", nonce,
            "--now", String(Int(now.timeIntervalSince1970)),
        ])
        try #require(run.succeeded, "make-proofs.py ended \(run.termination): \(run.errorText)")
        return try JSONDecoder().decode(Made.self, from: run.standardOutput)
    }

    @Test("joserfc's valid proofs are accepted once; each broken rule is refused with its reason")
    func proofs() async throws {
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let nonces = DPoPServerNonces()
        var verifier = DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example")!, nonces: nonces)
        verifier.now = { now }
        let accessToken = "access-token-\(UUID().uuidString)"
        let made = try await Self.make(
            url: "https://api.example/orders", method: "GET", accessToken: accessToken, nonce: nonces.current(now: now), now: now)

        func verify(_ name: String, bound: String? = nil) async -> Result<DPoPProofVerifier.VerifiedProof, AccessTokenError> {
            do throws(AccessTokenError) {
                let proof = made.proofs[name] ?? ""
                return .success(try await verifier.verify(proof, method: .get, path: "/orders?page=1", accessToken: accessToken, boundThumbprint: bound ?? made.jkt))
            } catch {
                return .failure(error)
            }
        }
        func refusal(_ name: String) async -> AccessTokenError? {
            if case .failure(let error) = await verify(name) { return error }
            Issue.record("joserfc's proof \(name) was accepted")
            return nil
        }

        // Accepted, and our RFC 7638 thumbprint of joserfc's key is joserfc's.
        let accepted = try await verify("valid").get()
        #expect(accepted.thumbprint == made.jkt)
        #expect(accepted.issuedAt == now)
        #expect(try await verify("valid2").get().thumbprint == made.jkt)

        // The same proof again: a replay.
        #expect(await refusal("valid")?.reason == .replayed)

        #expect(await refusal("otherURL")?.reason == .urlMismatch)
        #expect(await refusal("otherMethod")?.reason == .methodMismatch)
        #expect(await refusal("wrongAth")?.reason == .accessTokenHashMismatch)
        #expect(await refusal("withoutAth")?.code == .invalidDPoPProof)
        #expect(await refusal("tooOld")?.code == .invalidDPoPProof)
        #expect(await refusal("future")?.code == .invalidDPoPProof)
        #expect(await refusal("wrongType")?.code == .invalidDPoPProof)
        #expect(await refusal("withoutJti")?.code == .invalidDPoPProof)
        #expect(await refusal("symmetric")?.code == .invalidDPoPProof)
        #expect(await refusal("privateJWK")?.code == .invalidDPoPProof)
        // Without the server's nonce: use_dpop_nonce, with the nonce to use.
        let withoutNonce = await refusal("withoutNonce")
        #expect(withoutNonce?.code == .useDPoPNonce)
        #expect(withoutNonce?.reason == .nonceRequired)
        #expect(await refusal("wrongNonce")?.code == .useDPoPNonce)
        // Signed by another key than the one the token is bound to.
        #expect(await refusal("otherKey")?.reason == .confirmationMismatch)
        // … which is accepted for a token bound to that key.
        #expect(try await verify("otherKey", bound: made.otherJkt).get().thumbprint == made.otherJkt)
    }
}
