import Foundation
import HTTPTypes
import Logging
import Testing
@testable import OAuth2

private let tokenJSON = #"{"access_token":"at-1","token_type":"Bearer","expires_in":60,"refresh_token":"rt-1"}"#

@Suite struct ClientAuthenticationTests {
    @Test func basicEncodesIdAndSecretBeforeBase64() throws {
        // RFC 6749 §2.3.1: both are form-urlencoded first.
        let configuration = ClientConfiguration(clientID: "my client:1", clientSecret: "p@ss wörd/+")
        let header = try ClientAuthentication.basicAuthorization(configuration)
        let decoded = String(decoding: Data(base64Encoded: String(header.dropFirst("Basic ".count)))!, as: UTF8.self)
        #expect(decoded == "my+client%3A1:p%40ss+w%C3%B6rd%2F%2B")
    }

    @Test func basicSendsNoSecretInTheBody() async throws {
        let transport = StubTransport(json: tokenJSON)
        _ = try await Fixtures.client(transport, configuration: Fixtures.configuration(method: .clientSecretBasic)).clientCredentials()
        let sent = try #require(transport.sent.first)
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true)
        #expect(sent.form["client_secret"] == nil)
        #expect(sent.form["client_id"] == nil)
        #expect(sent.form["grant_type"] == "client_credentials")
        #expect(sent.form["scope"] == "openid read")
        #expect(sent.request.headerFields[.contentType] == "application/x-www-form-urlencoded")
    }

    @Test func postPutsCredentialsInTheBody() async throws {
        let transport = StubTransport(json: tokenJSON)
        _ = try await Fixtures.client(transport, configuration: Fixtures.configuration(method: .clientSecretPost)).clientCredentials()
        let sent = try #require(transport.sent.first)
        #expect(sent.request.headerFields[.authorization] == nil)
        #expect(sent.form["client_id"] == "client-1")
        #expect(sent.form["client_secret"] == "s3cr3t")
    }

    @Test func publicClientsSendOnlyTheirId() async throws {
        let transport = StubTransport(json: tokenJSON)
        let client = try Fixtures.client(transport, configuration: Fixtures.configuration(secret: nil))
        let request = try client.authorizationRequest(AuthorizationOptions(scopes: ["read"]))
        _ = try await client.completeAuthorization(
            callbackURL: URL(string: "http://127.0.0.1:9999/callback?code=the-code&state=\(request.state)")!, request: request)
        let sent = try #require(transport.sent.first)
        #expect(sent.request.headerFields[.authorization] == nil)
        #expect(sent.form["client_id"] == "client-1")
        #expect(sent.form["client_secret"] == nil)
        #expect(sent.form["grant_type"] == "authorization_code")
        #expect(sent.form["code"] == "the-code")
        #expect(sent.form["code_verifier"] == request.codeVerifier)
        #expect(sent.form["redirect_uri"] == "http://127.0.0.1:9999/callback")
    }
}

@Suite struct TokenEndpointTests {
    @Test func everyGrantSendsItsParameters() async throws {
        let transport = StubTransport(json: tokenJSON)
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

    @Test func extrasAndHeadersPerRequestKind() async throws {
        let transport = StubTransport(json: tokenJSON)
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
        let transport = StubTransport(json: tokenJSON)
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

@Suite struct RevocationAndIntrospectionTests {
    @Test func revokeSendsTokenAndHint() async throws {
        let transport = StubTransport { _, _ in response(200, "", contentType: nil) }
        try await Fixtures.client(transport).revoke("rt-1", hint: .refreshToken)
        let sent = try #require(transport.sent.first)
        #expect(sent.request.path == "/revoke")
        #expect(sent.form["token"] == "rt-1")
        #expect(sent.form["token_type_hint"] == "refresh_token")
        #expect(sent.request.headerFields[.authorization] != nil)
    }

    @Test func revokeSurfacesErrors() async throws {
        let transport = StubTransport { _, _ in response(503, "", contentType: nil, headers: [.retryAfter: "5"]) }
        do {
            try await Fixtures.client(transport).revoke("rt-1")
            Issue.record("no error")
        } catch let error as OAuth2Error {
            #expect(error.isTransient)
            #expect(error.retryAfter == 5)
        }
    }

    @Test func introspect() async throws {
        let transport = StubTransport(json: #"{"active":true,"scope":"read"}"#)
        let result = try await Fixtures.client(transport).introspect("at-1", hint: .accessToken)
        #expect(result.active)
        #expect(transport.sent.first?.request.path == "/introspect")
    }
}

@Suite struct InterceptorTests {
    struct Stamp: HTTPInterceptor {
        let seen: CapturedLog
        func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
            request.headerFields[HTTPField.Name("X-Trace")!] = "t-1"
            seen.append("send \(kind.rawValue)")
        }
        func didReceive(_ response: HTTPResponse, body: Data, for request: HTTPRequest, kind: RequestKind) async {
            seen.append("received \(response.status.code)")
        }
    }

    struct Veto: HTTPInterceptor {
        struct Stop: Error {}
        func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws { throw Stop() }
    }

    @Test func modifiesRequestsAndObservesResponses() async throws {
        let seen = CapturedLog()
        let transport = StubTransport(json: tokenJSON)
        _ = try await Fixtures.client(transport, interceptors: [Stamp(seen: seen)]).clientCredentials()
        #expect(transport.sent.first?.request.headerFields[HTTPField.Name("X-Trace")!] == "t-1")
        #expect(seen.lines == ["send token", "received 200"])
    }

    @Test func mayStopARequest() async throws {
        let transport = StubTransport(json: tokenJSON)
        await #expect(throws: Veto.Stop.self) { try await Fixtures.client(transport, interceptors: [Veto()]).clientCredentials() }
        #expect(transport.sent.isEmpty)
    }
}

@Suite struct LoggingTests {
    @Test func oneRedactedLinePerExchange() async throws {
        let log = CapturedLog()
        let transport = StubTransport(json: #"{"access_token":"SECRET-AT","token_type":"Bearer","refresh_token":"SECRET-RT"}"#)
        let client = try Fixtures.client(transport, configuration: Fixtures.configuration(secret: "SECRET-CS", method: .clientSecretPost), logger: log.logger())
        let tokens = try await client.password(username: "alice", password: "SECRET-PW")
        _ = try await client.refresh(tokens)
        #expect(log.lines.filter { $0.contains("POST https://as.example.com/token → 200") }.count == 2)
        #expect(!log.text.contains("SECRET"))
        #expect(log.text.contains("grant_type=password"))
    }
}
