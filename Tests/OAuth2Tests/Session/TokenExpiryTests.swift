import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct TokenExpiryTests {
    /// An unsigned JWT with the given claims (the session reads `exp` only for timing).
    func jwt(_ claims: String) -> String {
        "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(Data(claims.utf8)) + ".c2ln"
    }

    @Test func theTokenResponsesDateHeaderIsKept() throws {
        let (head, body) = tokenResponse("at", headers: [.date: "Sun, 06 Nov 1994 08:49:37 GMT"])
        let tokens = try TokenSet.parse(response: head, body: body, sentAt: Date(), receivedAt: Date())
        #expect(tokens.serverDate == Date(timeIntervalSince1970: 784_111_777))
        let (plain, plainBody) = tokenResponse("at")
        #expect(try TokenSet.parse(response: plain, body: plainBody, sentAt: Date()).serverDate == nil)
    }

    @Test func theServersDateSurvivesAFileStore() async throws {
        // A session restored from a file measures the same skew as the one that wrote it.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("server-date-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileTokenStore(directory: directory)
        let key = TokenSessionKey(issuer: "https://as.example.com", clientID: "c")
        let tokens = TokenSet(accessToken: "at", issuedAt: Date(timeIntervalSince1970: 1_700_000_000), serverDate: Date(timeIntervalSince1970: 1_700_003_600))
        try await store.save(StoredTokenSession(key: key, tokens: tokens))
        let loaded = try #require(try await store.load(key))
        #expect(loaded.tokens.serverDate == tokens.serverDate)
        #expect(TokenExpiry.skew(loaded.tokens) == 3600)
    }

    @Test func expiresInNeedsNoSkewCorrection() {
        // expires_in is relative: counted from this machine's clock, it is right whatever
        // the server's clock says.
        let now = Date()
        let tokens = TokenSet(accessToken: "at", expiresAt: now.addingTimeInterval(600), issuedAt: now, serverDate: now.addingTimeInterval(3600))
        let expiry = TokenExpiry(tokens, leeway: 60)
        #expect(expiry.expiresAt == now.addingTimeInterval(600))
        #expect(expiry.renewAt == now.addingTimeInterval(540))
    }

    @Test func aJWTExpiryIsMovedIntoThisMachinesClock() {
        // The server's clock is an hour ahead: its `exp` one hour and ten minutes from our
        // now is ten minutes from now here.
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let exp = Int(now.timeIntervalSince1970) + 3600 + 600
        let tokens = TokenSet(accessToken: jwt(#"{"sub":"a","exp":\#(exp)}"#), issuedAt: now, serverDate: now.addingTimeInterval(3600))
        let expiry = TokenExpiry(tokens, leeway: 60)
        #expect(expiry.expiresAt == now.addingTimeInterval(600))
        #expect(expiry.renewAt == now.addingTimeInterval(540))
        let noDate = TokenSet(accessToken: jwt(#"{"exp":\#(exp)}"#), issuedAt: now)
        #expect(TokenExpiry(noDate, leeway: 60).expiresAt == Date(timeIntervalSince1970: TimeInterval(exp)))
    }

    @Test func anOpaqueTokenWithoutExpiryIsRenewedOnlyWhenRefused() {
        for token in ["opaque", "a.b.c", jwt(#"{"sub":"no exp"}"#), jwt(#"{"exp":"soon"}"#), "x." + String(repeating: "A", count: 40_000) + ".y"] {
            let expiry = TokenExpiry(TokenSet(accessToken: token), leeway: 60)
            #expect(expiry.expiresAt == nil)
            #expect(expiry.renewAt == .distantFuture)
        }
    }

    @Test func theLeewayIsAtMostHalfTheLifetime() {
        let now = Date()
        let short = TokenSet(accessToken: "at", expiresAt: now.addingTimeInterval(30), issuedAt: now)
        #expect(TokenExpiry(short, leeway: 60).renewAt == now.addingTimeInterval(15))
        let long = TokenSet(accessToken: "at", expiresAt: now.addingTimeInterval(3600), issuedAt: now)
        #expect(TokenExpiry(long, leeway: 60).renewAt == now.addingTimeInterval(3540))
        #expect(TokenExpiry(long, leeway: 0).renewAt == now.addingTimeInterval(3600))
    }

    @Test func aSessionRenewsAJWTTokenByItsCorrectedExpiry() async throws {
        // The server's clock is two hours ahead and its token has no expires_in: read in our
        // clock its exp looks an hour away, but by the server's clock it passed an hour ago.
        let provider = ScriptedProvider()
        let now = Date()
        let exp = Int(now.timeIntervalSince1970) + 3600
        let tokens = TokenSet(accessToken: jwt(#"{"exp":\#(exp)}"#), refreshToken: "rt-0", issuedAt: now, serverDate: now.addingTimeInterval(7200))
        let session = try await TokenSession(client: try provider.client(), tokens: tokens)
        #expect(try await session.freshAccessToken() == "at-1")
    }
}
