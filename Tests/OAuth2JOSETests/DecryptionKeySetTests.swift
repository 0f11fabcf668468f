import Foundation
@testable import OAuth2JOSE
import Testing

/// The client's decryption keys from a private JWK set, beside its signing keys, and their
/// rotation: the new key published, the old one still accepted until it is dropped.
@Suite("Decryption keys from a JWK set, and their rotation")
struct DecryptionKeySetTests {
    static let plaintext = Data("eyJhbGciOiJFUzI1NiJ9.e30.c2ln".utf8)
    static let policy = JWEPolicy.default

    static func document(_ keys: [[String: JSONValue]]) -> Data {
        Data(JSONValue.object(["keys": .array(keys.map(JSONValue.object))]).description.utf8)
    }

    /// A kid-less copy of a public key: what a server that ignores kids encrypts to.
    static func withoutKeyID(_ key: JSONWebKey) throws -> JSONWebKey {
        var members = key.members
        members["kid"] = nil
        return try JSONWebKey(members)
    }

    @Test("Only the encryption keys of a mixed set are taken, in order, with their kid and alg")
    func mixedSet() throws {
        let signing = try JWSSigningKey.generate(.es256, keyID: "sig-1")
        var signingJWK = try #require(signing.privateJWK)
        signingJWK["use"] = "sig"
        var unmarkedSigning = try #require(try JWSSigningKey.generate(.rs256, keyID: "sig-2").privateJWK)
        unmarkedSigning["alg"] = "RS256"
        let old = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-2025")
        let new = try JWEDecryptionKey.generate(.ecdhESA128KW, keyID: "enc-2026")
        var unmarkedEncryption = try JWEDecryptionKey.generate(.ecdhES, curve: "P-384", keyID: "enc-ecdh").privateJWK
        unmarkedEncryption["use"] = nil   // no use, but a key management alg: an encryption key
        let keys = try JWEDecryptionKey.keys(jwkSet: Self.document([signingJWK, old.privateJWK, unmarkedSigning, new.privateJWK, unmarkedEncryption]))
        #expect(keys.map(\.keyID) == ["enc-2025", "enc-2026", "enc-ecdh"])
        #expect(keys.map(\.algorithm) == [.rsaOAEP256, .ecdhESA128KW, .ecdhES])
        #expect(keys.map(\.publicKey) == [old.publicKey, new.publicKey, keys[2].publicKey])
        #expect(keys[2].curve == "P-384")
    }

    @Test("Rotation: the new key and the old both open what was sent to them; without a kid each key is tried; a dropped key's JWE is keyNotFound")
    func rotation() throws {
        let old = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-2025")
        let new = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "enc-2026")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dec-\(UUID().uuidString).jwks.json")
        defer { try? FileManager.default.removeItem(at: file) }

        // Both published: what a server encrypted to either is accepted.
        try Self.document([new.privateJWK, old.privateJWK]).write(to: file)
        let during = try JWEDecryptionKey.keys(jwkSetFile: file)
        #expect(during.count == 2)
        for key in [old, new] {
            let compact = try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: .rsaOAEP256, encryption: .a256GCM, contentType: "JWT")
            #expect(try JWE(compact: compact).keyID == key.keyID)
            #expect(try JWE(compact: compact).decrypt(with: during, policy: Self.policy) == Self.plaintext)
        }
        // A JWE without a kid, made to the old key (listed second): each fitting key is tried.
        let kidless = try JWE.encrypt(Self.plaintext, to: try Self.withoutKeyID(old.publicKey), algorithm: .rsaOAEP256, encryption: .a128CBCHS256)
        #expect(try JWE(compact: kidless).keyID == nil)
        #expect(try JWE(compact: kidless).decrypt(with: during, policy: Self.policy) == Self.plaintext)

        // The old key dropped: its JWEs are refused, by kid before any key is tried.
        try Self.document([new.privateJWK]).write(to: file)
        let after = try JWEDecryptionKey.keys(jwkSetFile: file)
        let toOld = try JWE.encrypt(Self.plaintext, to: old.publicKey, algorithm: .rsaOAEP256, encryption: .a256GCM)
        #expect(throws: JOSEError(.keyNotFound, "No decryption key fits the JWE's kid and alg.")) {
            try JWE(compact: toOld).decrypt(with: after, policy: Self.policy)
        }
        #expect(throws: JOSEError(.decryptionFailed, "The JWE cannot be decrypted with this client's keys.")) {
            try JWE(compact: kidless).decrypt(with: after, policy: Self.policy)
        }
    }

    @Test("A set without encryption keys, a broken key, a non-set and a missing file are refused, without key material in the message")
    func refusals() throws {
        let signing = try #require(try JWSSigningKey.generate(.es256, keyID: "sig-1").privateJWK)
        #expect(throws: JOSEError(.invalidKey, "The JWK set holds no decryption key (use: enc, or an alg such as RSA-OAEP-256 or ECDH-ES).")) {
            try JWEDecryptionKey.keys(jwkSet: Self.document([signing]))
        }
        var broken = try JWEDecryptionKey.generate(.ecdhES, keyID: "enc-bad").privateJWK
        let secret = try #require(broken["d"]?.stringValue)
        broken["x"] = try JWEDecryptionKey.generate(.ecdhES).publicKey.members["x"]   // not this private key's point
        do {
            _ = try JWEDecryptionKey.keys(jwkSet: Self.document([signing, broken]))
            Issue.record("a key whose public members are not its private key's was accepted")
        } catch {
            #expect(error.reason == .invalidKey)
            #expect(error.message.hasPrefix("Decryption key 2 of the JWK set (kid enc-bad) cannot be used"))
            #expect(!error.message.contains(secret))
        }
        #expect(throws: JOSEError(.malformed, "The JWK set has no keys array.")) {
            try JWEDecryptionKey.keys(jwkSet: Data(#"{"kty":"EC"}"#.utf8))
        }
        #expect(throws: JOSEError(.malformed, "The JWK set is not a JSON object.")) {
            try JWEDecryptionKey.keys(jwkSet: Data("[]".utf8))
        }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("absent-\(UUID().uuidString).json")
        #expect(throws: JOSEError(.invalidKey, "The JWK set file cannot be read.")) {
            try JWEDecryptionKey.keys(jwkSetFile: missing)
        }
    }
}
