import Foundation
import Testing
@testable import OAuth2JOSE

@Suite struct StrictJSONTests {
    func parse(_ text: String) throws(StrictJSON.Failure) -> JSONValue {
        var text = text
        let result: Result<JSONValue, StrictJSON.Failure> = text.withUTF8 { buffer in
            do throws(StrictJSON.Failure) { return .success(try StrictJSON.parse(UnsafeRawBufferPointer(buffer))) } catch { return .failure(error) }
        }
        return try result.get()
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#" {"a": [1, -2.5e1, true, false, null, "x\u00e9\ud83d\ude00\n"], "b": {"c": 9007199254740993}} "#)
        #expect(value == .object([
            "a": .array([.integer(1), .number(-25), .bool(true), .bool(false), .null, .string("xé😀\n")]),
            "b": .object(["c": .integer(9_007_199_254_740_993)]),
        ]))
    }

    @Test func refusesDuplicateMembers() {
        #expect(throws: StrictJSON.Failure.duplicateMember("alg")) { try parse(#"{"alg":"RS256","alg":"none"}"#) }
        #expect(throws: StrictJSON.Failure.duplicateMember("aud")) { try parse(#"{"x":{"aud":1,"aud":2}}"#) }
    }

    @Test(arguments: [
        "", "{", #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "-", "1e", #"{"a" 1}"#, "tru", "nul", #""\x""#,
        #""\ud800""#, #""\udc00x""#, "\"a\u{01}\"", #"{"a":1} x"#, "NaN", "'a'", #"{a:1}"#,
    ])
    func refusesInvalidJSON(_ text: String) {
        #expect(throws: StrictJSON.Failure.self) { try parse(text) }
    }

    @Test func refusesInvalidUTF8() {
        let bytes: [UInt8] = [0x22, 0xC3, 0x28, 0x22]
        #expect(throws: StrictJSON.Failure.self) { try bytes.withUnsafeBytes { buffer throws(StrictJSON.Failure) in try StrictJSON.parse(buffer) } }
    }

    @Test func boundsNesting() {
        #expect(throws: StrictJSON.Failure.tooDeep) { try parse(String(repeating: "[", count: 40) + String(repeating: "]", count: 40)) }
        #expect(throws: Never.self) { try parse(String(repeating: "[", count: 20) + String(repeating: "]", count: 20)) }
    }
}

@Suite struct JWSTests {
    /// RFC 8037 Appendix A: an Ed25519 key, its thumbprint, and a signed example.
    static let rfc8037Key: [String: JSONValue] = ["kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"]
    static let rfc8037JWS = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"

    @Test func verifiesTheRFC8037Example() throws {
        let key = try JSONWebKey(Self.rfc8037Key)
        #expect(key.thumbprint == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
        let jws = try JWS(compact: Self.rfc8037JWS)
        #expect(jws.algorithm == .edDSA)
        #expect(String(decoding: jws.payload, as: UTF8.self) == "Example of Ed25519 signing")
        #expect(jws.isSigned(by: key))
        var tampered = Array(Self.rfc8037JWS.utf8)
        tampered[25] = tampered[25] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")  // in the payload
        #expect(try !JWS(compact: String(decoding: tampered, as: UTF8.self)).isSigned(by: key))
    }

    @Test(arguments: JWSAlgorithm.asymmetric)
    func signsAndVerifiesEveryAlgorithm(_ algorithm: JWSAlgorithm) throws {
        let key = try JWSSigningKey.generate(algorithm, keyID: "k1")
        let token = try key.sign(claims: ["sub": "alice"], header: ["typ": "JWT"])
        let jws = try JWS(compact: token)
        #expect(jws.algorithm == algorithm && jws.keyID == "k1" && jws.type == "JWT")
        let publicKey = try #require(key.publicKey)
        #expect(jws.isSigned(by: publicKey))
        // The published JWK decodes to the same key.
        let republished = try JSONWebKey(publicKey.jsonObject)
        #expect(jws.isSigned(by: republished))
        #expect(republished.thumbprint == publicKey.thumbprint)
        // Another key of the same type does not verify it.
        let other = try #require(try JWSSigningKey.generate(algorithm).publicKey)
        #expect(!jws.isSigned(by: other))
    }

    @Test func hmacVerifiesOnlyWithTheSecretAndNeverWithAPublicKey() throws {
        let token = try JWSSigningKey(secret: "shared-secret", algorithm: .hs256).sign(claims: ["a": 1])
        let jws = try JWS(compact: token)
        #expect(jws.isSigned(bySecret: "shared-secret"))
        #expect(!jws.isSigned(bySecret: "other"))
        let rsa = try #require(try JWSSigningKey.generate(.rs256).publicKey)
        #expect(!jws.isSigned(by: rsa), "an HMAC token never verifies with a public key")
    }

    @Test func keysFitOnlyTheirAlgorithmAndUse() throws {
        let ec = try #require(try JWSSigningKey.generate(.es256).publicKey)
        #expect(ec.canVerify(.es256) && !ec.canVerify(.es384) && !ec.canVerify(.rs256) && !ec.canVerify(.hs256))
        var members = ec.jsonObject
        members["use"] = "enc"
        #expect(try !JSONWebKey(members).canVerify(.es256), "use: enc never verifies")
        members["use"] = nil
        members["key_ops"] = ["encrypt"]
        #expect(try !JSONWebKey(members).canVerify(.es256))
        members["key_ops"] = nil
        members["alg"] = "ES384"
        #expect(try !JSONWebKey(members).canVerify(.es256), "a key's alg binds it")
    }

    @Test(arguments: [
        "a.b", "a.b.c.d", "a.b.c.d.e", "e30.e30.=", "e30=.e30.", "e30.e30.a+b", "bm90IGpzb24.e30.",
        "eyJ0eXAiOiJKV1QifQ.e30.",  // no alg
    ])
    func refusesMalformedCompactSerializations(_ token: String) {
        #expect(throws: JOSEError.self) { try JWS(compact: token) }
    }

    @Test func refusesCriticalExtensionsAndDuplicateHeaderMembers() throws {
        let crit = Base64URL.encode(Data(#"{"alg":"ES256","crit":["exp"],"exp":1}"#.utf8)) + ".e30.AA"
        #expect(reason { try JWS(compact: crit) } == .unsupportedCritical)
        let duplicate = Base64URL.encode(Data(#"{"alg":"ES256","alg":"none"}"#.utf8)) + ".e30.AA"
        #expect(reason { try JWS(compact: duplicate) } == .duplicateMember)
    }

    @Test func refusesOversizedTokens() {
        let big = "e30." + String(repeating: "A", count: JWS.maximumSize) + ".AA"
        #expect(reason { try JWS(compact: big) } == .malformed)
    }

    @Test func base64URLIsStrictAboutTrailingBits() {
        #expect(Base64URL.decode("QQ") == Data("A".utf8))
        #expect(Base64URL.decode("QR") == nil, "non-zero trailing bits have no canonical meaning")
    }

    @Test func refusesWeakOrBrokenKeys() throws {
        let smallRSA: [String: JSONValue] = ["kty": "RSA", "n": .string(Base64URL.encode(Data(repeating: 0xC5, count: 128))), "e": "AQAB"]
        #expect(reason { try JSONWebKey(smallRSA) } == .invalidKey)
        let offCurve: [String: JSONValue] = ["kty": "EC", "crv": "P-256", "x": .string(Base64URL.encode(Data(repeating: 1, count: 32))), "y": .string(Base64URL.encode(Data(repeating: 2, count: 32)))]
        #expect(reason { try JSONWebKey(offCurve) } == .invalidKey)
        #expect(reason { try JSONWebKey(["kty": "oct", "k": "c2VjcmV0"]) } == .invalidKey)
    }

    @Test func aKeySetSkipsWhatItCannotUse() throws {
        let ec = try #require(try JWSSigningKey.generate(.es256, keyID: "ec").publicKey)
        let json = #"{"keys":[\#(JSONValue.object(ec.jsonObject)),{"kty":"oct","k":"c2VjcmV0"},{"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"},7]}"#
        let set = try JSONWebKeySet(data: Data(json.utf8))
        #expect(set.keys.count == 1 && set.skippedCount == 3)
        #expect(set.candidates(for: .es256, keyID: "ec").count == 1)
        #expect(set.candidates(for: .es256, keyID: "other").isEmpty)
        #expect(reason { try JSONWebKeySet(data: Data(#"{"keys":{}}"#.utf8)) } == .malformed)
        #expect(reason { try JSONWebKeySet(data: Data(#"{"keys":[],"keys":[]}"#.utf8)) } == .duplicateMember)
    }

    @Test func halfHashesFollowTheAlgorithmSize() {
        // OIDC Core §3.1.3.6 example-style check: the left half of SHA-256, base64url.
        let token = "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"
        let digest = Array(SHA256Digest.of(token))
        #expect(JWSAlgorithm.rs256.halfHash(of: token) == Base64URL.encode(digest.prefix(16)))
        #expect(JWSAlgorithm.es384.halfHash(of: token)?.count == 32)
        #expect(JWSAlgorithm.edDSA.halfHash(of: token)?.count == 43)
        #expect(JWSAlgorithm.none.halfHash(of: token) == nil)
    }
}

import Crypto

enum SHA256Digest {
    static func of(_ text: String) -> SHA256.Digest { SHA256.hash(data: Data(text.utf8)) }
}

/// The reason of the JOSEError `body` throws; `nil` when it throws nothing or another error.
func reason(_ body: () throws -> Any) -> JOSEError.Reason? {
    do {
        _ = try body()
        return nil
    } catch {
        return (error as? JOSEError)?.reason
    }
}
