import Foundation
import Testing
@testable import OAuth2

/// `TokenSession.isFresh(_:options:at:)`, the rule the `oauth2` tool answers a cached token
/// with before it makes a session, says what the session itself does with the same tokens
/// at the same instant.
@Suite struct SessionFreshnessRuleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func jwt(_ claims: String) -> String {
        "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(Data(claims.utf8)) + ".c2ln"
    }

    /// Token sets around every edge of the rule, all seen at ``now``.
    var cases: [(String, TokenSet, TokenSession.Options)] {
        let now = Self.now
        let exp = Int(now.timeIntervalSince1970) + 3600 + 600
        return [
            ("an hour left", TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: now.addingTimeInterval(3600), issuedAt: now), .init()),
            ("61 s left", TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: now.addingTimeInterval(61), issuedAt: now.addingTimeInterval(-3539)), .init()),
            ("60 s left: in the leeway", TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: now.addingTimeInterval(60), issuedAt: now.addingTimeInterval(-3540)), .init()),
            ("expired", TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: now.addingTimeInterval(-1), issuedAt: now.addingTimeInterval(-3601)), .init()),
            ("ten minutes left, leeway 700 s", TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: now.addingTimeInterval(600), issuedAt: now.addingTimeInterval(-3000)), .init(leeway: 700)),
            ("30 s of life, 16 s left", TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: now.addingTimeInterval(16), issuedAt: now.addingTimeInterval(-14)), .init()),
            ("30 s of life, 15 s left: half of it gone", TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: now.addingTimeInterval(15), issuedAt: now.addingTimeInterval(-15)), .init()),
            ("a JWT's exp, server clock an hour ahead", TokenSet(accessToken: jwt(#"{"exp":\#(exp)}"#), refreshToken: "rt-0", issuedAt: now, serverDate: now.addingTimeInterval(3600)), .init()),
            ("a JWT's exp, server clock two hours ahead", TokenSet(accessToken: jwt(#"{"exp":\#(exp)}"#), refreshToken: "rt-0", issuedAt: now, serverDate: now.addingTimeInterval(7200)), .init()),
            ("no expiry", TokenSet(accessToken: "opaque", refreshToken: "rt-0", issuedAt: now.addingTimeInterval(-86_400)), .init()),
        ]
    }

    @Test func theRuleIsTheSessions() async throws {
        for (name, tokens, options) in cases {
            let provider = ScriptedProvider()
            let session = try await TokenSession(client: try provider.client(now: { Self.now }), tokens: tokens, options: options)
            _ = try await session.freshTokens()
            let answeredInHand = provider.tokenRequestCount == 0
            #expect(TokenSession.isFresh(tokens, options: options, at: Self.now) == answeredInHand, "\(name)")
        }
    }

    @Test func theExpiryIsTheSessions() {
        let now = Self.now
        let exp = Int(now.timeIntervalSince1970) + 3600 + 600
        #expect(TokenSession.expiresAt(of: TokenSet(accessToken: "at", expiresAt: now.addingTimeInterval(600), issuedAt: now)) == now.addingTimeInterval(600))
        let ahead = TokenSet(accessToken: jwt(#"{"exp":\#(exp)}"#), issuedAt: now, serverDate: now.addingTimeInterval(3600))
        #expect(TokenSession.expiresAt(of: ahead) == now.addingTimeInterval(600), "exp moved into this machine's clock")
        #expect(TokenSession.expiresAt(of: TokenSet(accessToken: "opaque")) == nil)
    }
}
