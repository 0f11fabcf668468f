import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// Fuzz-style: random and mutated tokens, proofs and headers all end in a typed refusal —
/// no crash, no hang, no acceptance. Seeded, so a failure replays.
@Suite struct MalformedInputTests {
    let date = ManualDate(TestIssuer.start)

    /// SplitMix64: a small seeded generator.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+/= \"{}:,".utf8)

    /// A valid token or proof with a few bytes changed, cut, or parts swapped; or noise.
    static func mutation(of valid: String, using random: inout SeededGenerator) -> String {
        var bytes = Array(valid.utf8)
        switch Int.random(in: 0..<5, using: &random) {
        case 0:
            for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = alphabet.randomElement(using: &random)!
            }
        case 1:
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
        case 2:
            let parts = valid.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            return parts.shuffled(using: &random).joined(separator: ".")
        case 3:
            let json = "{" + String(decoding: (0..<Int.random(in: 0...40, using: &random)).map { _ in alphabet.randomElement(using: &random)! }, as: UTF8.self)
            let parts = valid.split(separator: ".").map(String.init)
            return Base64URL.encode(Data(json.utf8)) + "." + (parts.count > 1 ? parts[1] : "") + "." + (parts.last ?? "")
        default:
            bytes = (0..<Int.random(in: 0...200, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func mutatedAccessTokensAreRefusedWithTypedErrors() async {
        var random = SeededGenerator(state: 16)
        let verifier = TestIssuer.verifier(date: date)
        let valid = TestIssuer.token()
        for _ in 0..<1500 {
            let token = Self.mutation(of: valid, using: &random)
            guard token != valid else { continue }
            do {
                _ = try await verifier.verify(token)
                // A mutation that only touched the signature's last bits may still verify only if
                // it decodes to the same bytes, which strict base64url refuses.
                Issue.record("accepted a mutated token")
            } catch {
                #expect(error.code == .invalidToken)
            }
        }
    }

    @Test func mutatedProofsAndHeadersAreRefusedWithTypedErrors() async throws {
        var random = SeededGenerator(state: 9449)
        let key = try DPoPKey.generate()
        let token = TestIssuer.token { $0["cnf"] = ["jkt": .string(key.thumbprint)] }
        var dpop = DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example.com")!)
        dpop.now = date.function
        let server = ResourceServer(accessTokens: TestIssuer.verifier(date: date), dpop: dpop)
        let url = URL(string: "https://api.example.com/orders")!
        for round in 0..<1500 {
            let proof = try key.proof(method: .get, url: url, accessToken: token, issuedAt: date.now)
            var fields = HTTPFields()
            let mutateToken = round % 3 == 0
            fields[.authorization] = (round % 2 == 0 ? "DPoP " : "Bearer ") + (mutateToken ? Self.mutation(of: token, using: &random) : token)
            let mutated = Self.mutation(of: proof, using: &random)
            guard mutated != proof else { continue }
            fields[.dpop] = mutated
            let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/orders", headerFields: fields)
            switch await server.authorize(request) {
            case .authorized(let access):
                // The proof is always changed, and a bound token never passes as Bearer.
                Issue.record("accepted round \(round) as \(access.scheme)")
            case .refused(let challenge):
                #expect([400, 401, 403].contains(challenge.status.code))
                #expect(challenge.error.code.isSentToClient)
            }
        }
    }
}
