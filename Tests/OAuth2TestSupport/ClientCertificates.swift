import Foundation
import OAuth2Internals

/// A self-signed client certificate and its key, made now with `openssl` (never committed):
/// `<name>.pem` and `<name>.key` in `directory`.
public func makeClientCertificate(named name: String, in directory: URL) async throws -> (certificatePath: String, keyPath: String) {
    let certificate = directory.appendingPathComponent("\(name).pem").path
    let key = directory.appendingPathComponent("\(name).key").path
    let run = try await ChildProcess.run("/usr/bin/env", arguments: [
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", certificate,
        "-days", "2", "-subj", "/CN=\(name)", "-addext", "extendedKeyUsage=clientAuth",
    ])
    guard run.succeeded else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl could not make a client certificate"])
    }
    return (certificate, key)
}
