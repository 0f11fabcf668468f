#if Hummingbird
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Hummingbird
import HummingbirdTLS
import NIOCore
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Hummingbird
import OAuth2TestSupport
import OAuth2Web
import OAuth2WebTestSupport
import Testing

/// The context of an API that serves TLS itself: the channel of each request's connection,
/// where HummingbirdResourceServerMiddleware finds the client's certificate.
struct MutualTLSRequestContext: AccessTokenRequestContext, ClientCertificateRequestContext {
    var coreContext: CoreRequestContextStorage
    var accessToken: VerifiedAccessToken?
    let connectionChannel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        connectionChannel = source.channel
    }
}

/// Certificate-bound tokens (RFC 8705 §3) at a Hummingbird API that serves TLS itself
/// (HummingbirdTLS on a free port) and asks clients for certificates: the middleware hands
/// the connection's certificate to `ResourceServer`. The client certificates are made now
/// with openssl; the server's is the fault suite's (Tests/Fixtures/tls).
@Suite("Hummingbird: certificate-bound tokens over the app's own TLS", .timeLimit(.minutes(2)))
struct MutualTLSMiddlewareTests {
    /// Runs an API trusting the client certificates of `trusted` (a PEM file) whose
    /// `/orders` route answers the token's client, with `resourceServer`'s checks.
    static func withAPI(_ resourceServer: ResourceServer, trusted: String, _ body: (URL) async throws -> Void) async throws {
        let router = Router(context: MutualTLSRequestContext.self)
        router.group("orders")
            .add(middleware: HummingbirdResourceServerMiddleware(resourceServer))
            .get { _, context in context.accessToken?.clientID ?? "" }
        let (listening, continuation) = AsyncStream.makeStream(of: URL.self)
        let app = Application(
            router: router,
            server: try .tls(tlsConfiguration: TestTLS.mutualTLSServerConfiguration(trustedClientCertificates: trusted)),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(URL(string: "https://127.0.0.1:\(channel.localAddress?.port ?? 0)")!) },
            logger: WebAppFixture.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { continuation.finish() }
                try await app.run()
            }
            defer { group.cancelAll() }
            var urls = listening.makeAsyncIterator()
            guard let base = await urls.next() else {
                try await group.next()
                Issue.record("The server stopped before it listened")
                return
            }
            try await body(base)
        }
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
