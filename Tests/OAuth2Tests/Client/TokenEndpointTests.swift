import Foundation
import HTTPTypes
import Logging
import Testing
@testable import OAuth2

@Suite struct TokenEndpointTests {
    @Test func everyGrantSendsItsParameters() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        let client = try Fixtures.client(transport)
        _ = try await client.password(username: "alice", password: "pw", scopes: ["read"])
        _ = try await client.refresh(TokenSet(accessToken: "old", refreshToken: "rt-0"))
        _ = try await client.requestToken(.extension(type: "urn:ietf:params:oauth:grant-type:jwt-bearer", parameters: ["assertion": "a.b.c"]))
        let forms = transport.sent.map(\.form)
        #expect(forms[0]["grant_type"] == "password")
        #expect(forms[0]["username"] == "alice")
        #expect(forms[0]["password"] == "pw")
        #expect(forms[0]["scope"] == "read")
        #expect(forms[1]["grant_type"] == "refresh_token")
        #expect(forms[1]["refresh_token"] == "rt-0")
        #expect(forms[1]["scope"] == nil)
        #expect(forms[2]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(forms[2]["assertion"] == "a.b.c")
    }

    @Test func clientCredentialsAndPasswordHaveOneDefault() async throws {
        // The configured scopes ("openid read"), whether the grant is sent through its
        // method or through requestToken; explicit scopes replace them, [] sends none.
        let transport = StubTransport(json: #"{"access_token":"at-1","token_type":"Bearer"}"#)
        let client = try Fixtures.client(transport)
        let viaMethod = try await client.clientCredentials()
        let viaGrant = try await client.requestToken(.clientCredentials())
        _ = try await client.requestToken(.clientCredentials(scopes: ["write"]))
        _ = try await client.requestToken(.clientCredentials(scopes: []))
        _ = try await client.password(username: "alice", password: "pw")
        _ = try await client.requestToken(.password(username: "alice", password: "pw"))
        let scopes = transport.sent.map { $0.form["scope"] }
        #expect(scopes == ["openid read", "openid read", "write", nil, "openid read", "openid read"])
        #expect(viaMethod.scopes == ["openid", "read"], "the scopes asked for, when the answer omits scope")
        #expect(viaGrant.scopes == viaMethod.scopes)
    }

    @Test func extrasAndHeadersPerRequestKind() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        var configuration = Fixtures.configuration()
        configuration.additionalParameters[.token] = ["audience": "https://api.example.com", "grant_type": "evil"]
        configuration.additionalParameters[.revocation] = ["only": "revocation"]
        configuration.additionalHeaders[.token] = [HTTPField.Name("X-Tenant")!: "acme"]
        _ = try await Fixtures.client(transport, configuration: configuration).clientCredentials()
        let sent = try #require(transport.sent.first)
        #expect(sent.form["audience"] == "https://api.example.com")
        #expect(sent.form["grant_type"] == "client_credentials")
        #expect(sent.form["only"] == nil)
        #expect(sent.request.headerFields[HTTPField.Name("X-Tenant")!] == "acme")
        #expect(sent.request.headerFields[.userAgent] == HTTPEnvironment.defaultUserAgent)
        #expect(sent.request.headerFields[.accept] == "application/json")
    }

    @Test func refreshWithoutARefreshTokenFailsLocally() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
        await #expect(throws: OAuth2Error.self) { try await Fixtures.client(transport).refresh(TokenSet(accessToken: "a")) }
        #expect(transport.sent.isEmpty)
    }

    @Test func missingEndpointIsTyped() async throws {
        let client = try Fixtures.client(StubTransport(json: "{}"), metadata: ServerMetadata(issuer: URL(string: Fixtures.issuer)!))
        do {
            _ = try await client.clientCredentials()
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.code == .missingEndpoint)
        }
    }

    @Test func transportFailuresAreTransient() async throws {
        struct Reset: Error {}
        let client = try Fixtures.client(StubTransport { _, _ in throw Reset() })
        do {
            _ = try await client.clientCredentials()
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.code == .network)
            #expect(error.source == .transport)
            #expect(error.isTransient)
        }
    }
}
