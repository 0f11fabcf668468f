extension TokenIntrospector {
    /// What an introspection answer (RFC 7662 §2.2) must name for this API to accept the
    /// token: the API's audience or, for authorization servers whose answers carry no `aud`
    /// (django-oauth-toolkit's), the clients or scopes the API serves.
    ///
    /// An authorization server says `active: true` for every live token it issued — to any
    /// client, for any API — so "active" alone does not mean "for this API" (RFC 7662 §4).
    ///
    /// - An answer **with** an `aud` is accepted when it names one of ``audiences``; its
    ///   `client_id` and `scope` do not matter then: a token for another API is refused,
    ///   whoever presents it.
    /// - An answer **without** `aud` is accepted when its `client_id` is one of ``clientIDs``,
    ///   or its `scope` holds one of ``scopes``.
    /// - Nothing stated accepts nothing. Accepting every active token is a choice of its own,
    ///   ``anyActiveToken``, never a default.
    ///
    /// ```swift
    /// TokenIntrospector(client: client, accepting: .audiences(["https://api.example.com"]))
    /// // django-oauth-toolkit: no aud; the API serves the clients it names.
    /// TokenIntrospector(client: client, accepting: .clientIDs(["orders-web", "orders-cli"]))
    /// ```
    public struct AcceptedTokens: Sendable, Hashable {
        /// The audiences that name this API: an answer with an `aud` must name one of them.
        public let audiences: Set<String>
        /// The clients this API serves: an answer without `aud` is accepted when its
        /// `client_id` is one of them.
        public let clientIDs: Set<String>
        /// The scopes that grant access to this API: an answer without `aud` is accepted when
        /// its `scope` holds one of them. (The scopes a route requires are checked apart, with
        /// `requiredScopes`.)
        public let scopes: Set<String>
        /// Whether every active token is accepted, whatever it names (``anyActiveToken``).
        public let acceptsAnyActiveToken: Bool

        /// Accepts tokens whose answer names one of `audiences` in its `aud`, or, without
        /// `aud`, whose `client_id` is one of `clientIDs` or whose `scope` holds one of
        /// `scopes`. With all three empty, no token is accepted.
        public init(audiences: Set<String> = [], clientIDs: Set<String> = [], scopes: Set<String> = []) {
            self.audiences = audiences
            self.clientIDs = clientIDs
            self.scopes = scopes
            acceptsAnyActiveToken = false
        }

        private init(anyActiveToken: Void) {
            audiences = []
            clientIDs = []
            scopes = []
            acceptsAnyActiveToken = true
        }

        /// Tokens whose answer's `aud` names one of `audiences` (an answer without `aud` is
        /// refused).
        public static func audiences(_ audiences: Set<String>) -> AcceptedTokens { AcceptedTokens(audiences: audiences) }

        /// Tokens issued to one of `clientIDs`, for an authorization server whose answers
        /// carry no `aud` (an answer with an `aud` is refused: it names another API).
        public static func clientIDs(_ clientIDs: Set<String>) -> AcceptedTokens { AcceptedTokens(clientIDs: clientIDs) }

        /// Tokens that grant one of `scopes`, for an authorization server whose answers carry
        /// no `aud` (an answer with an `aud` is refused: it names another API).
        public static func scopes(_ scopes: Set<String>) -> AcceptedTokens { AcceptedTokens(scopes: scopes) }

        /// **Every active token of the authorization server**, whoever it was issued to and
        /// whichever API it was meant for. Dangerous: a token a user granted to any other
        /// app, or one another API received (and may replay), then calls this API with that
        /// user's rights. Choose it only when the authorization server issues tokens for this
        /// API alone, to clients this API serves.
        public static let anyActiveToken = AcceptedTokens(anyActiveToken: ())

        /// Whether an answer's `aud`, `client_id` and `scope` name this API.
        func accept(audience: [String]?, clientID: String?, scopes granted: [String]?) -> Bool {
            if acceptsAnyActiveToken { return true }
            if let audience { return audience.contains(where: audiences.contains) }
            if let clientID, clientIDs.contains(clientID) { return true }
            return (granted ?? []).contains(where: scopes.contains)
        }
    }
}
