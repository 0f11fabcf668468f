#if Vapor
import Foundation
import HTTPTypes
import NIOSSL
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import OAuth2Vapor
import OAuth2Web
import OAuth2WebTestSupport
import Testing
import Vapor

/// Certificate-bound tokens (RFC 8705 §3) at a Vapor API that serves TLS itself and asks
/// clients for certificates: VaporResourceServerMiddleware hands `Request.clientCertificate`
/// to `ResourceServer`. The client certificates are made now with openssl; the server's is
/// the fault suite's (Tests/Fixtures/tls).
@Suite("Vapor: certificate-bound tokens over the app's own TLS", .timeLimit(.minutes(2)))
struct VaporMutualTLSTests {
    /// Runs an API trusting the client certificates of `trusted` (a PEM file) whose `/orders`
    /// route answers the token's client, with `resourceServer`'s checks.
    static func withAPI(_ resourceServer: ResourceServer, trusted: String, _ body: (URL) async throws -> Void) async throws {
        // A port no other test can take before the app listens on it (see ReservedPort).
        let reserved = try ReservedPort()
        defer { withExtendedLifetime(reserved) {} }
        let app = try await Application.make(.testing)
        app.http.server.configuration.tlsConfiguration = try TestTLS.mutualTLSServerConfiguration(trustedClientCertificates: trusted)
        // Vapor hands a request its client certificate over HTTP/1.1, after this callback.
        app.http.server.configuration.supportVersions = [.one]
        app.http.server.configuration.customCertificateVerifyCallbackWithMetadata = { certificates, promise in
            // Certificate-bound tokens only: the handshake proved the client holds the key.
            promise.succeed(.certificateVerified(VerificationMetadata(ValidatedCertificateChain(certificates))))
        }
        app.grouped(VaporResourceServerMiddleware(resourceServer)).get("orders") { request in
            request.accessToken?.clientID ?? ""
        }
        try await app.server.start(address: .hostname("127.0.0.1", port: reserved.port))
        do {
            try await body(URL(string: "https://127.0.0.1:\(reserved.port)")!)
        } catch {
            await app.server.shutdown()
            try await app.asyncShutdown()
            throw error
        }
        await app.server.shutdown()
        try await app.asyncShutdown()
    }

    @Test("A token bound to the connection's certificate is accepted; another certificate or none is refused")
    func boundTokens() async throws {
        let material = try await MutualTLSAPIConformance.Material()
        defer { material.remove() }
        try await Self.withAPI(MutualTLSAPIConformance.resourceServer(clientCertificates: .connection), trusted: material.trustedCertificatesPath) { base in
            let failures = try await MutualTLSAPIConformance.run(material) { token, certificate in
                try await Self.call(base.appendingPathComponent("orders"), token: token, presenting: certificate)
            }
            #expect(failures.isEmpty, "\(failures)")
        }
        try await Self.withAPI(MutualTLSAPIConformance.resourceServer(clientCertificates: nil), trusted: material.trustedCertificatesPath) { base in
            let failures = try await MutualTLSAPIConformance.runWithoutSource(material) { token, certificate in
                try await Self.call(base.appendingPathComponent("orders"), token: token, presenting: certificate)
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }

    /// GET `url` with `token`, presenting `certificate` (or none), trusting the suite's CA.
    static func call(_ url: URL, token: String, presenting certificate: MutualTLSAPIConformance.ClientCertificate?) async throws -> MutualTLSAPIConformance.Answer {
        let tls = AsyncHTTPClientTransport.TLSOptions(
            caBundlePath: TestTLS.caBundlePath, clientCertificatePath: certificate?.certificatePath, clientKeyPath: certificate?.keyPath)
        return try await AsyncHTTPClientTransport.withTransport(tls: tls) { transport in
            var request = HTTPRequest(method: .get, url: url)
            request.headerFields[.authorization] = "Bearer \(token)"
            let (response, body) = try await transport.send(request, body: nil)
            return MutualTLSAPIConformance.Answer(
                status: response.status.code, body: String(decoding: body, as: UTF8.self), challenge: response.headerFields[.wwwAuthenticate])
        }
    }
}
#endif
