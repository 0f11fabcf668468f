import Foundation
import NIOCore
import NIOHTTP1
import OAuth2JOSE

extension ProviderCore {
    /// The `events` member of a logout token (OpenID Connect Back-Channel Logout 1.0 §2.4).
    static let backChannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

    /// How long a logout token is valid (`exp - iat`).
    static let logoutTokenLifetime: Int64 = 120

    /// A logout token (§2.4), signed with the current signing key: `typ` `logout+jwt`; `iss`,
    /// `aud` (the client), `iat`, `exp`, a fresh `jti`, the back-channel logout event, and
    /// `sub` and/or `sid`.
    func logoutToken(clientID: String, subject: String?, sessionID: String?, now: Date) throws(JOSEError) -> String {
        let key = state.withLock { $0.signingKey }
        let issuedAt = Int64(now.timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(clientID), "iat": .integer(issuedAt), "exp": .integer(issuedAt + Self.logoutTokenLifetime),
            "jti": .string(Random.token(bytes: 16)), "events": .object([Self.backChannelLogoutEvent: .object([:])]),
        ]
        if let subject { claims["sub"] = .string(subject) }
        if let sessionID { claims["sid"] = .string(sessionID) }
        return try key.sign(claims: claims, header: ["typ": "logout+jwt"])
    }

    /// POSTs a logout token to a client's back-channel logout URI (§2.5) and records the
    /// delivery.
    ///
    /// - Throws: ``TestProviderError`` `.browser` when the client does not answer.
    func deliverLogoutToken(
        _ token: String, to uri: URL, clientID: String, subject: String?, sessionID: String?, timeout: Duration
    ) async throws -> TestProvider.BackChannelLogoutDelivery {
        let body = Array(("logout_token=" + FormEncoding.encode(token)).utf8)
        var delivery = TestProvider.BackChannelLogoutDelivery(
            clientID: clientID, uri: uri, subject: subject, sessionID: sessionID, logoutToken: token, statusCode: nil)
        defer { state.withLock { [delivery] in $0.backChannelLogoutDeliveries.append(delivery) } }
        let answer = try await TestProvider.send(
            .POST, uri, headers: ["Content-Type": "application/x-www-form-urlencoded", "User-Agent": "swift-oauth2-test-provider"], body: body,
            group: group, timeout: timeout)
        delivery.statusCode = answer.status
        return delivery
    }

    /// Sends a logout token to every client that signed in through the session and registered
    /// a back-channel logout URI (§2.7), all at once, and waits for their answers (at most
    /// 5 seconds each). A client that does not answer is recorded without a status.
    func notifyBackChannelLogout(sessionID: String, clients: [String: String?], now: Date) async {
        let targets = state.withLock { state in
            clients.compactMap { clientID, subject -> (String, URL, String?)? in
                guard let uri = state.clients[clientID]?.backChannelLogoutURI else { return nil }
                return (clientID, uri, subject)
            }
        }
        await withTaskGroup(of: Void.self) { deliveries in
            for (clientID, uri, subject) in targets {
                guard let token = try? logoutToken(clientID: clientID, subject: subject, sessionID: sessionID, now: now) else { continue }
                deliveries.addTask {
                    _ = try? await self.deliverLogoutToken(
                        token, to: uri, clientID: clientID, subject: subject, sessionID: sessionID, timeout: .seconds(5))
                }
            }
        }
    }
}
