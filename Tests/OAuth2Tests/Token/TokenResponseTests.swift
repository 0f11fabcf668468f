import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct TokenResponseTests {
    let sentAt = Date(timeIntervalSince1970: 1_700_000_000)

    func parse(_ status: Int, _ body: String, contentType: String? = "application/json", headers: HTTPFields = [:]) throws(OAuth2Error) -> TokenSet {
        let (head, data) = response(status, body, contentType: contentType, headers: headers)
        return try TokenSet.parse(response: head, body: data, requestedScopes: ["read"], sentAt: sentAt, receivedAt: sentAt)
    }

    func error(_ status: Int, _ body: String, contentType: String? = "application/json", headers: HTTPFields = [:]) -> OAuth2Error? {
        do {
            _ = try parse(status, body, contentType: contentType, headers: headers)
            return nil
        } catch {
            return error
        }
    }

    @Test func parsesAStandardResponse() throws {
        let tokens = try parse(200, #"{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt","id_token":"a.b.c","scope":"openid read","x":1}"#)
        #expect(tokens.accessToken == "at")
        #expect(tokens.tokenType == .bearer)
        #expect(tokens.refreshToken == "rt")
        #expect(tokens.idToken == "a.b.c")
        #expect(tokens.expiresAt == sentAt.addingTimeInterval(3600))
        #expect(tokens.scopes == ["openid", "read"])
        #expect(tokens.additionalFields["x"] == .integer(1))
    }

    @Test(arguments: ["bearer", "BEARER", "Bearer", "bEaReR"])
    func acceptsTokenTypeInAnyCase(_ type: String) throws {
        #expect(try parse(200, #"{"access_token":"at","token_type":"\#(type)"}"#).tokenType == .bearer)
    }

    @Test func acceptsDPoP() throws {
        #expect(try parse(200, #"{"access_token":"at","token_type":"dpop"}"#).tokenType == .dpop)
    }

    @Test(arguments: ["mac", "basic", "", "Bearer2"])
    func refusesOtherTokenTypes(_ type: String) {
        #expect(error(200, #"{"access_token":"at","token_type":"\#(type)"}"#)?.code == .invalidResponse)
    }

    @Test func expiresInAsAStringOrMissing() throws {
        #expect(try parse(200, #"{"access_token":"at","token_type":"Bearer","expires_in":"60"}"#).expiresAt == sentAt.addingTimeInterval(60))
        #expect(try parse(200, #"{"access_token":"at","token_type":"Bearer"}"#).expiresAt == nil)
        #expect(try parse(200, #"{"access_token":"at","token_type":"Bearer","expires_in":"soon"}"#).expiresAt == nil)
        #expect(try parse(200, #"{"access_token":"at","token_type":"Bearer","expires_in":-5}"#).expiresAt == nil)
    }

    @Test func scopeFallsBackToTheRequestedOnes() throws {
        #expect(try parse(200, #"{"access_token":"at","token_type":"Bearer"}"#).scopes == ["read"])
    }

    @Test func readsAFormEncodedBody() throws {
        // GitHub without an Accept header.
        let tokens = try parse(200, "access_token=gho_abc&scope=repo%2Cgist&token_type=bearer", contentType: "application/x-www-form-urlencoded; charset=utf-8")
        #expect(tokens.accessToken == "gho_abc")
        #expect(tokens.tokenType == .bearer)
    }

    @Test func findsAnErrorInsideHTTP200() {
        // GitHub answers a bad code with HTTP 200.
        let error = error(200, #"{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}"#)
        #expect(error?.code == .invalidGrant)
        #expect(error?.serverCode == "bad_verification_code")
        #expect(error?.statusCode == 200)
        let form = self.error(200, "error=incorrect_client_credentials&error_description=bad", contentType: "application/x-www-form-urlencoded")
        #expect(form?.code == .invalidClient)
        #expect(form?.serverCode == "incorrect_client_credentials")
    }

    @Test func typesRFC6749Errors() {
        let error = error(400, #"{"error":"invalid_grant","error_description":"Invalid code","error_uri":"https://as.example.com/e"}"#)
        #expect(error?.code == .invalidGrant)
        #expect(error?.source == .server)
        #expect(error?.message == "Invalid code")
        #expect(error?.uri == "https://as.example.com/e")
        #expect(error?.statusCode == 400)
        #expect(error?.requiresReauthorization == true)
        #expect(error?.isTransient == false)
    }

    @Test func mapsGlewlwydScopeInvalid() {
        let error = error(400, #"{"error":"scope_invalid"}"#)
        #expect(error?.code == .invalidScope)
        #expect(error?.serverCode == "scope_invalid")
    }

    @Test func emptyErrorBodiesStillGetATypedError() {
        #expect(error(403, "", contentType: nil)?.code == .invalidClient, "Glewlwyd's answer to a wrong client secret")
        #expect(error(401, "", contentType: nil)?.code == .invalidClient)
        #expect(error(400, "", contentType: nil)?.code == .invalidRequest)
        #expect(error(404, "<html>Not found</html>", contentType: "text/html")?.code == .httpError)
        let bad = error(502, "<html><body>Bad gateway</body></html>", contentType: "text/html")
        #expect(bad?.code == .serverError)
        #expect(bad?.isTransient == true)
    }

    @Test func honoursRetryAfter() {
        let seconds = error(429, "", contentType: nil, headers: [.retryAfter: "120"])
        #expect(seconds?.retryAfter == 120)
        #expect(seconds?.isTransient == true)
        #expect(seconds?.code == .temporarilyUnavailable)
        let date = error(503, #"{"error":"temporarily_unavailable"}"#, headers: [.retryAfter: "Tue, 14 Nov 2023 22:14:20 GMT"])
        #expect(date?.retryAfter == 60)
        #expect(date?.isTransient == true)
    }

    @Test func refusesAMissingAccessToken() {
        #expect(error(200, #"{"token_type":"Bearer"}"#)?.code == .invalidResponse)
        #expect(error(200, #"{"access_token":"","token_type":"Bearer"}"#)?.code == .invalidResponse)
        #expect(error(200, #"{"access_token":42,"token_type":"Bearer"}"#)?.code == .invalidResponse)
    }

    @Test(arguments: ["", "not json", "{\"access_token\":", "<html></html>", "[1,2]", "\u{0}\u{1}", "{\"access_token\":\"a\",\"token_type\":\"Bearer\",\"refresh_token\":5}"])
    func malformedBodiesAreErrorsNotCrashes(_ body: String) {
        #expect(error(200, body)?.code == .invalidResponse)
    }

    @Test func serverTextInErrorsIsSanitized() {
        let error = error(400, #"{"error":"invalid_request","error_description":"line1\nINFO forged log line"}"#)
        #expect(error?.message?.contains("\n") == false)
    }

    @Test func descriptionNeverShowsTokens() throws {
        let tokens = try parse(200, #"{"access_token":"secret-at","token_type":"Bearer","refresh_token":"secret-rt","id_token":"secret-id"}"#)
        for text in [tokens.description, tokens.debugDescription, "\(tokens)", String(reflecting: tokens)] {
            #expect(!text.contains("secret-"))
        }
        var dumped = ""
        dump(tokens, to: &dumped)
        #expect(!dumped.contains("secret-"))
    }

    @Test func refreshKeepsWhatTheResponseOmits() {
        let old = TokenSet(accessToken: "a1", refreshToken: "r1", idToken: "i1", scopes: ["read"])
        let kept = old.merging(refreshed: TokenSet(accessToken: "a2"))
        #expect(kept.accessToken == "a2")
        #expect(kept.refreshToken == "r1")
        #expect(kept.idToken == "i1")
        #expect(kept.scopes == ["read"])
        let rotated = old.merging(refreshed: TokenSet(accessToken: "a2", refreshToken: "r2"))
        #expect(rotated.refreshToken == "r2")
    }

    @Test func expiryWithLeeway() {
        let tokens = TokenSet(accessToken: "a", expiresAt: sentAt.addingTimeInterval(30))
        #expect(!tokens.isExpired(at: sentAt))
        #expect(tokens.isExpired(at: sentAt, leeway: 60))
        #expect(tokens.isExpired(at: sentAt.addingTimeInterval(31)))
    }
}

@Suite struct IntrospectionResponseTests {
    @Test func parsesActiveTokens() throws {
        let (head, body) = response(200, #"{"active":true,"scope":"read write","client_id":"c","username":"alice","exp":1700000000,"aud":"api","cnf":{"jkt":"x"}}"#)
        let result = try IntrospectionResponse.parse(response: head, body: body)
        #expect(result.active)
        #expect(result.scopes == ["read", "write"])
        #expect(result.audience == ["api"])
        #expect(result.expiresAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(result.fields["cnf"]?.objectValue?["jkt"] == .string("x"))
    }

    @Test func parsesInactiveAndRefusesGarbage() throws {
        let (head, body) = response(200, #"{"active":false}"#)
        #expect(try IntrospectionResponse.parse(response: head, body: body).active == false)
        let (h2, b2) = response(200, #"{"scope":"x"}"#)
        #expect(throws: OAuth2Error.self) { try IntrospectionResponse.parse(response: h2, body: b2) }
        let (h3, b3) = response(401, #"{"error":"invalid_client"}"#)
        #expect(throws: OAuth2Error.self) { try IntrospectionResponse.parse(response: h3, body: b3) }
    }
}
