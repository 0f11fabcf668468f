// libFuzzer harness for the compact JWS parser and signature checks; built without
// --sanitize=fuzzer this program does nothing.
import Foundation
import OAuth2

private let rsa = try! JWSSigningKey.generate(.rs256, keyID: "r").publicKey!
private let ec = try! JWSSigningKey.generate(.es256, keyID: "e").publicKey!
private let validator = IDTokenValidator(issuer: "https://op.example", clientID: "c", allowedAlgorithms: JWSAlgorithm.asymmetric + [.hs256], clientSecret: "s")
private let keys = JSONWebKeySet(keys: [rsa, ec])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    do {
        let jws = try JWS(compact: text)
        _ = jws.isSigned(by: rsa)
        _ = jws.isSigned(by: ec)
        _ = jws.isSigned(bySecret: "s")
        _ = try? jws.claims()
        _ = try validator.validate(jws, compact: text, keys: keys, expecting: .init(nonce: "n"))
    } catch _ as JOSEError {
    } catch {
        fatalError("unexpected error type: \(type(of: error))")
    }
    return 0
}
