import Foundation
import HTTPTypes
import OAuth2Internals
import Testing
@testable import OAuth2

/// JWT-secured authorization responses (JARM) made by an independent implementation —
/// Python joserfc, through Tests/Support/jarm/joserfc-jarm.py — from keys this test
/// generates, checked by the client: RS256, ES256 and PS256 responses and nested (signed,
/// then encrypted) ones are accepted; a wrong `iss` or `aud`, an expired one, `alg` `none`,
/// HS256 keyed with the public key, a signature by another key and a tampered payload are
/// refused. The venv: scripts/test-servers/jose.sh (up.sh makes it and exports its python as
/// OAUTH2_TEST_JOSE_PYTHON). Without it the test fails: it does not skip.
@Suite("JARM responses made by joserfc", .timeLimit(.minutes(2)))
struct IndependentJARMTests {
    struct Answer: Decodable {
        let made: [String: String]
    }

    /// One response for joserfc to make, and what the client must say of it.
    struct Case {
        let name: String
        let key: String
        let algorithm: JWSAlgorithm
        var claims: [String: JSONValue]
        var encrypt: (JWEKeyAlgorithm, JWEContentEncryption, String)? = nil
        var forge: String? = nil
        /// `nil`: accepted; else the JOSE reason of the refusal.
        var refusal: JOSEError.Reason? = nil
    }

    @Test("joserfc's responses: good ones accepted, forged or misaddressed ones refused with the right reason")
    func responsesMadeByJoserfc() async throws {
        let python = try #require(
            ProcessInfo.processInfo.environment["OAUTH2_TEST_JOSE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 },
            "OAUTH2_TEST_JOSE_PYTHON is not set: scripts/test-servers/jose.sh install (up.sh does), then source its env")
        let signing: [String: JWSSigningKey] = [
            "rs": try .generate(.rs256, keyID: "rs-1"), "es": try .generate(.es256, keyID: "es-1"),
            "ps": try .generate(.ps256, keyID: "ps-1"), "stranger": try .generate(.rs256, keyID: "rs-1"),
        ]
        let encryption: [String: JWEDecryptionKey] = [
            "rsa": try .generate(.rsaOAEP256, keyID: "enc-rsa"), "ec": try .generate(.ecdhESA128KW, curve: "P-256", keyID: "enc-ec"),
        ]
        let published = ["rs", "es", "ps"].map { JSONValue.object(signing[$0]!.publicKey!.jsonObject) }
        let transport = StubTransport { _, _ in response(200, JSONValue.object(["keys": .array(published)]).description) }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func client(_ algorithm: JWSAlgorithm, secret: String? = nil) throws -> OAuth2Client {
            var configuration = JARMTests.configuration(
                JARMOptions(signingAlgorithm: algorithm), encryption: EncryptionOptions(decryptionKeys: Array(encryption.values)))
            configuration.clientSecret = secret
            return try JARMTests.client(configuration, transport: transport, now: now)
        }
        let request = try client(.rs256).authorizationRequest()
        let good = JARMTests.claims(request)

        var cases: [Case] = [
            Case(name: "rs256", key: "rs", algorithm: .rs256, claims: good),
            Case(name: "es256", key: "es", algorithm: .es256, claims: good),
            Case(name: "ps256", key: "ps", algorithm: .ps256, claims: good),
            Case(name: "nested-rsa", key: "rs", algorithm: .rs256, claims: good, encrypt: (.rsaOAEP256, .a256GCM, "rsa")),
            Case(name: "nested-ec", key: "es", algorithm: .es256, claims: good, encrypt: (.ecdhESA128KW, .a128CBCHS256, "ec")),
            Case(name: "wrong-iss", key: "rs", algorithm: .rs256, claims: JARMTests.claims(request, iss: "https://other.example.com"), refusal: .issuerMismatch),
            Case(name: "wrong-aud", key: "rs", algorithm: .rs256, claims: JARMTests.claims(request, aud: "client-2"), refusal: .audienceMismatch),
            Case(name: "expired", key: "rs", algorithm: .rs256, claims: JARMTests.claims(request, exp: now.addingTimeInterval(-120)), refusal: .expired),
            Case(name: "none", key: "rs", algorithm: .rs256, claims: good, forge: "none", refusal: .algorithmNotAllowed),
            Case(name: "hs256-public", key: "rs", algorithm: .rs256, claims: good, forge: "hs256-public", refusal: .algorithmNotAllowed),
            Case(name: "another-key", key: "stranger", algorithm: .rs256, claims: good, refusal: .signatureInvalid),
            Case(name: "tampered", key: "rs", algorithm: .rs256, claims: good, forge: "tamper", refusal: .signatureInvalid),
            Case(name: "nested-another-key", key: "stranger", algorithm: .rs256, claims: good, encrypt: (.rsaOAEP256, .a256GCM, "rsa"), refusal: .signatureInvalid),
        ]
        cases.sort { $0.name < $1.name }

        let input: JSONValue = .object([
            "keys": .object(signing.mapValues { .object($0.privateJWK!) }),
            "encryption": .object(encryption.mapValues { .object($0.publicKey.members) }),
            "cases": .array(cases.map { item in
                var members: [String: JSONValue] = [
                    "name": .string(item.name), "key": .string(item.key), "alg": .string(item.algorithm.rawValue), "claims": .object(item.claims),
                ]
                if let (alg, enc, name) = item.encrypt { members["encrypt"] = .array([.string(alg.rawValue), .string(enc.rawValue), .string(name)]) }
                if let forge = item.forge { members["forge"] = .string(forge) }
                return .object(members)
            }),
        ])
        let answer = try await Self.run(python, input: input)

        for item in cases {
            let jwt = try #require(answer.made[item.name], "joserfc made no \(item.name)")
            let callback = JARMTests.callback(jwt)
            let checking = try client(item.algorithm)
            if let refusal = item.refusal {
                let error = await JARMTests.refusal(jwt) { try await checking.authorizationResponse(callbackURL: callback, request: request) }
                #expect(error?.code == .invalidAuthorizationResponse && error?.joseReason == refusal, "\(item.name): \(String(describing: error))")
            } else {
                let response = try await checking.authorizationResponse(callbackURL: callback, request: request)
                #expect(response.code == "c-1" && response.state == request.state, "\(item.name)")
            }
        }
        // Even a client that registered HS256 (keyed by its secret) refuses HMAC keyed by the public key.
        let hmac = try #require(answer.made["hs256-public"])
        let withSecret = try client(.hs256, secret: "a-client-secret-of-thirty-two-bytes")
        let error = await JARMTests.refusal(hmac) { try await withSecret.authorizationResponse(callbackURL: JARMTests.callback(hmac), request: request) }
        #expect(error?.joseReason == .signatureInvalid)
    }

    /// Runs joserfc-jarm.py with `input` on stdin.
    static func run(_ python: String, input: JSONValue) async throws -> Answer {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/jarm/joserfc-jarm.py")
        let run = try await ChildProcess.run(python, arguments: [script.path], input: Data(input.description.utf8))
        try #require(run.succeeded, "joserfc-jarm.py ended \(run.termination): \(run.errorText)")
        return try JSONDecoder().decode(Answer.self, from: run.standardOutput)
    }
}
