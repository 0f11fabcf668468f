import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct ServerMetadataTests {
    @Test func decodesKnownAndKeepsUnknownFields() throws {
        let json = #"{"issuer":"https://as.example.com","token_endpoint":"https://as.example.com/t","grant_types_supported":["a"],"require_pushed_authorization_requests":true,"x_vendor":{"k":1}}"#
        let metadata = try JSONDecoder().decode(ServerMetadata.self, from: Data(json.utf8))
        #expect(metadata.tokenEndpoint?.absoluteString == "https://as.example.com/t")
        #expect(metadata.grantTypesSupported == ["a"])
        #expect(metadata.requirePushedAuthorizationRequests == true)
        #expect(metadata.additionalFields["x_vendor"] != nil)
        let again = try JSONDecoder().decode(ServerMetadata.self, from: JSONEncoder().encode(metadata))
        #expect(again == metadata)
    }

    @Test(arguments: [
        #"{"token_endpoint": 5}"#, #"{"token_endpoint": "not a url"}"#, #"{"scopes_supported": "read"}"#,
        #"{"scopes_supported": [1]}"#, #"{"require_pushed_authorization_requests": "yes"}"#, #"{"issuer": []}"#,
    ])
    func refusesWrongTypes(_ json: String) {
        #expect(throws: (any Error).self) { try JSONDecoder().decode(ServerMetadata.self, from: Data(json.utf8)) }
    }

    @Test func buildsWellKnownURLs() {
        let issuer = URL(string: "https://as.example.com/tenant/a")!
        #expect(Discovery.openIDConfigurationURL(for: issuer).absoluteString == "https://as.example.com/tenant/a/.well-known/openid-configuration")
        #expect(Discovery.authorizationServerMetadataURL(for: issuer).absoluteString == "https://as.example.com/.well-known/oauth-authorization-server/tenant/a")
        #expect(Discovery.authorizationServerMetadataURL(for: URL(string: "https://as.example.com")!).absoluteString == "https://as.example.com/.well-known/oauth-authorization-server")
    }
}

@Suite struct DiscoveryTests {
    static let issuer = URL(string: "https://as.example.com/o")!

    /// A metadata document; every one names a jwks_uri unless `members` sets it to "".
    func document(_ members: [String: String]) -> String {
        var members = members
        if members["jwks_uri"] == nil { members["jwks_uri"] = "https://as.example.com/o/jwks" }
        members = members.filter { !$0.value.isEmpty }
        let body = members.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",")
        return "{\(body)}"
    }

    func discover(_ transport: StubTransport) async throws -> OAuth2Client {
        try await OAuth2Client(server: .issuer(Self.issuer), configuration: Fixtures.configuration(), environment: HTTPEnvironment(transport: transport, metadataCache: MetadataCache()))
    }

    var complete: [String: String] {
        ["issuer": Self.issuer.absoluteString, "token_endpoint": "https://as.example.com/o/token", "revocation_endpoint": "https://as.example.com/o/revoke",
         "introspection_endpoint": "https://as.example.com/o/introspect", "registration_endpoint": "https://as.example.com/o/register"]
    }

    @Test func aCompleteOpenIDDocumentIsEnough() async throws {
        let doc = document(complete)
        let transport = StubTransport { request, _ in
            request.path == "/o/.well-known/openid-configuration" ? response(200, doc) : response(404, "", contentType: nil)
        }
        let client = try await discover(transport)
        #expect(client.metadata.revocationEndpoint != nil)
        #expect(transport.sent.count == 1)
    }

    @Test func anOpenIDDocumentWithoutJWKSURIIsRefused() async throws {
        var members = complete
        members["jwks_uri"] = ""
        let doc = document(members)
        let transport = StubTransport { request, _ in
            request.path == "/o/.well-known/openid-configuration" ? response(200, doc) : response(404, "", contentType: nil)
        }
        let error = await #expect(throws: OAuth2Error.self) { try await discover(transport) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message?.contains("jwks_uri") == true)
    }

    @Test func anHTTPJWKSURIIsRefused() async throws {
        var members = complete
        members["jwks_uri"] = "http://as.example.com/o/jwks"
        let doc = document(members)
        let transport = StubTransport { request, _ in
            request.path == "/o/.well-known/openid-configuration" ? response(200, doc) : response(404, "", contentType: nil)
        }
        let error = await #expect(throws: OAuth2Error.self) { try await discover(transport) }
        #expect(error?.code == .insecureEndpoint)
    }

    @Test func fillsMissingEndpointsFromRFC8414() async throws {
        let openID = document(["issuer": Self.issuer.absoluteString, "token_endpoint": "https://as.example.com/o/token", "userinfo_endpoint": "https://as.example.com/o/userinfo"])
        let oauth = document(["issuer": Self.issuer.absoluteString, "token_endpoint": "https://as.example.com/o/OTHER", "revocation_endpoint": "https://as.example.com/o/revoke",
                              "introspection_endpoint": "https://as.example.com/o/introspect"])
        let transport = StubTransport { request, _ in
            switch request.path {
            case "/o/.well-known/openid-configuration": return response(200, openID)
            case "/.well-known/oauth-authorization-server/o": return response(200, oauth)
            default: return response(404, "", contentType: nil)
            }
        }
        let metadata = try await discover(transport).metadata
        #expect(metadata.tokenEndpoint?.absoluteString == "https://as.example.com/o/token", "the OpenID document wins")
        #expect(metadata.revocationEndpoint?.absoluteString == "https://as.example.com/o/revoke")
        #expect(metadata.introspectionEndpoint != nil)
        #expect(metadata.userInfoEndpoint != nil)
    }

    @Test func fallsBackToRFC8414WhenThereIsNoOpenIDDocument() async throws {
        let oauth = document(complete)
        let transport = StubTransport { request, _ in
            request.path == "/.well-known/oauth-authorization-server/o" ? response(200, oauth) : response(404, "<html>", contentType: "text/html")
        }
        #expect(try await discover(transport).metadata.tokenEndpoint != nil)
    }

    @Test func refusesAMismatchedIssuerInEitherDocument() async throws {
        var wrong = complete
        wrong["issuer"] = "https://as.example.com/o/"  // a trailing slash is another issuer
        let bad = document(wrong)
        let partial = document(["issuer": Self.issuer.absoluteString, "token_endpoint": "https://as.example.com/o/token"])
        for (first, second) in [(bad, bad), (partial, bad)] {
            let transport = StubTransport { request, _ in
                (request.path ?? "").hasPrefix("/o/.well-known") ? response(200, first) : response(200, second)
            }
            do {
                _ = try await discover(transport)
                Issue.record("a mismatched issuer was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .issuerMismatch)
            }
        }
    }

    @Test func failsClearlyWhenNothingIsThere() async throws {
        let transport = StubTransport { _, _ in response(404, "", contentType: nil) }
        do {
            _ = try await discover(transport)
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.code == .httpError)
            #expect(error.statusCode == 404)
        }
    }

    @Test func serverFailuresAreTransientNotMissing() async throws {
        let transport = StubTransport { _, _ in response(503, "", contentType: nil) }
        do {
            _ = try await discover(transport)
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.isTransient)
        }
    }

    @Test func refusesAnInsecureIssuer() async throws {
        let transport = StubTransport(json: "{}")
        await #expect(throws: OAuth2Error.self) {
            try await OAuth2Client(server: .issuer(URL(string: "http://as.example.com")!), configuration: Fixtures.configuration(), environment: HTTPEnvironment(transport: transport))
        }
        #expect(transport.sent.isEmpty)
    }

    @Test func cachesAndSharesOneFetch() async throws {
        let doc = document(complete)
        let transport = StubTransport { _, _ in
            try await Task.sleep(for: .milliseconds(50))
            return response(200, doc)
        }
        let cache = MetadataCache()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    _ = try await OAuth2Client(server: .issuer(Self.issuer), configuration: Fixtures.configuration(), environment: HTTPEnvironment(transport: transport, metadataCache: cache))
                }
            }
            try await group.waitForAll()
        }
        _ = try await OAuth2Client(server: .issuer(Self.issuer), configuration: Fixtures.configuration(), environment: HTTPEnvironment(transport: transport, metadataCache: cache))
        #expect(transport.sent.count == 1)
    }
}
