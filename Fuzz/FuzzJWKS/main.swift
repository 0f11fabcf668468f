// libFuzzer harness for the JWK set decoder; built without --sanitize=fuzzer this program
// does nothing.
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
    return 0
}
