import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// RFC 8628 §3.1–3.2: the device authorization request and its response.
@Suite struct DeviceAuthorizationTests {
    static let sentAt = Date(timeIntervalSince1970: 1_800_000_000)

    static func parse(_ body: String, status: Int = 200, contentType: String? = "application/json") throws(OAuth2Error) -> DeviceAuthorization {
        let (head, data) = response(status, body, contentType: contentType)
        return try DeviceAuthorization.parse(response: head, body: data, requestedScopes: ["openid", "read"], sentAt: sentAt)
    }

    @Test func parsesAFullJSONResponse() throws {
        // Glewlwyd's answer, as it sends it.
        let authorization = try Self.parse(
            #"{"device_code":"BpVxMJhfCqy1l1TymYHhSeHs0fQMuUUR","user_code":"1CPL-BJDB","verification_uri":"http://127.0.0.1:4593/api/oidc/device","verification_uri_complete":"http://127.0.0.1:4593/api/oidc/device?code=1CPL-BJDB","expires_in":600,"interval":1}"#)
        #expect(authorization.deviceCode == "BpVxMJhfCqy1l1TymYHhSeHs0fQMuUUR")
        #expect(authorization.userCode == "1CPL-BJDB")
        #expect(authorization.verificationURI.absoluteString == "http://127.0.0.1:4593/api/oidc/device")
        #expect(authorization.verificationURIComplete?.absoluteString == "http://127.0.0.1:4593/api/oidc/device?code=1CPL-BJDB")
        #expect(authorization.preferredVerificationURI == authorization.verificationURIComplete)
        #expect(authorization.expiresAt == Self.sentAt.addingTimeInterval(600))
        #expect(authorization.interval == 1)
        #expect(authorization.scopes == ["openid", "read"])
        #expect(authorization.additionalFields.isEmpty)
    }

    @Test func parsesGitHubsFormEncodedResponse() throws {
        // GitHub answers form-encoded unless asked for JSON.
        let authorization = try Self.parse(
            "device_code=3584d83530557fdd1f46af8289938c8ef79f9dc5&expires_in=900&interval=5&user_code=WDJB-MJHT&verification_uri=https%3A%2F%2Fgithub.com%2Flogin%2Fdevice",
            contentType: "application/x-www-form-urlencoded; charset=utf-8")
        #expect(authorization.deviceCode == "3584d83530557fdd1f46af8289938c8ef79f9dc5")
        #expect(authorization.userCode == "WDJB-MJHT")
        #expect(authorization.verificationURI.absoluteString == "https://github.com/login/device")
        #expect(authorization.verificationURIComplete == nil)
        #expect(authorization.preferredVerificationURI == authorization.verificationURI)
        #expect(authorization.expiresAt == Self.sentAt.addingTimeInterval(900))
        #expect(authorization.interval == 5)
    }

    @Test func intervalDefaultsToFiveSecondsAndNeverGoesBelowOne() throws {
        let base = #""device_code":"dc","user_code":"UC","verification_uri":"https://as.example.com/device","expires_in":"1800""#
        #expect(try Self.parse("{\(base)}").interval == 5, "RFC 8628 §3.2: 5 seconds when absent")
        #expect(try Self.parse("{\(base),\"interval\":0}").interval == 1)
        #expect(try Self.parse("{\(base),\"interval\":\"7\"}").interval == 7, "a string is a number too")
        #expect(try Self.parse("{\(base)}").expiresAt == Self.sentAt.addingTimeInterval(1800), "expires_in as a string")
    }

    @Test func acceptsGooglesVerificationURLAndKeepsOtherMembers() throws {
        let authorization = try Self.parse(
            #"{"device_code":"dc","user_code":"GQVQ-JKEC","verification_url":"https://www.google.com/device","expires_in":1800,"interval":5,"message":"Enter\u0007 the code","x_extra":true}"#)
        #expect(authorization.verificationURI.absoluteString == "https://www.google.com/device")
        #expect(authorization.message == "Enter the code", "control characters are removed from server text")
        #expect(authorization.additionalFields == ["x_extra": .bool(true)])
    }

    @Test(arguments: [
        (#"{"user_code":"UC","verification_uri":"https://as.example.com/d","expires_in":600}"#, "device_code"),
        (#"{"device_code":"secret-dc","verification_uri":"https://as.example.com/d","expires_in":600}"#, "user_code"),
        (#"{"device_code":"secret-dc","user_code":"UC","expires_in":600}"#, "verification_uri"),
        (#"{"device_code":"secret-dc","user_code":"UC","verification_uri":"https://as.example.com/d"}"#, "expires_in"),
        (#"{"device_code":"secret-dc","user_code":"UC","verification_uri":"https://as.example.com/d","expires_in":-5}"#, "expires_in"),
        (#"{"device_code":"secret-dc","user_code":"UC","verification_uri":"/relative","expires_in":600}"#, "verification_uri"),
        (#"{"device_code":"secret-dc","user_code":"UC","verification_uri":"javascript:alert(1)","expires_in":600}"#, "verification_uri"),
        (#"{"device_code":"secret-dc","user_code":"UC","verification_uri":"https://as.example.com/d","verification_uri_complete":7,"expires_in":600}"#, "verification_uri_complete"),
        (#"{"device_code":"secret-dc","user_code":"UC","verification_uri":"https://as.example.com/d","expires_in":600,"interval":"soon"}"#, "interval"),
    ])
    func refusesAnIncompleteResponseWithoutShowingTheDeviceCode(body: String, member: String) {
        do {
            _ = try Self.parse(body)
            Issue.record("accepted a response without a usable \(member)")
        } catch {
            #expect(error.code == .invalidResponse)
            #expect(error.message?.contains(member) == true, "the message names \(member): \(error)")
            #expect(!error.description.contains("secret-dc"))
        }
    }

    @Test func refusesAPlainHTTPVerificationURIOffLoopback() {
        // The user types their password there.
        #expect(throws: OAuth2Error.self) {
            try Self.parse(#"{"device_code":"dc","user_code":"UC","verification_uri":"http://as.example.com/device","expires_in":600}"#)
        }
        do {
            _ = try Self.parse(#"{"device_code":"dc","user_code":"UC","verification_uri":"https://as.example.com/device","verification_uri_complete":"http://evil.example.com/?c=UC","expires_in":600}"#)
            Issue.record("accepted a plain-HTTP verification_uri_complete")
        } catch {
            #expect(error.code == .insecureEndpoint)
        }
    }

    @Test func serverErrorsAreTyped() {
        do {
            _ = try Self.parse(#"{"error":"invalid_client","error_description":"Unknown client"}"#, status: 401)
            Issue.record("accepted an error")
        } catch {
            #expect(error.code == .invalidClient)
            #expect(error.statusCode == 401)
        }
        do {
            // GitHub: an error in an HTTP 200, form-encoded.
            _ = try Self.parse("error=unauthorized_client&error_description=Device+flow+is+disabled", contentType: "application/x-www-form-urlencoded")
            Issue.record("accepted an error in an HTTP 200")
        } catch {
            #expect(error.code == .unauthorizedClient)
            #expect(error.message == "Device flow is disabled")
        }
        do {
            _ = try Self.parse("<html>busy</html>", status: 200, contentType: "text/html")
            Issue.record("accepted HTML")
        } catch {
            #expect(error.code == .invalidResponse)
        }
    }

    @Test func descriptionRedactsTheDeviceCode() throws {
        let authorization = try Self.parse(
            #"{"device_code":"very-secret-device-code","user_code":"ABCD-EFGH","verification_uri":"https://as.example.com/device","expires_in":600}"#)
        #expect(!authorization.description.contains("very-secret-device-code"))
        #expect(authorization.description.contains("ABCD-EFGH"))
        #expect(authorization.description.contains(Redactor.placeholder))
    }

    @Test func deviceCodeGrantHasItsURNAndOneParameter() {
        let grant = Grant.deviceCode("the-device-code")
        #expect(grant.type == "urn:ietf:params:oauth:grant-type:device_code")
        #expect(grant.parameters.map(\.0) == ["device_code"])
        #expect(grant.parameters.map(\.1) == ["the-device-code"])
        #expect(!grant.description.contains("the-device-code"))
    }
}

/// `OAuth2Client.startDeviceAuthorization`: what goes over the wire.
@Suite struct DeviceAuthorizationRequestTests {
    static let metadata = Fixtures.metadata.filling(from: ServerMetadata(deviceAuthorizationEndpoint: URL(string: "https://as.example.com/device_authorization")!))
    static let answer = #"{"device_code":"dc-1","user_code":"WXYZ-1234","verification_uri":"https://as.example.com/device","expires_in":600,"interval":2}"#

    @Test func aPublicClientSendsItsIdAndScopes() async throws {
        let transport = StubTransport(json: Self.answer)
        var configuration = Fixtures.configuration(secret: nil)
        configuration.additionalParameters[.deviceAuthorization] = ["audience": "https://api.example.com"]
        let client = try Fixtures.client(transport, metadata: Self.metadata, configuration: configuration)
        let authorization = try await client.startDeviceAuthorization(additionalParameters: ["acr_values": "mfa"])
        let sent = try #require(transport.sent.first)
        #expect(sent.request.method == .post)
        #expect(sent.request.url?.absoluteString == "https://as.example.com/device_authorization")
        #expect(sent.request.headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(sent.request.headerFields[.authorization] == nil)
        #expect(sent.form == ["client_id": "client-1", "scope": "openid read", "audience": "https://api.example.com", "acr_values": "mfa"])
        #expect(authorization.userCode == "WXYZ-1234")
        #expect(authorization.scopes == ["openid", "read"])
        #expect(authorization.interval == 2)
    }

    @Test func aConfidentialClientAuthenticatesAndGitHubsAcceptHeaderIsSent() async throws {
        let transport = StubTransport(json: Self.answer)
        var configuration = Fixtures.configuration(method: .clientSecretBasic)
        configuration.additionalHeaders[.deviceAuthorization] = [.accept: "application/vnd.example+json"]
        let client = try Fixtures.client(transport, metadata: Self.metadata, configuration: configuration)
        _ = try await client.startDeviceAuthorization(scopes: ["read:user"])
        let sent = try #require(transport.sent.first)
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true)
        #expect(sent.request.headerFields[.accept] == "application/vnd.example+json")
        #expect(sent.form == ["scope": "read:user"])
    }

    @Test func noScopesSendsNoScope() async throws {
        let transport = StubTransport(json: Self.answer)
        var configuration = Fixtures.configuration(secret: nil)
        configuration.scopes = []
        let client = try Fixtures.client(transport, metadata: Self.metadata, configuration: configuration)
        _ = try await client.startDeviceAuthorization()
        #expect(transport.sent.first?.form == ["client_id": "client-1"])
    }

    @Test func aServerWithoutTheEndpointSaysSo() async throws {
        let transport = StubTransport(json: Self.answer)
        let client = try Fixtures.client(transport)
        do {
            _ = try await client.startDeviceAuthorization()
            Issue.record("no device authorization endpoint, yet a request")
        } catch let error as OAuth2Error {
            #expect(error.code == .missingEndpoint)
        }
        #expect(transport.sent.isEmpty)
    }
}
