import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// How an MCP client identifies itself to an authorization server it found through a
/// resource: a held client id, a Client ID Metadata Document, dynamic registration.
@Suite struct ClientIdentityTests {
    static let resource = URL(string: "https://mcp.example.com/mcp")!
    static let document = URL(string: "https://agent.example.org/oauth/client.json")!

    func found(_ members: [String: JSONValue], resource: URL = resource) throws -> DiscoveredResource {
        var fields: [String: JSONValue] = [
            "issuer": .string("https://as.example.com"), "authorization_endpoint": .string("https://as.example.com/authorize"),
            "token_endpoint": .string("https://as.example.com/token"),
        ]
        fields.merge(members) { _, new in new }
        return DiscoveredResource(
            resource: resource,
            metadata: try ProtectedResourceMetadata(fields: ["resource": .string(resource.absoluteString), "scopes_supported": .array([.string("tools:read")])]),
            metadataURL: try ProtectedResourceMetadata.metadataURL(for: resource), issuer: URL(string: "https://as.example.com")!,
            authorizationServer: try ServerMetadata(fields: fields), challengedScopes: nil)
    }

    static let both: [String: JSONValue] = [
        "client_id_metadata_document_supported": .bool(true), "registration_endpoint": .string("https://as.example.com/register"),
    ]

    @Test("a client id held for the server comes first, then a metadata document, then dynamic registration")
    func theOrder() throws {
        let everything = try found(Self.both)
        #expect(try everything.clientIdentity(configuredClientID: "held", metadataDocument: Self.document) == .configured("held"))
        #expect(try everything.clientIdentity(metadataDocument: Self.document) == .metadataDocument(Self.document))
        #expect(try everything.clientIdentity() == .dynamicRegistration, "no document published: registration")
        let noDocuments = try found(["registration_endpoint": .string("https://as.example.com/register")])
        #expect(try noDocuments.clientIdentity(metadataDocument: Self.document) == .dynamicRegistration)
        let declined = try found(["client_id_metadata_document_supported": .bool(false), "registration_endpoint": .string("https://as.example.com/register")])
        #expect(try declined.clientIdentity(metadataDocument: Self.document) == .dynamicRegistration)
    }

    @Test("a server with no way for an unknown client is a configuration error naming what to do")
    func noWay() throws {
        let error = #expect(throws: OAuth2Error.self) { try found([:]).clientIdentity(metadataDocument: Self.document) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message?.contains("configure a client id") == true)
    }

    @Test("a metadata document URL is HTTPS (loopback aside) with a path and no query")
    func documentURLRules() throws {
        let server = try found(Self.both)
        let plain = #expect(throws: OAuth2Error.self) {
            try server.clientIdentity(metadataDocument: URL(string: "http://agent.example.org/client.json")!)
        }
        #expect(plain?.code == .insecureEndpoint)
        for text in ["https://agent.example.org", "https://agent.example.org/", "https://agent.example.org/c.json?v=1"] {
            let error = #expect(throws: OAuth2Error.self) { try server.clientIdentity(metadataDocument: URL(string: text)!) }
            #expect(error?.code == .invalidConfiguration, "\(text)")
        }
        let loopback = URL(string: "http://127.0.0.1:8080/client.json")!
        #expect(try server.clientIdentity(metadataDocument: loopback) == .metadataDocument(loopback))
    }

    @Test("registration metadata: a public PKCE client, native for a loopback or private-scheme redirect, web otherwise")
    func registrationMetadata() throws {
        let server = try found(Self.both)
        for (redirect, type) in [
            ("http://127.0.0.1:53682/callback", "native"), ("http://[::1]:8080/cb", "native"), ("com.example.agent:/cb", "native"),
            ("https://agent.example.org/callback", "web"),
        ] {
            let members = server.registrationMetadata(redirectURI: URL(string: redirect)!, clientName: "agent").members
            #expect(members["application_type"] == .string(type), "\(redirect)")
            #expect(members["token_endpoint_auth_method"] == .string("none"))
            #expect(members["scope"] == .string("tools:read"))
            #expect(members["redirect_uris"] == .array([.string(redirect)]))
        }
    }

    @Test("sessions of two resources of one server and client are kept apart")
    func perResourceAccounts() throws {
        let one = try found(Self.both)
        let other = try found(Self.both, resource: URL(string: "https://mcp.example.com/other")!)
        #expect(one.account != other.account)
        let client = try Fixtures.client(StubTransport(json: "{}"))
        #expect(TokenSession.key(for: client, account: one.account) != TokenSession.key(for: client, account: other.account))
    }

    @Test("dynamic registration of a native client, then a sign-in bound to the resource")
    func registersAndBinds() async throws {
        let transport = StubTransport { request, _ in
            request.path == "/register"
                ? response(201, #"{"client_id":"dyn-1","redirect_uris":["http://127.0.0.1:53682/callback"],"token_endpoint_auth_method":"none"}"#)
                : response(404, "", contentType: nil)
        }
        let server = try found(Self.both)
        let redirect = URL(string: "http://127.0.0.1:53682/callback")!
        let registrar = try await ClientRegistrar(server: server.server, environment: HTTPEnvironment(transport: transport))
        let registration = try await registrar.register(server.registrationMetadata(redirectURI: redirect, clientName: "agent"))
        let sent = try #require(transport.sent.first?.body.flatMap { JSONValue.parseObject($0) })
        #expect(sent["application_type"] == .string("native"))
        let client = try registrar.client(
            for: registration, base: server.boundToResource(ClientConfiguration(clientID: "", redirectURI: redirect)))
        let query = URLComponents(url: try client.authorizationRequest().url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "client_id" }?.value == "dyn-1")
        #expect(query.first { $0.name == "resource" }?.value == Self.resource.absoluteString)
        #expect(query.first { $0.name == "scope" }?.value == "tools:read")
    }
}
