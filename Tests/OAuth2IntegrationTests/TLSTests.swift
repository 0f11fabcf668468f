import Foundation
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

extension Integration {
    /// Glewlwyd behind the HTTPS front that `scripts/test-servers/tls.sh` starts, with a
    /// certificate from a test CA that no system trusts.
    @Suite struct HTTPSWithAPrivateCA {
        static let base = Server.env("OAUTH2_TEST_TLS_URL", "https://127.0.0.1:4443")
        static let caFile = Server.env("OAUTH2_TEST_CA_FILE", ".build/test-servers/tls/ca.pem")

        static var metadata: ServerMetadata {
            ServerMetadata(
                issuer: Server.glewlwyd.issuer,
                tokenEndpoint: URL(string: base + "/api/oidc/token")!,
                introspectionEndpoint: URL(string: base + "/api/oidc/introspect")!)
        }

        func clientCredentials(through transport: any HTTPTransport) async throws -> TokenSet {
            let client = try OAuth2Client(metadata: Self.metadata, configuration: Server.glewlwyd.clientCredentials(), environment: HTTPEnvironment(transport: transport))
            return try await client.clientCredentials()
        }

        @Test func trustsTheCAFromTheBundleOption() async throws {
            #expect(FileManager.default.fileExists(atPath: Self.caFile), "the test CA is missing: did tls.sh run?")
            let tokens = try await AsyncHTTPClientTransport.withTransport(tls: .init(caBundlePath: Self.caFile)) { transport in
                try await clientCredentials(through: transport)
            }
            #expect(!tokens.accessToken.isEmpty)
            IntegrationLog.record("glewlwyd-tls", variant: "caBundlePath")
        }

        @Test func trustsTheCAFromSSLCertFile() async throws {
            let transport = AsyncHTTPClientTransport(environment: ["SSL_CERT_FILE": Self.caFile])
            let result = await Result(catching: { try await clientCredentials(through: transport) })
            try await transport.shutdown()
            #expect(!(try result.get().accessToken.isEmpty))
            IntegrationLog.record("glewlwyd-tls", variant: "SSL_CERT_FILE")
        }

        @Test(arguments: TransportKind.allCases)
        func refusesTheSameServerWithoutTheCA(transport kind: TransportKind) async throws {
            let transport: any HTTPTransport = kind == .urlSession
                ? URLSessionTransport() : AsyncHTTPClientTransport(options: TransportOptions(connectTimeout: .seconds(2)), environment: [:])
            let result = await Result(catching: { try await clientCredentials(through: transport) })
            if let ahc = transport as? AsyncHTTPClientTransport { try await ahc.shutdown() }
            do {
                _ = try result.get()
                Issue.record("a certificate from an unknown CA was trusted")
            } catch let error as OAuth2Error {
                #expect(error.source == .transport)
                if kind == .asyncHTTPClient { #expect(error.code == .tls) }
            }
            IntegrationLog.record("glewlwyd-tls", variant: "untrusted/\(kind.rawValue)")
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
