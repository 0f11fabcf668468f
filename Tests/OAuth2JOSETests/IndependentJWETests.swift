import Foundation
import OAuth2Internals
import OAuth2JOSE
import Testing

/// JWEs made by an independent implementation — Python joserfc, through
/// Tests/Support/jwe/joserfc-jwe.py — decrypted by ours, and ours decrypted by it, for every
/// key management and content encryption algorithm we support. The venv:
/// scripts/test-servers/jose.sh (up.sh makes it and exports its python as
/// OAUTH2_TEST_JOSE_PYTHON). Without it the test fails: it does not skip.
@Suite("JWEs exchanged with joserfc", .timeLimit(.minutes(2)))
struct IndependentJWETests {
    struct Answer: Decodable {
        let made: [String]
        let opened: [String]
    }

    @Test("joserfc's JWEs decrypt with our keys, and joserfc decrypts ours, for every alg and enc")
    func exchange() async throws {
        let python = try #require(
            ProcessInfo.processInfo.environment["OAUTH2_TEST_JOSE_PYTHON"].flatMap { $0.isEmpty ? nil : $0 },
            "OAUTH2_TEST_JOSE_PYTHON is not set: scripts/test-servers/jose.sh install (up.sh does), then source its env")
        let keys: [String: JWEDecryptionKey] = [
            "rsa": try .generate(.rsaOAEP256, keyID: "rsa-1").withoutAlgorithm(),
            "p256": try .generate(.ecdhES, curve: "P-256", keyID: "p256-1").withoutAlgorithm(),
            "p384": try .generate(.ecdhES, curve: "P-384", keyID: "p384-1").withoutAlgorithm(),
            "p521": try .generate(.ecdhES, curve: "P-521", keyID: "p521-1").withoutAlgorithm(),
        ]
        let algorithms: [(JWEKeyAlgorithm, String)] = [
            (.rsaOAEP256, "rsa"), (.rsaOAEP, "rsa"), (.ecdhES, "p256"), (.ecdhESA128KW, "p256"), (.ecdhESA192KW, "p384"),
            (.ecdhESA256KW, "p521"), (.ecdhES, "p521"),
        ]
        let encryptions = JWEContentEncryption.supported.sorted { $0.rawValue < $1.rawValue }
        let plaintext = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"   // a nested JWT's shape
        var cases: [JSONValue] = [], ours: [JSONValue] = []
        for (algorithm, name) in algorithms {
            for encryption in encryptions {
                cases.append(.array([.string(algorithm.rawValue), .string(encryption.rawValue), .string(name)]))
                let compact = try JWE.encrypt(Data(plaintext.utf8), to: keys[name]!.publicKey, algorithm: algorithm, encryption: encryption, contentType: "JWT")
                ours.append(.array([.string(compact), .string(name)]))
            }
        }
        let request: JSONValue = .object([
            "public": .object(keys.mapValues { .object($0.publicKey.members) }),
            "private": .object(keys.mapValues { .object($0.privateJWK) }),
            "cases": .array(cases), "plaintext": .string(plaintext), "ours": .array(ours),
        ])
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/jwe/joserfc-jwe.py")
        let run = try await ChildProcess.run(python, arguments: [script.path], input: Data(request.description.utf8))
        try #require(run.succeeded, "joserfc-jwe.py ended \(run.termination): \(run.errorText)")
        let answer = try JSONDecoder().decode(Answer.self, from: run.standardOutput)
        try #require(answer.made.count == cases.count && answer.opened.count == ours.count)

        let everything = JWEPolicy(keyAlgorithms: JWEKeyAlgorithm.supported, contentEncryptions: JWEContentEncryption.supported)
        let all = Array(keys.values)
        var index = 0
        for (algorithm, _) in algorithms {
            for encryption in encryptions {
                let jwe = try JWE(compact: answer.made[index])
                #expect(jwe.keyAlgorithm == algorithm && jwe.contentEncryption == encryption && jwe.contentType == "JWT")
                #expect(try jwe.decrypt(with: all, policy: everything) == Data(plaintext.utf8), "joserfc's \(algorithm) \(encryption)")
                #expect(answer.opened[index] == plaintext, "ours \(algorithm) \(encryption) in joserfc: \(answer.opened[index])")
                index += 1
            }
        }
    }
}

extension JWEDecryptionKey {
    /// The same key accepting every algorithm that fits it (its public JWK without `alg`).
    fileprivate func withoutAlgorithm() throws -> JWEDecryptionKey {
        var jwk = privateJWK
        jwk["alg"] = nil
        return try JWEDecryptionKey(jwk: jwk)
    }
}
