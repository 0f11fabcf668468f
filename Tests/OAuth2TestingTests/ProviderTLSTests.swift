import Foundation
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import OAuth2Testing
import Testing

/// The provider on HTTPS (``TestProvider/TLS``): for clients that take only HTTPS
/// authorization servers, even on loopback. With the fault suite's certificate for
/// 127.0.0.1 and its CA (Tests/Fixtures/tls).
@Suite struct ProviderTLSTests {
    static func tls(_ certificate: TestTLS.Certificate = .valid) throws -> TestProvider.TLS {
        TestProvider.TLS(
            certificateChainPEM: try String(contentsOf: TestTLS.directory.appendingPathComponent("\(certificate.rawValue).pem"), encoding: .utf8),
            privateKeyPEM: try String(contentsOf: TestTLS.directory.appendingPathComponent("server.key"), encoding: .utf8))
    }

    @Test("with tls the issuer and every endpoint are https, and a client trusting the CA signs in with client credentials")
    func servesHTTPS() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.tls = try Self.tls()
        try await TestProvider.withProvider(configuration: configuration) { provider in
            #expect(provider.issuer.absoluteString == "https://127.0.0.1:\(provider.port)")
            try await AsyncHTTPClientTransport.withTransport(tls: .init(caBundlePath: TestTLS.caBundlePath)) { transport in
                let client = try await OAuth2Client(
                    server: .issuer(provider.issuer),
                    configuration: ClientConfiguration(
                        clientID: TestProvider.Demo.confidentialClientID, clientSecret: TestProvider.Demo.confidentialClientSecret, scopes: ["api"]),
                    environment: HTTPEnvironment(transport: transport, metadataCache: MetadataCache()))
                #expect(client.metadata.issuer == provider.issuer.absoluteString)
                #expect(client.metadata.tokenEndpoint?.scheme == "https")
                #expect(client.metadata.authorizationEndpoint?.scheme == "https")
                let tokens = try await client.clientCredentials()
                #expect(!tokens.accessToken.isEmpty)
            }
            #expect(provider.requestCount(.token) == 1)
        }
    }

    @Test("a client that does not trust the certificate's CA is refused in the handshake")
    func untrustedCertificate() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.tls = try Self.tls(.unknownCA)
        try await TestProvider.withProvider(configuration: configuration) { provider in
            try await AsyncHTTPClientTransport.withTransport(tls: .init(caBundlePath: TestTLS.caBundlePath)) { transport in
                _ = await #expect(throws: (any Error).self) {
                    _ = try await OAuth2Client(
                        server: .issuer(provider.issuer), configuration: ClientConfiguration(clientID: "x"),
                        environment: HTTPEnvironment(transport: transport, metadataCache: MetadataCache()))
                }
            }
            #expect(provider.requestCount(.discovery) == 0)
        }
    }

    @Test("an unreadable certificate or key refuses to start, and the message holds no key")
    func badMaterial() async throws {
        let good = try Self.tls()
        let secretLooking = "-----BEGIN PRIVATE KEY-----\nnot-a-key-but-secret-looking\n-----END PRIVATE KEY-----\n"
        for tls in [
            TestProvider.TLS(certificateChainPEM: "not a certificate", privateKeyPEM: good.privateKeyPEM),
            TestProvider.TLS(certificateChainPEM: good.certificateChainPEM, privateKeyPEM: secretLooking),
        ] {
            var configuration = TestProvider.Configuration.demo
            configuration.tls = tls
            let error = await Fixture.providerError { _ = try await TestProvider.start(configuration: configuration) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error.map { !$0.description.contains("secret-looking") && !$0.description.contains("BEGIN") } == true)
        }
        #expect(!String(describing: good).contains("PRIVATE KEY"))
    }
}
