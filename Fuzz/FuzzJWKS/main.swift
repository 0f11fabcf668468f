// libFuzzer harness for the JWK set decoder and the private-key loaders (a JWK or a PEM, as
// `--private-key FILE` reads them); built without --sanitize=fuzzer this program does nothing.
import Foundation
import OAuth2

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    do {
        let set = try JSONWebKeySet(data: data)
        for key in set.keys {
            _ = key.thumbprint
            for algorithm in JWSAlgorithm.asymmetric where key.canVerify(algorithm) {
                _ = key.isValidSignature(Data(repeating: 1, count: 64), for: data, algorithm: algorithm)
            }
        }
        _ = set.jsonData
    } catch _ as JOSEError {
    } catch {
        fatalError("unexpected error type: \(type(of: error))")
    }
    // Typed throws: these loaders can only throw JOSEError.
    if let key = try? JWSSigningKey(jwkData: data) { _ = key.publicKey?.thumbprint; _ = key.privateJWK }
    if let key = try? JWSSigningKey(pem: String(decoding: data, as: UTF8.self)) { _ = key.publicKey?.thumbprint }
    return 0
}
