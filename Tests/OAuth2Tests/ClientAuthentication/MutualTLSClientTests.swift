import Foundation
import HTTPTypes
import OAuth2JOSE
import Testing
@testable import OAuth2

/// Mutual TLS on the client's side (RFC 8705): the two authentication methods' bodies, and
/// the endpoint aliases used when the client presents a certificate (§5).
@Suite struct MutualTLSClientTests {
    static let metadata = try! ServerMetadata(fields: [
        "issuer": "https://as.example.com",
        "token_endpoint": "https://as.example.com/token",
        "revocation_endpoint": "https://as.example.com/revoke",
        "introspection_endpoint": "https://as.example.com/introspect",
        "mtls_endpoint_aliases": [
            "token_endpoint": "https://mtls.as.example.com/token",
            "revocation_endpoint": "https://mtls.as.example.com/revoke",
        ],
    ])

    func configuration(_ method: ClientAuthenticationMethod?, secret: String? = nil) -> ClientConfiguration {
        ClientConfiguration(clientID: "client-1", clientSecret: secret, authenticationMethod: method, scopes: ["read"])
    }

    @Test(arguments: [ClientAuthenticationMethod.tlsClientAuth, .selfSignedTLSClientAuth])
    func theMTLSMethodsSendTheClientIDAndNoSecret(method: ClientAuthenticationMethod) async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        // A secret configured by mistake is not sent: the certificate is the credential.
        _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: configuration(method, secret: "s3cr3t"))
            .clientCredentials()
        let sent = try #require(transport.sent.first)
        #expect(sent.request.headerFields[.authorization] == nil)
        #expect(sent.form["client_id"] == "client-1")
        #expect(sent.form["client_secret"] == nil)
        #expect(sent.form["client_assertion"] == nil)
        #expect(sent.form["grant_type"] == "client_credentials")
        #expect(method.isMutualTLS)
    }

    @Test func theMTLSMethodsUseTheAliases() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        let client = try Fixtures.client(transport, metadata: Self.metadata, configuration: configuration(.tlsClientAuth))
        _ = try await client.clientCredentials()
        try? await client.revoke("token")
        #expect(transport.sent.map { $0.request.url?.absoluteString } == ["https://mtls.as.example.com/token", "https://mtls.as.example.com/revoke"])
    }

    @Test func certificateBoundTokensUseTheAliasesWithAnyMethod() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        var configuration = configuration(.clientSecretBasic, secret: "s3cr3t")
        configuration.mutualTLS = true
        _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: configuration).clientCredentials()
        let sent = try #require(transport.sent.first)
        #expect(sent.request.url?.absoluteString == "https://mtls.as.example.com/token")
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true)
        #expect(configuration.description.contains("mutualTLS: true"))
    }

    @Test func withoutMutualTLSTheAliasesAreNotUsed() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: configuration(.clientSecretPost, secret: "s3cr3t"))
            .clientCredentials()
        #expect(transport.sent.first?.request.url?.absoluteString == "https://as.example.com/token")
    }

    #if URLSession
    /// URLSessionTransport presents no client certificate (FoundationNetworking on Linux has
    /// none): a client that needs one is refused when it is made, before any request, with a
    /// message that names the transport that can.
    @Test func aClientUsingMutualTLSOverURLSessionIsRefusedWhenMade() async throws {
        var bound = configuration(.clientSecretBasic, secret: "s3cr3t")
        bound.mutualTLS = true
        for configuration in [configuration(.tlsClientAuth), configuration(.selfSignedTLSClientAuth), bound] {
            for make in [
                { try OAuth2Client(metadata: Self.metadata, configuration: configuration, environment: HTTPEnvironment(transport: URLSessionTransport())) },
                // Discovery is not attempted: the issuer's host does not exist.
                {
                    try await OAuth2Client(
                        server: .issuer(URL(string: "https://as.invalid")!), configuration: configuration,
                        environment: HTTPEnvironment(transport: URLSessionTransport.shared))
                },
            ] as [@Sendable () async throws -> OAuth2Client] {
                do {
                    _ = try await make()
                    Issue.record("a client using mutual TLS over URLSessionTransport was made")
                } catch let error as OAuth2Error {
                    #expect(error.code == .invalidConfiguration)
                    #expect(error.message?.contains("AsyncHTTPClientTransport") == true)
                    #expect(error.message?.contains("s3cr3t") == false)
                }
            }
        }
        // Without mutual TLS the same transport is fine.
        _ = try OAuth2Client(
            metadata: Self.metadata, configuration: configuration(.clientSecretBasic, secret: "s3cr3t"),
            environment: HTTPEnvironment(transport: URLSessionTransport.shared))
    }
    #endif

    @Test func anEndpointWithoutAnAliasIsUsedAsItIs() {
        #expect(Self.metadata.endpoint("introspection_endpoint", mutualTLS: true)?.absoluteString == "https://as.example.com/introspect")
        #expect(Self.metadata.endpoint("token_endpoint", mutualTLS: true)?.absoluteString == "https://mtls.as.example.com/token")
        #expect(Self.metadata.endpoint("token_endpoint", mutualTLS: false)?.absoluteString == "https://as.example.com/token")
        // Metadata without aliases: the endpoints themselves.
        #expect(Fixtures.metadata.endpoint("token_endpoint", mutualTLS: true) == Fixtures.metadata.tokenEndpoint)
    }
}
