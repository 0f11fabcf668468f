import Foundation
import OAuth2JOSE

extension TestProvider {
    /// A logout token the provider sent to a client's back-channel logout URI (OpenID
    /// Connect Back-Channel Logout 1.0 §2.5), and the client's answer.
    public struct BackChannelLogoutDelivery: Sendable, Hashable, CustomStringConvertible {
        /// The client it was sent to (its `aud`).
        public let clientID: String
        /// Where it was POSTed.
        public let uri: URL
        /// Its `sub`, if any.
        public let subject: String?
        /// Its `sid`, if any.
        public let sessionID: String?
        /// The logout token as sent: send it again to test that your endpoint refuses a
        /// replay. Never printed.
        public let logoutToken: String
        /// The HTTP status the client answered (§2.8: 200, or 204 from some frameworks, on
        /// success; 400 on failure); `nil` when it did not answer.
        public internal(set) var statusCode: Int?

        /// Whether the client answered 200 or 204.
        public var succeeded: Bool { statusCode == 200 || statusCode == 204 }

        /// The client, URI, subject, session and status; never the token.
        public var description: String {
            "TestProvider.BackChannelLogoutDelivery(\(clientID), \(uri.absoluteString), sub: \(subject ?? "-"), sid: \(sessionID ?? "-"), status: \(statusCode.map(String.init) ?? "none"))"
        }
    }

    /// A logout token (§2.4) for a client, signed with the provider's current signing key:
    /// header `typ: logout+jwt`; claims `iss`, `aud` (the client), `iat`, `exp` (two minutes
    /// later), a fresh `jti`, `events` with the back-channel logout event, and `sub` and/or
    /// `sid`. Nothing is sent.
    ///
    /// - Throws: ``TestProviderError`` `.invalidConfiguration` when neither `subject` nor
    ///   `sessionID` is given (§2.4 requires one).
    public func logoutToken(clientID: String, subject: String? = nil, sessionID: String? = nil) throws -> String {
        guard subject != nil || sessionID != nil else {
            throw TestProviderError(.invalidConfiguration, "A logout token names a subject, a session, or both.")
        }
        do {
            return try core.logoutToken(clientID: clientID, subject: subject, sessionID: sessionID, now: Date())
        } catch {
            throw TestProviderError(.keyGeneration, "The logout token could not be signed: \(error.message)")
        }
    }

    /// Sends a logout token now to the back-channel logout URI of a registered client, as
    /// the provider does when a session ends at its end-session endpoint — to test your
    /// endpoint for a user or a session of your choice.
    ///
    /// ```swift
    /// let delivery = try await provider.sendBackChannelLogout(clientID: "my-web-app", sessionID: sid)
    /// #expect(delivery.statusCode == 200)
    /// ```
    ///
    /// - Parameters:
    ///   - clientID: a client registered with a ``Client/backChannelLogoutURI``.
    ///   - subject: the `sub` to name, if any.
    ///   - sessionID: the `sid` to name (an ID token's `sid`), if any.
    ///   - timeout: how long to wait for the client's answer.
    /// - Returns: the delivery, with the client's status; it is also recorded in
    ///   ``backChannelLogoutDeliveries``.
    /// - Throws: ``TestProviderError`` `.invalidConfiguration` for an unknown client, a client
    ///   without a back-channel logout URI, or neither subject nor session; `.browser` when
    ///   the client does not answer in time.
    @discardableResult
    public func sendBackChannelLogout(
        clientID: String, subject: String? = nil, sessionID: String? = nil, timeout: Duration = .seconds(10)
    ) async throws -> BackChannelLogoutDelivery {
        guard let client = core.state.withLock({ $0.clients[clientID] }) else {
            throw TestProviderError(.invalidConfiguration, "No client \(clientID) is registered.")
        }
        guard let uri = client.backChannelLogoutURI else {
            throw TestProviderError(.invalidConfiguration, "The client \(clientID) has no backChannelLogoutURI.")
        }
        let token = try logoutToken(clientID: clientID, subject: subject, sessionID: sessionID)
        return try await core.deliverLogoutToken(token, to: uri, clientID: clientID, subject: subject, sessionID: sessionID, timeout: timeout)
    }

    /// Every logout token sent so far (at the end of sessions and on demand), oldest first,
    /// with the clients' answers.
    public var backChannelLogoutDeliveries: [BackChannelLogoutDelivery] {
        core.state.withLock { $0.backChannelLogoutDeliveries }
    }
}
