import Foundation
import HTTPTypes
import Logging
import Testing
@testable import OAuth2

@Suite struct ClientAuthenticationTests {
    @Test func basicEncodesIdAndSecretBeforeBase64() throws {
        // RFC 6749 §2.3.1: both are form-urlencoded first.
        let configuration = ClientConfiguration(clientID: "my client:1", clientSecret: "p@ss wörd/+")
        let header = try ClientAuthentication.basicAuthorization(configuration)
        let decoded = String(decoding: Data(base64Encoded: String(header.dropFirst("Basic ".count)))!, as: UTF8.self)
        #expect(decoded == "my+client%3A1:p%40ss+w%C3%B6rd%2F%2B")
    }

    @Test func basicSendsNoSecretInTheBody() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
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
        let transport = StubTransport(json: StubTransport.tokenJSON)
        _ = try await Fixtures.client(transport, configuration: Fixtures.configuration(method: .clientSecretPost)).clientCredentials()
        let sent = try #require(transport.sent.first)
        #expect(sent.request.headerFields[.authorization] == nil)
        #expect(sent.form["client_id"] == "client-1")
        #expect(sent.form["client_secret"] == "s3cr3t")
    }

    @Test func publicClientsSendOnlyTheirId() async throws {
        let transport = StubTransport(json: StubTransport.tokenJSON)
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
