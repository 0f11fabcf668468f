// libFuzzer harness for the compact JOSE parsers: JWS (and its signature checks) and JWE (and
// its decryption with RSA and EC keys, every algorithm allowed); built without
// --sanitize=fuzzer this program does nothing.
import Foundation
import OAuth2

// Static members, initialized on first use (libFuzzer provides `main`: top-level code never runs).
private enum Fixture {
    static let rsa = try! JWSSigningKey.generate(.rs256, keyID: "r").publicKey!
    static let ec = try! JWSSigningKey.generate(.es256, keyID: "e").publicKey!
    static let validator = IDTokenValidator(issuer: "https://op.example", clientID: "c", allowedAlgorithms: JWSAlgorithm.asymmetric + [.hs256], clientSecret: "s")
    static let keys = JSONWebKeySet(keys: [rsa, ec])
    static let decryptionKeys = [
        try! JWEDecryptionKey.generate(.rsaOAEP256, keyID: "r"), try! JWEDecryptionKey.generate(.ecdhES, keyID: "e"),
        try! JWEDecryptionKey.generate(.ecdhESA128KW, curve: "P-384"),
    ]
    static let everything = JWEPolicy(keyAlgorithms: JWEKeyAlgorithm.supported, contentEncryptions: JWEContentEncryption.supported)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    do {
        if JWE.isCompact(text) {
            let jwe = try JWE(compact: text)
            precondition(jwe.header["alg"]?.stringValue == jwe.keyAlgorithm.rawValue && jwe.header["zip"] == nil, "the JWE header differs")
            _ = try jwe.decrypt(with: Fixture.decryptionKeys, policy: Fixture.everything)
            return 0
        }
        let jws = try JWS(compact: text)
        // The header was read in one pass; the lazily decoded dictionary must agree with it.
        let header = jws.header
        precondition(header["alg"]?.stringValue == jws.algorithm.rawValue && header["kid"]?.stringValue == jws.keyID
            && header["typ"]?.stringValue == jws.type && header["crit"] == nil, "the one-pass header differs")
        _ = jws.isSigned(by: Fixture.rsa)
        _ = jws.isSigned(by: Fixture.ec)
        _ = jws.isSigned(bySecret: "s")
        _ = try? jws.claims()
        _ = try Fixture.validator.validate(jws, compact: text, keys: Fixture.keys, expecting: .init(nonce: "n"))
    } catch _ as JOSEError {
    } catch {
        fatalError("unexpected error type: \(type(of: error))")
    }
    return 0
}
