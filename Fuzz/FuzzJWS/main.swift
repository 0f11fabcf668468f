// libFuzzer harness for the compact JWS parser and signature checks; built without
// --sanitize=fuzzer this program does nothing.
import Foundation
import OAuth2

// Static members, initialized on first use (libFuzzer provides `main`: top-level code never runs).
private enum Fixture {
    static let rsa = try! JWSSigningKey.generate(.rs256, keyID: "r").publicKey!
    static let ec = try! JWSSigningKey.generate(.es256, keyID: "e").publicKey!
    static let validator = IDTokenValidator(issuer: "https://op.example", clientID: "c", allowedAlgorithms: JWSAlgorithm.asymmetric + [.hs256], clientSecret: "s")
    static let keys = JSONWebKeySet(keys: [rsa, ec])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    do {
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
