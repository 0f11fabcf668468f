import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite("Client credentials, password and device grants")
struct OtherGrantsTests {
    static let deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

    @Test("client_credentials: a confidential client gets an access token, no refresh or ID token")
    func clientCredentials() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider, scopes: [])
            let tokens = try await client.clientCredentials()
            #expect(tokens.refreshToken == nil)
            #expect(tokens.idToken == nil)
            #expect(tokens.scopes == ["api", "email", "profile"])
            let narrow = try await client.clientCredentials(scopes: ["api"])
            #expect(narrow.scopes == ["api"])
            let error = await Fixture.oauthError { _ = try await client.clientCredentials(scopes: ["admin"]) }
            #expect(error?.code == .invalidScope)
        }
    }

    @Test("client_credentials is refused to a public client")
    func clientCredentialsNeedsAConfidentialClient() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.clients[0].grantTypes.insert(.clientCredentials)
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let error = await Fixture.oauthError { _ = try await Fixture.publicClient(provider).clientCredentials() }
            #expect(error?.code == .unauthorizedClient)
        }
    }

    @Test("A grant the client is not registered for is unauthorized_client")
    func unregisteredGrant() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let error = await Fixture.oauthError {
                _ = try await client.password(username: TestProvider.Demo.username, password: TestProvider.Demo.password)
            }
            #expect(error?.code == .unauthorizedClient)
            let unknown = await Fixture.oauthError {
                _ = try await client.requestToken(.extension(type: "urn:example:grant", parameters: [:]))
            }
            #expect(unknown?.code == .unsupportedGrantType)
        }
    }

    @Test("password: the right password gets verified tokens, a wrong one invalid_grant")
    func password() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.confidentialClient(provider, method: .clientSecretPost)
            let tokens = try await client.password(username: TestProvider.Demo.username, password: TestProvider.Demo.password)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
            #expect(tokens.idTokenClaims?.sessionID == nil)
            #expect(tokens.refreshToken != nil)
            let error = await Fixture.oauthError { _ = try await client.password(username: TestProvider.Demo.username, password: "wrong") }
            #expect(error?.code == .invalidGrant)
            let nobody = await Fixture.oauthError { _ = try await client.password(username: "nobody", password: "x") }
            #expect(nobody?.code == .invalidGrant)
        }
    }

    /// Starts a device authorization for the demo public client; returns its response.
    static func startDevice(_ provider: TestProvider, scope: String = "openid profile offline_access") async throws -> [String: JSONValue] {
        let (response, body) = try await Fixture.send(
            .post, provider.url(for: .deviceAuthorization), form: [("client_id", TestProvider.Demo.publicClientID), ("scope", scope)])
        #expect(response.status.code == 200)
        #expect(response.headerFields[.cacheControl] == "no-store")
        return Fixture.json(body)
    }

    static func poll(_ client: OAuth2Client, _ deviceCode: String) async throws -> TokenSet {
        try await client.requestToken(.extension(type: deviceGrantType, parameters: ["device_code": deviceCode]))
    }

    @Test("Device flow: pending until approved, then verified tokens once")
    func deviceFlow() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let device = try await Self.startDevice(provider)
            let deviceCode = try #require(device["device_code"]?.stringValue)
            let userCode = try #require(device["user_code"]?.stringValue)
            #expect(userCode.count == 9)
            #expect(device["verification_uri"] == .string(provider.url(for: .deviceVerification).absoluteString))
            #expect(device["interval"] == 1)
            #expect(device["expires_in"] == 600)
            #expect(provider.pendingDeviceUserCodes == [userCode])

            let pending = await Fixture.oauthError { _ = try await Self.poll(client, deviceCode) }
            #expect(pending?.code == .authorizationPending)

            try provider.approveDevice(userCode: userCode.lowercased())
            #expect(provider.pendingDeviceUserCodes.isEmpty)
            try await Task.sleep(for: .seconds(1))
            let tokens = try await Self.poll(client, deviceCode)
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)
            #expect(tokens.refreshToken != nil)
            let again = await Fixture.oauthError { _ = try await Self.poll(client, deviceCode) }
            #expect(again?.code == .invalidGrant)
        }
    }

    @Test("Device flow: the verification page approves the code for the signed-in user")
    func verificationPage() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            let device = try await Self.startDevice(provider)
            let complete = URL(string: try #require(device["verification_uri_complete"]?.stringValue))!
            #expect(try await provider.openInBrowser(complete) == complete)
            let tokens = try await Self.poll(client, try #require(device["device_code"]?.stringValue))
            #expect(tokens.idTokenClaims?.subject == TestProvider.Demo.subject)

            let unknown = await Fixture.providerError {
                try await provider.openInBrowser(URL(string: provider.url(for: .deviceVerification).absoluteString + "?user_code=BBBB-BBBB")!)
            }
            #expect(unknown?.statusCode == 400)
            #expect(try await provider.openInBrowser(provider.url(for: .deviceVerification)) == provider.url(for: .deviceVerification))
        }
    }

    @Test("Device flow: polling too fast is slow_down, a denial is access_denied, an old code expired_token")
    func deviceErrors() async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            let client = try await Fixture.publicClient(provider)
            // An interval of an hour: the second poll is too fast however slowly a busy
            // machine runs the test.
            provider.lifetimes.devicePollingInterval = .seconds(3600)
            let fast = try await Self.startDevice(provider)
            let fastCode = try #require(fast["device_code"]?.stringValue)
            let first = await Fixture.oauthError { _ = try await Self.poll(client, fastCode) }
            #expect(first?.code == .authorizationPending)
            let second = await Fixture.oauthError { _ = try await Self.poll(client, fastCode) }
            #expect(second?.code == .slowDown)

            let denied = try await Self.startDevice(provider)
            try provider.denyDevice(userCode: try #require(denied["user_code"]?.stringValue))
            let refusal = await Fixture.oauthError { _ = try await Self.poll(client, try #require(denied["device_code"]?.stringValue)) }
            #expect(refusal?.code == .accessDenied)

            provider.lifetimes.deviceCode = .milliseconds(100)
            let old = try await Self.startDevice(provider)
            try await Task.sleep(for: .milliseconds(200))
            let expired = await Fixture.oauthError { _ = try await Self.poll(client, try #require(old["device_code"]?.stringValue)) }
            #expect(expired?.code == .expiredToken)
            #expect(throws: TestProviderError.self) { try provider.approveDevice(userCode: "ZZZZ-ZZZZ") }
        }
    }

    @Test("Device authorization is refused to a client not registered for it")
    func deviceNeedsTheGrant() async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.clients[0].grantTypes.remove(.deviceCode)
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let (response, body) = try await Fixture.send(
                .post, provider.url(for: .deviceAuthorization), form: [("client_id", TestProvider.Demo.publicClientID)])
            #expect(response.status.code == 400)
            #expect(Fixture.json(body)["error"] == "unauthorized_client")
        }
    }
}
