#if MCP
import Foundation
import OAuth2Internals
import Testing

/// A certificate authority made for one test with `openssl` (no key is ever committed): a
/// root, and a server certificate for `127.0.0.1` it signed, as PEM files in a temporary
/// folder removed when the value goes away. Without `openssl` the test fails.
final class RunCertificateAuthority: @unchecked Sendable {
    private let folder: TemporaryFolder
    /// The root to trust (PEM).
    let rootPath: String
    /// The server certificate for `127.0.0.1` (PEM, IP subject alternative name).
    let serverCertificatePath: String
    /// Its private key (PEM).
    let serverKeyPath: String

    init() async throws {
        let folder = try TemporaryFolder()
        self.folder = folder
        func path(_ name: String) -> String { folder.url.appendingPathComponent(name).path }
        rootPath = path("ca.pem")
        serverCertificatePath = path("server.pem")
        serverKeyPath = path("server.key")
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try await Self.openssl(["req", "-x509"] + curve + [
            "-keyout", path("ca.key"), "-out", rootPath, "-days", "2", "-subj", "/CN=oauth2-mcp-tests run CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        try await Self.openssl(["req"] + curve + ["-keyout", serverKeyPath, "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"])
        try Data("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n".utf8)
            .write(to: URL(fileURLWithPath: path("server.ext")))
        try await Self.openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", rootPath, "-CAkey", path("ca.key"), "-CAcreateserial",
            "-out", serverCertificatePath, "-days", "2", "-extfile", path("server.ext"),
        ])
    }

    private static func openssl(_ arguments: [String]) async throws {
        let run = try await ChildProcess.run("/usr/bin/env", arguments: ["openssl"] + arguments)
        try #require(run.succeeded, "openssl \(arguments.first ?? "") failed (is openssl installed?): \(run.errorText)")
    }
}
#endif
