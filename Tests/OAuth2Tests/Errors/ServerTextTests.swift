import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// What a server writes into an error object reaches messages and logs only cleaned:
/// an `error` outside RFC 6749's character set is not echoed, descriptions and URIs lose
/// control characters and are capped, and a secret the client sent never comes back out.
@Suite struct ServerTextTests {
    static let refreshToken = "rt-9f8e7d6c5b4a39281706"
    static let tokens = TokenSet(accessToken: "at-0a1b2c3d4e5f", refreshToken: refreshToken)

    /// Refreshes against a token endpoint answering `status` with `json`, logging at trace.
    func refreshError(status: Int = 400, json: String, log: CapturedLog = CapturedLog()) async throws -> OAuth2Error {
        let client = try Fixtures.client(StubTransport(status: status, json: json), logger: log.logger())
        do {
            _ = try await client.refresh(Self.tokens)
        } catch let error as OAuth2Error {
            return error
        }
        Issue.record("the refresh succeeded")
        return OAuth2Error(.invalidRequest, source: .client)
    }

    @Test(arguments: [
        #"invalid\"grant"#,  // a quote: outside %x20-21 / %x23-5B / %x5D-7E
        #"invalid\\grant"#,  // a backslash
        "invalid\\ngrant",  // a newline (JSON escape)
        "invalid_gr\u{e4}nt",  // non-ASCII
        "invalid\\u0007grant",  // a control character
    ])
    func anErrorCodeOutsideTheRFCCharacterSetIsAnInvalidResponse(code: String) async throws {
        let error = try await refreshError(json: #"{"error": "\#(code)"}"#)
        #expect(error.code == .invalidResponse)
        #expect(error.statusCode == 400)
        #expect(error.serverCode == nil)
        #expect(!error.description.contains("grant"), "the raw value is not echoed: \(error.description)")
    }

    @Test func anOverlongErrorCodeIsAnInvalidResponse() async throws {
        let error = try await refreshError(json: #"{"error": "\#(String(repeating: "x", count: 500))"}"#)
        #expect(error.code == .invalidResponse)
        #expect(!error.description.contains("xxxx"))
    }

    @Test func aValidErrorCodeIsKeptWhateverItsSpelling() async throws {
        #expect(try await refreshError(json: #"{"error": "invalid_grant"}"#).code == .invalidGrant)
        let custom = try await refreshError(json: #"{"error": "vendor.Specific-code!"}"#)
        #expect(custom.code.rawValue == "vendor.Specific-code!")
    }

    @Test func descriptionsAndURIsLoseControlCharactersAndAreCapped() async throws {
        let long = String(repeating: "d", count: 2_000)
        let error = try await refreshError(
            json: #"{"error": "invalid_grant", "error_description": "line one\nFAKE LOG LINE\u001b[31m \#(long)", "error_uri": "https://as.example.com/e\r\nX-Injected: 1\#(long)"}"#)
        let message = try #require(error.message)
        let uri = try #require(error.uri)
        for text in [message, uri, error.description] {
            #expect(!text.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) }, "\(text.debugDescription)")
        }
        #expect(message.count <= 301)
        #expect(uri.count <= 301)
        #expect(message.hasPrefix("line oneFAKE LOG LINE[31m"))
    }

    @Test func aSecretTheClientSentNeverComesBackInAMessageOrALog() async throws {
        let log = CapturedLog()
        let echo = Self.refreshToken
        let error = try await refreshError(
            json: #"{"error": "invalid_grant", "error_description": "refresh token \#(echo) is revoked; client secret s3cr3t-value", "error_uri": "https://as.example.com/why?token=\#(echo)"}"#,
            log: log)
        #expect(error.code == .invalidGrant)
        for text in [error.description, error.message ?? "", error.uri ?? "", log.text] {
            #expect(!text.contains(echo), "\(text)")
        }
        #expect(error.message?.contains("refresh token \(Redactor.placeholder) is revoked") == true)
        #expect(!log.text.isEmpty)
    }

    @Test func theClientSecretAndBasicCredentialsAreWithheldToo() async throws {
        let secret = "s3cr3t-of-the-client"
        let transport = StubTransport(status: 401, json: #"{"error": "invalid_client", "error_description": "bad secret \#(secret) for client-1"}"#)
        let log = CapturedLog()
        let client = try Fixtures.client(transport, configuration: Fixtures.configuration(secret: secret), logger: log.logger())
        await #expect {
            try await client.clientCredentials()
        } throws: { error in
            let error = error as? OAuth2Error
            return error?.code == .invalidClient && error?.message?.contains(secret) == false
                && error?.message?.contains("client-1") == true
        }
        #expect(!log.text.contains(secret))
    }

    @Test func aResourceServerEchoingTheAccessTokenIsRedacted() async throws {
        let access = "at-echoed-by-the-api-0123456789"
        let transport = StubTransport { request, _ in
            response(401, #"{"error": "invalid_token", "error_description": "token \#(access) expired"}"#,
                     headers: [.wwwAuthenticate: #"Bearer error="invalid_token", error_description="token \#(access) expired""#])
        }
        let log = CapturedLog()
        let client = try Fixtures.client(transport, logger: log.logger())
        let request = HTTPRequest(method: .get, url: URL(string: "https://api.example.com/me")!)
        let (answer, _) = try await client.perform(request, with: TokenSet(accessToken: access))
        #expect(answer.status.code == 401)
        #expect(!log.text.contains(access), "\(log.text)")
    }
}
