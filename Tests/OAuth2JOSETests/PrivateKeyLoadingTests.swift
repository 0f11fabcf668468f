import CryptoExtras
import Foundation
import Testing
@testable import OAuth2JOSE

/// Private keys from JWKs, PEM and files, and back to JWKs.
@Suite struct PrivateKeyLoadingTests {
    /// RFC 7517 Appendix A.2: a P-256 private key.
    static let rfc7517EC: [String: JSONValue] = [
        "kty": "EC", "crv": "P-256",
        "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4", "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM",
        "d": "870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE",
    ]

    @Test func anECPrivateJWKSignsForItsPublicKey() throws {
        let key = try JWSSigningKey(jwk: Self.rfc7517EC)
        #expect(key.algorithm == .es256)
        let compact = try key.sign(claims: ["a": "b"])
        let publicKey = try JSONWebKey(["kty": "EC", "crv": "P-256", "x": Self.rfc7517EC["x"]!, "y": Self.rfc7517EC["y"]!])
        #expect(try JWS(compact: compact).isSigned(by: publicKey))
    }

    @Test func publicMembersMustBelongToThePrivateKey() {
        var wrong = Self.rfc7517EC
        wrong["x"] = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"  // another key's (RFC 7515 A.3)
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: wrong) }
    }

    @Test func theJWKsKidAndAlgAreKeptAndChecked() throws {
        var jwk = Self.rfc7517EC
        jwk["kid"] = "ec-1"
        jwk["alg"] = "ES256"
        #expect(try JWSSigningKey(jwk: jwk).keyID == "ec-1")
        #expect(try JWSSigningKey(jwk: jwk, keyID: "other").keyID == "other")
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: jwk, algorithm: .es384) }
        jwk["alg"] = "RS256"
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: jwk) }
    }

    @Test(arguments: [JWSAlgorithm.rs256, .ps384, .es256, .es384, .es512, .edDSA])
    func privateJWKsRoundTrip(algorithm: JWSAlgorithm) throws {
        let key = try JWSSigningKey.generate(algorithm, keyID: "k")
        let jwk = try #require(key.privateJWK)
        if algorithm.rawValue.hasPrefix("RS") || algorithm.rawValue.hasPrefix("PS") {
            #expect(Set(jwk.keys).isSuperset(of: ["n", "e", "d", "p", "q", "dp", "dq", "qi"]))
        }
        let reloaded = try JWSSigningKey(jwk: jwk)
        #expect(reloaded.algorithm == algorithm)
        #expect(reloaded.keyID == "k")
        #expect(try JWS(compact: reloaded.sign(claims: ["x": 1])).isSigned(by: try #require(key.publicKey)))
    }

    @Test func anRSAJWKWithoutPrimesLoads() throws {
        let key = try JWSSigningKey.generate(.rs256)
        var jwk = try #require(key.privateJWK)
        for name in ["p", "q", "dp", "dq", "qi"] { jwk[name] = nil }
        let reloaded = try JWSSigningKey(jwk: jwk)
        #expect(try JWS(compact: reloaded.sign(claims: ["x": 1])).isSigned(by: try #require(key.publicKey)))
    }

    @Test func aSymmetricOrMalformedJWKIsRefused() {
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: ["kty": "oct", "k": "AAAA"]) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: ["kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"]) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwk: ["kty": "OKP", "crv": "X25519", "x": "AA", "d": "AA"]) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(jwkData: Data("[1]".utf8)) }
    }

    @Test(arguments: [
        (JWSAlgorithm.rs256, JWSAlgorithm.rs256), (.es256, .es256), (.es384, .es384), (.es512, .es512), (.edDSA, .edDSA),
    ])
    func aPEMsTypeChoosesTheAlgorithm(generated: JWSAlgorithm, expected: JWSAlgorithm) throws {
        let pem = try Self.pem(for: generated)
        let key = try JWSSigningKey(pem: pem, keyID: "pem-1")
        #expect(key.algorithm == expected)
        #expect(key.keyID == "pem-1")
        if generated == .rs256 {
            #expect(try JWSSigningKey(pem: pem, algorithm: .ps256).algorithm == .ps256)
        }
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: pem, algorithm: generated == .edDSA ? .es256 : .edDSA) }
    }

    @Test func aShortRSAKeyIsRefused() throws {
        let short = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: short.pemRepresentation) }
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: short.pemRepresentation, algorithm: .rs256) }
    }

    @Test func anEncryptedOrForeignPEMIsRefused() {
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----") }
        #expect(throws: JOSEError.self) { try JWSSigningKey(pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----") }
    }

    @Test func aKeyFileMayHoldAJWKOrAPEM() async throws {
        try await withTemporaryDirectory { directory in
            let jwkFile = directory.appendingPathComponent("key.jwk")
            try Data(JSONValue.object(Self.rfc7517EC.merging(["kid": "from-file"]) { $1 }).description.utf8).write(to: jwkFile)
            let fromJWK = try JWSSigningKey(contentsOf: jwkFile)
            #expect(fromJWK.algorithm == .es256)
            #expect(fromJWK.keyID == "from-file")
            let pemFile = directory.appendingPathComponent("key.pem")
            try Data(try Self.pem(for: .edDSA).utf8).write(to: pemFile)
            #expect(try JWSSigningKey(contentsOf: pemFile, keyID: "ed").algorithm == .edDSA)
            do {
                _ = try JWSSigningKey(contentsOf: directory.appendingPathComponent("missing.pem"))
                Issue.record("a missing file loaded")
            } catch let error as JOSEError {
                #expect(error.reason == .invalidKey)
                #expect(!error.message.contains(directory.path), "names the file, not where it is")
            }
        }
    }

    /// A PEM private key of the algorithm's type, made by the platform's crypto library.
    static func pem(for algorithm: JWSAlgorithm) throws -> String {
        let key = try JWSSigningKey.generate(algorithm)
        switch key.key {
        case .rsa(let rsa): return rsa.pemRepresentation
        case .p256(let ec): return ec.pemRepresentation
        case .p384(let ec): return ec.pemRepresentation
        case .p521(let ec): return ec.pemRepresentation
        case .ed25519(let ed): return ed.pemRepresentation
        case .hmac: throw JOSEError(.invalidKey, "no PEM for HMAC")
        }
    }
}

/// Runs `body` with a new empty directory, removed afterwards.
private func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async rethrows -> T {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("oauth2-jose-tests-\(UUID().uuidString)", isDirectory: true)
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}
