import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Discovery from a resource's URL alone (RFC 9728 §3, §3.3, §5.1; the MCP authorization
/// specification's order of places), against scripted resources and authorization servers.
@Suite struct ProtectedResourceDiscoveryTests {
    static let resource = URL(string: "https://mcp.example.com/mcp")!
    static let pathInserted = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

    /// A transport answering from a table of `https://host/path` → (status, body, headers);
    /// anything else is a 404.
    static func server(_ routes: [String: (Int, String, HTTPFields)]) -> StubTransport {
        StubTransport { request, _ in
            let key = "\(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "")"
            guard let (status, body, headers) = routes[key] else { return response(404, "", contentType: nil) }
            return response(status, body, headers: headers)
        }
    }

    static func metadata(resource: String = resource.absoluteString, servers: [String]? = ["https://as.example.com"]) -> String {
        var members = ["\"resource\":\"\(resource)\"", "\"scopes_supported\":[\"tools:read\",\"tools:call\"]"]
        if let servers { members.append("\"authorization_servers\":[" + servers.map { "\"\($0)\"" }.joined(separator: ",") + "]") }
        return "{" + members.joined(separator: ",") + "}"
    }

    static func asMetadata(issuer: String, openID: Bool = false) -> String {
        let jwks = openID ? ",\"jwks_uri\":\"\(issuer)/jwks\"" : ""
        return #"{"issuer":"\#(issuer)","authorization_endpoint":"\#(issuer)/authorize","token_endpoint":"\#(issuer)/token"\#(jwks)}"#
    }

    static func unauthorized(_ challenge: String) -> HTTPResponse {
        HTTPResponse(status: .unauthorized, headerFields: [.wwwAuthenticate: challenge])
    }

    func discovery(_ transport: StubTransport) -> ProtectedResourceDiscovery {
        ProtectedResourceDiscovery(environment: HTTPEnvironment(transport: transport, metadataCache: MetadataCache()))
    }

    func paths(_ transport: StubTransport) -> [String] {
        transport.sent.map { "\($0.request.authority ?? "")\($0.request.path ?? "")" }
    }

    // MARK: - The ways to the metadata

    @Test("a 401's resource_metadata leads to the metadata; its scope is what to ask for; no token goes anywhere")
    func challengePointsToTheMetadata() async throws {
        let challenge = #"Bearer resource_metadata="https://mcp.example.com/meta/mcp.json", scope="tools:call""#
        let transport = Self.server([
            Self.resource.absoluteString: (401, "", [.wwwAuthenticate: challenge]),
            "https://mcp.example.com/meta/mcp.json": (200, Self.metadata(), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://as.example.com"), [:]),
        ])
        let found = try await discovery(transport).discover(resource: Self.resource)
        #expect(found.resource == Self.resource)
        #expect(found.metadataURL.absoluteString == "https://mcp.example.com/meta/mcp.json")
        #expect(found.issuer.absoluteString == "https://as.example.com")
        #expect(found.authorizationServer.tokenEndpoint?.absoluteString == "https://as.example.com/token")
        #expect(found.challengedScopes == ["tools:call"])
        #expect(found.scopes == ["tools:call"])
        #expect(paths(transport) == [
            "mcp.example.com/mcp", "mcp.example.com/meta/mcp.json", "as.example.com/.well-known/oauth-authorization-server",
        ])
        #expect(transport.sent.allSatisfy { $0.request.headerFields[.authorization] == nil })
    }

    @Test("without a challenge, the path-inserted well-known place comes first")
    func pathInsertedWellKnown() async throws {
        let transport = Self.server([
            Self.pathInserted: (200, Self.metadata(), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://as.example.com"), [:]),
        ])
        let found = try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        #expect(found.metadataURL.absoluteString == Self.pathInserted)
        #expect(found.scopes == ["tools:read", "tools:call"], "scopes_supported without a challenge's scope")
        #expect(paths(transport).first == "mcp.example.com/.well-known/oauth-protected-resource/mcp")
    }

    @Test("a challenge without resource_metadata, and no path-inserted document: the root well-known place")
    func rootWellKnown() async throws {
        let transport = Self.server([
            "https://mcp.example.com/.well-known/oauth-protected-resource": (200, Self.metadata(), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://as.example.com"), [:]),
        ])
        let found = try await discovery(transport).discover(
            resource: Self.resource, unauthorizedResponse: Self.unauthorized(#"Bearer realm="mcp""#))
        #expect(found.metadataURL.absoluteString == "https://mcp.example.com/.well-known/oauth-protected-resource")
        #expect(Array(paths(transport).prefix(2)) == [
            "mcp.example.com/.well-known/oauth-protected-resource/mcp", "mcp.example.com/.well-known/oauth-protected-resource",
        ])
    }

    @Test("an issuer with a path is discovered with RFC 8414 path insertion first")
    func rfc8414PathInsertion() async throws {
        let issuer = "https://as.example.com/tenant/a"
        let transport = Self.server([
            Self.pathInserted: (200, Self.metadata(servers: [issuer]), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server/tenant/a": (200, Self.asMetadata(issuer: issuer), [:]),
            "https://as.example.com/tenant/a/.well-known/openid-configuration": (500, "", [:]),
        ])
        let found = try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        #expect(found.authorizationServer.issuer == issuer)
        #expect(paths(transport).last == "as.example.com/.well-known/oauth-authorization-server/tenant/a")
    }

    @Test("without an RFC 8414 document, OpenID Connect discovery: path inserted, then appended")
    func openIDConnectFallback() async throws {
        let issuer = "https://as.example.com/tenant"
        let transport = Self.server([
            Self.pathInserted: (200, Self.metadata(servers: [issuer]), [:]),
            "https://as.example.com/tenant/.well-known/openid-configuration": (200, Self.asMetadata(issuer: issuer, openID: true), [:]),
        ])
        let found = try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        #expect(found.authorizationServer.jwksURI?.absoluteString == "https://as.example.com/tenant/jwks")
        #expect(Array(paths(transport).dropFirst()) == [
            "as.example.com/.well-known/oauth-authorization-server/tenant",
            "as.example.com/.well-known/openid-configuration/tenant",
            "as.example.com/tenant/.well-known/openid-configuration",
        ])
    }

    @Test("a resource on a loopback host may be plain HTTP, its default-port spelling aside")
    func loopbackResource() async throws {
        let resource = URL(string: "http://127.0.0.1:8123/mcp")!
        let transport = Self.server([
            "http://127.0.0.1:8123/.well-known/oauth-protected-resource/mcp": (200, Self.metadata(resource: "HTTP://127.0.0.1:8123/mcp"), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://as.example.com"), [:]),
        ])
        let found = try await discovery(transport).discover(resource: resource, unauthorizedResponse: nil)
        #expect(found.issuer.absoluteString == "https://as.example.com")
    }

    @Test("the authorization server asked for is used when the metadata lists it, refused otherwise")
    func chosenAuthorizationServer() async throws {
        let transport = Self.server([
            Self.pathInserted: (200, Self.metadata(servers: ["https://as.example.com", "https://other.example.com"]), [:]),
            "https://other.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://other.example.com"), [:]),
        ])
        let found = try await discovery(transport).discover(
            resource: Self.resource, unauthorizedResponse: nil, issuer: URL(string: "https://other.example.com")!)
        #expect(found.issuer.absoluteString == "https://other.example.com")
        let error = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(
                resource: Self.resource, unauthorizedResponse: nil, issuer: URL(string: "https://third.example.com")!)
        }
        #expect(error?.code == .noAuthorizationServer)
    }

    // MARK: - Hostile resources and servers

    @Test("metadata naming another resource is an impersonation attempt: refused before any authorization server is asked")
    func resourceMismatch() async throws {
        for named in ["https://evil.example.com/mcp", "https://mcp.example.com/mcp/", "https://mcp.example.com/other", "https://mcp.example.com:8443/mcp"] {
            let transport = Self.server([
                Self.pathInserted: (200, Self.metadata(resource: named), [:]),
                "https://as.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://as.example.com"), [:]),
            ])
            let error = await #expect(throws: OAuth2Error.self) {
                try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
            }
            #expect(error?.code == .resourceMismatch, "\(named)")
            #expect(error?.message?.contains("RFC 9728 §3.3") == true)
            #expect(!paths(transport).contains { $0.hasPrefix("as.example.com") }, "\(named)")
        }
    }

    @Test("a listed authorization server whose metadata names another issuer is refused")
    func issuerMismatch() async throws {
        let transport = Self.server([
            Self.pathInserted: (200, Self.metadata(), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://evil.example.com"), [:]),
            "https://as.example.com/.well-known/openid-configuration": (200, Self.asMetadata(issuer: "https://as.example.com", openID: true), [:]),
        ])
        let error = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        }
        #expect(error?.code == .issuerMismatch)
        #expect(paths(transport).last == "as.example.com/.well-known/oauth-authorization-server", "a mismatch ends discovery")
    }

    @Test("a challenge pointing the metadata to another origin is refused, and that origin is never asked")
    func metadataOnAnotherOrigin() async throws {
        for pointed in [
            "https://evil.example.com/.well-known/oauth-protected-resource/mcp",
            "https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp",
            "https://evil.mcp.example.com/.well-known/oauth-protected-resource/mcp",
        ] {
            let transport = Self.server([pointed: (200, Self.metadata(), [:])])
            let error = await #expect(throws: OAuth2Error.self) {
                try await discovery(transport).discover(
                    resource: Self.resource, unauthorizedResponse: Self.unauthorized(#"Bearer resource_metadata="\#(pointed)""#))
            }
            #expect(error?.code == .metadataOriginMismatch, "\(pointed)")
            #expect(transport.sent.isEmpty)
        }
    }

    @Test("metadata at a plain-HTTP URL off loopback is refused, and so is such a resource")
    func insecureMetadata() async throws {
        let transport = Self.server([:])
        let pointed = "http://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        let error = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(
                resource: Self.resource, unauthorizedResponse: Self.unauthorized(#"DPoP algs="ES256", resource_metadata="\#(pointed)""#))
        }
        #expect(error?.code == .insecureEndpoint)
        let plain = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(resource: URL(string: "http://mcp.example.com/mcp")!, unauthorizedResponse: nil)
        }
        #expect(plain?.code == .insecureEndpoint)
        #expect(transport.sent.isEmpty)
    }

    @Test("metadata without authorization servers, or with an empty list, names none to use")
    func missingAuthorizationServers() async throws {
        for servers: [String]? in [nil, []] {
            let transport = Self.server([Self.pathInserted: (200, Self.metadata(servers: servers), [:])])
            let error = await #expect(throws: OAuth2Error.self) {
                try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
            }
            #expect(error?.code == .noAuthorizationServer)
            #expect(error?.message?.contains("authorization_servers") == true)
        }
    }

    @Test("a listed authorization server on plain HTTP off loopback is refused")
    func insecureAuthorizationServer() async throws {
        let transport = Self.server([Self.pathInserted: (200, Self.metadata(servers: ["http://as.example.com"]), [:])])
        let error = await #expect(throws: OAuth2Error.self) {
            try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        }
        #expect(error?.code == .insecureEndpoint)
        #expect(paths(transport) == ["mcp.example.com/.well-known/oauth-protected-resource/mcp"])
    }

    @Test("no metadata anywhere is an HTTP error naming the resource; a metadata document that is not JSON is invalid")
    func noMetadata() async throws {
        let none = await #expect(throws: OAuth2Error.self) {
            try await discovery(Self.server([:])).discover(resource: Self.resource, unauthorizedResponse: nil)
        }
        #expect(none?.code == .httpError)
        let garbage = await #expect(throws: OAuth2Error.self) {
            try await discovery(Self.server([Self.pathInserted: (200, "<html>", [:])])).discover(resource: Self.resource, unauthorizedResponse: nil)
        }
        #expect(garbage?.code == .invalidResponse)
    }

    // MARK: - The resource indicator

    @Test("a configuration bound to the resource sends `resource` on the authorization and the token request (RFC 8707)")
    func resourceIndicator() async throws {
        let transport = Self.server([
            Self.pathInserted: (200, Self.metadata(), [:]),
            "https://as.example.com/.well-known/oauth-authorization-server": (200, Self.asMetadata(issuer: "https://as.example.com"), [:]),
            "https://as.example.com/token": (200, StubTransport.tokenJSON, [:]),
        ])
        let found = try await discovery(transport).discover(resource: Self.resource, unauthorizedResponse: nil)
        let configuration = found.boundToResource(ClientConfiguration(clientID: "agent", redirectURI: Fixtures.redirect))
        #expect(configuration.scopes == ["tools:read", "tools:call"])
        let client = try OAuth2Client(
            metadata: found.authorizationServer, configuration: configuration, environment: HTTPEnvironment(transport: transport))
        let request = try client.authorizationRequest()
        let query = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "resource" }?.value == Self.resource.absoluteString)
        _ = try await client.requestToken(.authorizationCode(code: "c", redirectURI: Fixtures.redirect, codeVerifier: request.codeVerifier))
        #expect(transport.sent.last?.form["resource"] == Self.resource.absoluteString)
    }
}
