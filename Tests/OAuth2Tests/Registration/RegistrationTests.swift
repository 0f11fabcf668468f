import Foundation
import HTTPTypes
import Logging
import Testing
@testable import OAuth2

/// Dynamic client registration (RFC 7591) and its management (RFC 7592): request bodies,
/// response parsing, hostile answers, persistence. No socket.
@Suite struct RegistrationTests {
    static let endpoint = URL(string: "https://as.example.com/register")!
    static let clientURI = URL(string: "https://as.example.com/register/c-1")!
    static let metadata = Fixtures.metadata.filling(from: ServerMetadata(registrationEndpoint: endpoint))

    static let registered = """
        {"client_id":"c-1","client_secret":"sec-ret","client_id_issued_at":1767222000,"client_secret_expires_at":0,
         "registration_access_token":"rat-1","registration_client_uri":"https://as.example.com/register/c-1",
         "redirect_uris":["http://127.0.0.1:9999/callback"],"grant_types":["authorization_code","refresh_token"],
         "token_endpoint_auth_method":"client_secret_basic","client_name":"tool","scope":"openid read",
         "application_type":"native"}
        """

    static func registrar(_ transport: StubTransport, logger: Logger = Logger(label: "test")) throws -> ClientRegistrar {
        try ClientRegistrar(metadata: metadata, environment: HTTPEnvironment(transport: transport, logger: logger))
    }

    static func json(_ sent: StubTransport.Sent) throws -> [String: JSONValue] {
        let body = try #require(sent.body)
        return try #require(JSONValue.parseObject(body))
    }

    static var fullMetadata: RegistrationMetadata {
        var metadata = RegistrationMetadata(
            redirectURIs: [Fixtures.redirect], grantTypes: ["authorization_code", "refresh_token"], responseTypes: ["code"],
            tokenEndpointAuthMethod: .privateKeyJWT, clientName: "tool", scopes: ["openid", "read"],
            jwks: ["keys": [["kty": "EC", "crv": "P-256", "x": "x", "y": "y"]]], contacts: ["ops@example.com"],
            logoURI: URL(string: "https://example.com/logo.png")!, softwareStatement: "eyJ.statement.sig",
            additionalMembers: ["application_type": "native", "client_name": "overridden"])
        metadata.softwareID = "sw-1"
        return metadata
    }

    // MARK: - Requests

    @Test func registrationPostsTheMetadataAsJSON() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        _ = try await Self.registrar(transport).register(Self.fullMetadata)
        let sent = try #require(transport.sent.first)
        #expect(sent.request.method == .post)
        #expect(sent.request.url == Self.endpoint)
        #expect(sent.request.headerFields[.contentType] == "application/json")
        #expect(sent.request.headerFields[.accept] == "application/json")
        #expect(sent.request.headerFields[.authorization] == nil, "no initial access token, no Authorization")
        let body = try Self.json(sent)
        #expect(body["redirect_uris"] == ["http://127.0.0.1:9999/callback"])
        #expect(body["grant_types"] == ["authorization_code", "refresh_token"])
        #expect(body["response_types"] == ["code"])
        #expect(body["token_endpoint_auth_method"] == "private_key_jwt")
        #expect(body["client_name"] == "tool", "a modelled member wins over an additional one")
        #expect(body["scope"] == "openid read")
        #expect(body["jwks"]?.objectValue?["keys"]?.arrayValue?.count == 1)
        #expect(body["contacts"] == ["ops@example.com"])
        #expect(body["logo_uri"] == "https://example.com/logo.png")
        #expect(body["software_statement"] == "eyJ.statement.sig")
        #expect(body["software_id"] == "sw-1")
        #expect(body["application_type"] == "native")
        #expect(body["jwks_uri"] == nil && body["client_uri"] == nil, "nil members are not sent")
        #expect(body["client_id"] == nil)
    }

    @Test func emptyMetadataSendsAnEmptyObject() {
        #expect(RegistrationMetadata().members.isEmpty)
    }

    @Test func anInitialAccessTokenGoesAsBearer() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        _ = try await Self.registrar(transport).register(RegistrationMetadata(redirectURIs: [Fixtures.redirect]), initialAccessToken: "iat-1")
        #expect(transport.sent.first?.request.headerFields[.authorization] == "Bearer iat-1")
    }

    @Test func readUpdateDeleteUseTheRegistrationAccessToken() async throws {
        let transport = StubTransport { request, _ in
            request.method == .delete ? response(204, "", contentType: nil) : response(200, Self.registered)
        }
        let registrar = try Self.registrar(transport)
        let registration = try await registrar.register(RegistrationMetadata(redirectURIs: [Fixtures.redirect]))
        _ = try await registrar.read(registration)
        var changed = registration.metadata
        changed.clientName = "renamed"
        _ = try await registrar.update(registration, to: changed)
        try await registrar.delete(registration)
        let sent = transport.sent
        #expect(sent.map(\.request.method) == [.post, .get, .put, .delete])
        for management in sent.dropFirst() {
            #expect(management.request.url == Self.clientURI)
            #expect(management.request.headerFields[.authorization] == "Bearer rat-1")
        }
        #expect(sent[1].body == nil && sent[3].body == nil)
        let update = try Self.json(sent[2])
        #expect(update["client_id"] == "c-1", "RFC 7592 §2.2: the update names the client")
        #expect(update["client_name"] == "renamed")
        #expect(update["client_secret"] == nil && update["registration_access_token"] == nil, "no credentials in the body")
        #expect(update["registration_client_uri"] == nil && update["client_id_issued_at"] == nil)
    }

    @Test func metadataThatCannotWorkIsRefusedBeforeSending() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        let registrar = try Self.registrar(transport)
        var both = RegistrationMetadata(redirectURIs: [Fixtures.redirect], jwks: ["keys": []], jwksURI: URL(string: "https://example.com/jwks")!)
        await #expect(throws: OAuth2Error.self) { _ = try await registrar.register(both) }
        both.jwksURI = nil
        both.additionalMembers["client_secret"] = "mine"
        do {
            _ = try await registrar.register(both)
            Issue.record("a client_secret in the metadata was sent")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidClientMetadata)
            #expect(error.source == .client)
        }
        do {
            _ = try await registrar.register(RegistrationMetadata(redirectURIs: [URL(string: "http://127.0.0.1/cb#frag")!]))
            Issue.record("a redirect URI with a fragment was sent")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidRedirectURI)
        }
        #expect(transport.sent.isEmpty)
    }

    @Test func noRegistrationEndpointIsMissingEndpoint() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        let registrar = try ClientRegistrar(metadata: Fixtures.metadata, environment: HTTPEnvironment(transport: transport))
        do {
            _ = try await registrar.register(RegistrationMetadata())
            Issue.record("registered without an endpoint")
        } catch let error as OAuth2Error {
            #expect(error.code == .missingEndpoint)
        }
    }

    @Test func aPlainHTTPRegistrationEndpointOffLoopbackIsRefused() {
        let metadata = Fixtures.metadata.filling(from: ServerMetadata(registrationEndpoint: URL(string: "http://as.example.com/register")!))
        #expect(throws: OAuth2Error.self) { _ = try ClientRegistrar(metadata: metadata, environment: HTTPEnvironment(transport: StubTransport(json: "{}"))) }
    }

    @Test func aRegistrationWithoutManagementCannotBeRead() async throws {
        let transport = StubTransport(status: 200, json: Self.registered)
        do {
            _ = try await Self.registrar(transport).read(ClientRegistration(clientID: "c-1"))
            Issue.record("read without a registration access token")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidConfiguration)
        }
        #expect(transport.sent.isEmpty)
    }

    // MARK: - Responses

    @Test func theResponseIsTyped() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        let registration = try await Self.registrar(transport).register(RegistrationMetadata(redirectURIs: [Fixtures.redirect]))
        #expect(registration.clientID == "c-1")
        #expect(registration.clientSecret == "sec-ret")
        #expect(registration.clientIDIssuedAt == Date(timeIntervalSince1970: 1_767_222_000))
        #expect(registration.clientSecretExpiresAt == nil, "0 means the secret does not expire")
        #expect(registration.registrationAccessToken == "rat-1")
        #expect(registration.registrationClientURI == Self.clientURI)
        #expect(registration.isManageable)
        #expect(registration.metadata.redirectURIs == [Fixtures.redirect])
        #expect(registration.metadata.grantTypes == ["authorization_code", "refresh_token"])
        #expect(registration.metadata.tokenEndpointAuthMethod == .clientSecretBasic)
        #expect(registration.metadata.clientName == "tool")
        #expect(registration.metadata.scopes == ["openid", "read"])
        #expect(registration.metadata.additionalMembers == ["application_type": "native"], "credentials are not metadata")
        #expect(!registration.description.contains("sec-ret") && !registration.description.contains("rat-1"))
        let configuration = registration.configuration()
        #expect(configuration.clientID == "c-1")
        #expect(configuration.clientSecret == "sec-ret")
        #expect(configuration.authenticationMethod == .clientSecretBasic)
        #expect(configuration.redirectURI == Fixtures.redirect)
        #expect(configuration.scopes == ["openid", "read"])
    }

    @Test func anExpiringSecretHasItsExpiry() throws {
        let body = #"{"client_id":"c","client_secret":"s","client_secret_expires_at":"1767225600"}"#
        let registration = try ClientRegistration.parse(response: HTTPResponse(status: .created), body: Data(body.utf8), endpoint: Self.endpoint)
        #expect(registration.clientSecretExpiresAt == Date(timeIntervalSince1970: 1_767_225_600))
        #expect(!registration.isManageable)
    }

    @Test func glewlwydsArrayAuthMethodIsReadAsItsOneMethod() throws {
        // Glewlwyd 2.7.5's answer to a read (RFC 7592 §2.1).
        let body = #"{"client_id":"c","description":"","token_endpoint_auth_method":["client_secret_basic"],"redirect_uris":["http://127.0.0.1:9999/callback"]}"#
        let registration = try ClientRegistration.parse(response: HTTPResponse(status: .ok), body: Data(body.utf8), endpoint: Self.clientURI, management: true)
        #expect(registration.metadata.tokenEndpointAuthMethod == .clientSecretBasic)
        #expect(registration.metadata.additionalMembers == ["description": ""])
    }

    @Test(arguments: [
        (#"{"client_secret":"s"}"#, "no client_id"),
        (#"{"client_id":""}"#, "an empty client_id"),
        (#"{"client_id":42}"#, "a numeric client_id"),
        (#"{"client_id":"c","client_secret":["s"]}"#, "a secret that is not a string"),
        (#"{"client_id":"c","registration_access_token":{"t":1}}"#, "a token that is not a string"),
        (#"{"client_id":"c","redirect_uris":"http://127.0.0.1/cb"}"#, "redirect_uris that are not an array"),
        (#"{"client_id":"c","grant_types":[1]}"#, "a grant type that is not a string"),
        (#"{"client_id":"c","client_secret_expires_at":"soon"}"#, "an expiry that is not a time"),
        (#"{"client_id":"c","client_secret_expires_at":-5}"#, "a negative expiry"),
        (#"{"client_id":"c","jwks":"keys"}"#, "jwks that is not an object"),
        (#"{"client_id":"c","registration_client_uri":"https://evil.example.net/register/c"}"#, "a client configuration endpoint on another host"),
        (#"{"client_id":"c","registration_client_uri":"https://as.example.com:8443/register/c"}"#, "another port"),
        (#"{"client_id":"c","registration_client_uri":"http://as.example.com/register/c"}"#, "plain HTTP off loopback"),
        (#"["client_id","c"]"#, "an array"),
        ("<html>ok</html>", "HTML"),
    ])
    func hostileResponsesAreInvalid(body: String, what: String) async throws {
        let transport = StubTransport(status: 201, json: body)
        do {
            let registration = try await Self.registrar(transport).register(RegistrationMetadata(redirectURIs: [Fixtures.redirect]))
            Issue.record("accepted \(what): \(registration)")
        } catch let error as OAuth2Error {
            #expect(error.code == .invalidResponse, "\(what)")
            #expect(!error.description.contains("rat-") && !error.description.contains("\"s\""))
        }
    }

    @Test(arguments: ["invalid_redirect_uri", "invalid_client_metadata", "invalid_software_statement", "unapproved_software_statement"])
    func rfc7591ErrorsAreTyped(code: String) async throws {
        let transport = StubTransport(status: 400, json: #"{"error":"\#(code)","error_description":"no"}"#)
        do {
            _ = try await Self.registrar(transport).register(RegistrationMetadata(redirectURIs: [Fixtures.redirect]))
            Issue.record("an error was a registration")
        } catch let error as OAuth2Error {
            let expected: [String: OAuth2Error.Code] = [
                "invalid_redirect_uri": .invalidRedirectURI, "invalid_client_metadata": .invalidClientMetadata,
                "invalid_software_statement": .invalidSoftwareStatement, "unapproved_software_statement": .unapprovedSoftwareStatement,
            ]
            #expect(error.code == expected[code])
            #expect(error.source == .server)
            #expect(error.statusCode == 400)
            #expect(error.message == "no")
        }
    }

    @Test func anEmpty401IsInvalidToken() async throws {
        let transport = StubTransport { _, _ in response(401, "", contentType: nil) }
        let registrar = try Self.registrar(transport)
        let registration = ClientRegistration(clientID: "c-1", registrationAccessToken: "rat-1", registrationClientURI: Self.clientURI)
        for operation in ["register", "read", "delete"] {
            do {
                switch operation {
                case "register": _ = try await registrar.register(RegistrationMetadata(), initialAccessToken: "iat")
                case "read": _ = try await registrar.read(registration)
                default: try await registrar.delete(registration)
                }
                Issue.record("\(operation) succeeded on a 401")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidToken, "\(operation)")
                #expect(error.statusCode == 401)
                #expect(!error.description.contains("rat-1") && !error.description.contains("iat"))
            }
        }
    }

    @Test func aReadKeepsWhatTheAnswerLeavesOutAndTakesWhatItRotates() async throws {
        let transport = StubTransport { request, _ in
            request.method == .get
                ? response(200, #"{"client_id":"c-1","client_name":"tool"}"#)
                : response(200, #"{"client_id":"c-1","client_secret":"new-secret","registration_access_token":"rat-2"}"#)
        }
        let registrar = try Self.registrar(transport)
        let registration = ClientRegistration(
            clientID: "c-1", clientSecret: "old", registrationAccessToken: "rat-1", registrationClientURI: Self.clientURI)
        let read = try await registrar.read(registration)
        #expect(read.clientSecret == "old")
        #expect(read.registrationAccessToken == "rat-1")
        #expect(read.registrationClientURI == Self.clientURI)
        #expect(read.metadata.clientName == "tool")
        let updated = try await registrar.update(read, to: RegistrationMetadata(clientName: "x"))
        #expect(updated.clientSecret == "new-secret")
        #expect(updated.registrationAccessToken == "rat-2")
    }

    @Test func anAnswerForAnotherClientIsRefused() async throws {
        let transport = StubTransport(status: 200, json: #"{"client_id":"someone-else"}"#)
        let registration = ClientRegistration(clientID: "c-1", registrationAccessToken: "rat-1", registrationClientURI: Self.clientURI)
        await #expect(throws: OAuth2Error.self) { _ = try await Self.registrar(transport).read(registration) }
    }

    @Test func deleteAcceptsAny2xx() async throws {
        for status in [200, 204] {
            let transport = StubTransport { _, _ in response(status, "", contentType: nil) }
            let registration = ClientRegistration(clientID: "c-1", registrationAccessToken: "rat-1", registrationClientURI: Self.clientURI)
            try await Self.registrar(transport).delete(registration)
        }
    }

    // MARK: - Auto-registration

    @Test func aConfigurationWithoutClientIDRegistersFirst() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        let store = MemoryTokenStore()
        var configuration = ClientConfiguration(clientID: "", redirectURI: Fixtures.redirect, scopes: ["openid", "read"])
        configuration.quirks = [.scopesOnRefresh]
        let (client, registration) = try await Self.registrar(transport).client(for: configuration, store: store)
        #expect(registration?.clientID == "c-1")
        #expect(client.configuration.clientID == "c-1")
        #expect(client.configuration.clientSecret == "sec-ret")
        #expect(client.configuration.quirks == [.scopesOnRefresh], "the configuration's other settings are kept")
        let body = try Self.json(try #require(transport.sent.first))
        #expect(body["redirect_uris"] == ["http://127.0.0.1:9999/callback"], "the configuration's redirect URI")
        #expect(body["scope"] == "openid read")
        let stored = try await store.loadRegistration(issuer: Fixtures.issuer, clientID: "c-1")
        #expect(stored == registration)
    }

    @Test func aConfigurationWithClientIDRegistersNothing() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        let (client, registration) = try await Self.registrar(transport).client(for: Fixtures.configuration())
        #expect(registration == nil)
        #expect(client.configuration.clientID == "client-1")
        #expect(transport.sent.isEmpty)
    }

    // MARK: - Persistence

    @Test func aRegistrationRecordOfAnEarlierVersionKeepsItsSecret() async throws {
        let registration = try await Self.registrar(StubTransport(status: 201, json: Self.registered)).register(Self.fullMetadata)
        // 0.x kept the secret as the record's own member, beside the registration.
        var old = LegacyRegistrationRecord.session(registration, issuer: Fixtures.issuer)
        var members = try #require(old.additionalFields[LegacyRegistrationRecord.field]?.objectValue)
        members["client_secret"] = nil
        old.additionalFields = [LegacyRegistrationRecord.field: .object(members), "client_secret": "sec-ret"]
        let read = try LegacyRegistrationRecord.registration(from: try TokenDocument(data: try TokenDocument(session: old).encoded()).session)
        #expect(read == registration)
    }

    @Test func aRegistrationRoundTripsThroughItsDocumentAndTheOldRecord() async throws {
        let transport = StubTransport(status: 201, json: Self.registered)
        let registration = try await Self.registrar(transport).register(Self.fullMetadata)
        // Its own document kind.
        let document = try RegistrationDocument(data: try RegistrationDocument(issuer: Fixtures.issuer, registration: registration).encoded())
        #expect(document.registration == registration)
        #expect(document.issuer == Fixtures.issuer)
        // The record of earlier versions: a session whose access token is the registration access token.
        let record = LegacyRegistrationRecord.session(registration, issuer: Fixtures.issuer)
        #expect(record.key == TokenSessionKey(issuer: Fixtures.issuer, clientID: "c-1", account: ".registration"))
        #expect(record.tokens.accessToken == "rat-1")
        let legacy = try TokenDocument(data: try TokenDocument(session: record).encoded())
        #expect(try LegacyRegistrationRecord.registration(from: legacy.session) == registration)
    }

    @Test func aRecordWithoutRegistrationIsNotOne() {
        let record = StoredTokenSession(key: TokenSessionKey(issuer: "i", clientID: "c", account: ".registration"), tokens: TokenSet(accessToken: "a"))
        let error = #expect(throws: TokenStoreError.self) { _ = try LegacyRegistrationRecord.registration(from: record) }
        #expect(error?.code == .corrupt)
    }

    // MARK: - Logs

    @Test func secretsNeverReachTheLog() async throws {
        let log = CapturedLog()
        let transport = StubTransport(status: 201, json: Self.registered)
        let registrar = try Self.registrar(transport, logger: log.logger(level: .trace))
        let registration = try await registrar.register(Self.fullMetadata, initialAccessToken: "iat-secret")
        _ = try await registrar.read(registration)
        let text = log.text
        #expect(text.contains("register"))
        for secret in ["sec-ret", "rat-1", "iat-secret", "eyJ.statement.sig"] {
            #expect(!text.contains(secret), "\(secret) logged")
        }
    }
}
