#if MCP
import Foundation
import HTTPTypes
import MCP
import OAuth2
import OAuth2Internals

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The MCP Swift SDK's `HTTPClientAuthorizer` backed by a swift-oauth2 `TokenSession`:
/// the SDK's `HTTPClientTransport` sends the session's access token, and the session keeps it
/// fresh, stored and shared.
///
/// ```swift
/// let authorizer = TokenSessionAuthorizer(session: session)
/// let transport = HTTPClientTransport(
///     endpoint: mcp, streaming: false,
///     authorizer: authorizer, requestModifier: authorizer.requestModifier)
/// let client = Client(name: "my-agent", version: "1.0.0")
/// try await client.connect(transport: transport)
/// ```
///
/// What the session brings to the SDK's client:
/// - its `TokenStore`: a `FileTokenStore` (or the keyring, or PostgreSQL) keeps the tokens
///   across processes, and a rotated refresh token is saved before it is used;
/// - one refresh for every task and every process sharing the store
///   (`TokenSession/freshTokens()` renews under the store's lock);
/// - step-up through `TokenSession/Options/stepUp` when a tool needs more scope;
/// - DPoP (RFC 9449) when the session's tokens are DPoP-bound: the header is
///   `Authorization: DPoP <token>` and ``requestModifier`` adds a fresh `DPoP` proof to each
///   request. Pass it to `HTTPClientTransport(requestModifier:)`: without it a DPoP-bound token
///   goes without its proof and the server refuses it.
///
/// How it answers the transport:
/// - ``prepareAuthorization(for:session:)`` (before each request) asks the session for fresh
///   tokens — renewing them when they expire within the session's leeway — and keeps them
///   for ``authorizationHeader(for:)``, which the SDK calls synchronously;
/// - ``handleChallenge(statusCode:headers:endpoint:operationKey:session:)``: a `401` whose
///   challenge is `invalid_token` (or names no error) renews the token once (a renewed token
///   refused too is not renewed again); a `401` `DPoP error="use_dpop_nonce"` with a
///   `DPoP-Nonce` is answered once with that nonce; a `403 insufficient_scope` naming scopes
///   runs the session's step-up for the union of the granted and the named scopes, at most
///   once per operation and scope set; any other answer is left to the transport (`false`).
///
/// The session sends every token request through its own client and transport: the
/// `URLSession` the SDK passes is not used.
public final class TokenSessionAuthorizer: HTTPClientAuthorizer, Sendable {
    /// The session whose tokens the transport sends.
    public let session: TokenSession
    /// How many times the transport may send one request again after a challenge this
    /// authorizer answered (the SDK's bound). Default 3: a renewal, a nonce, a step-up.
    public let maxAuthorizationAttempts: Int

    private let signIn: (@Sendable (OAuth2Client) async throws -> TokenSet)?
    private let now: @Sendable () -> Date
    private let state = Locked(State())

    /// What the synchronous hooks read: the tokens last obtained, and what limits retries.
    struct State {
        /// The tokens `authorizationHeader(for:)` sends.
        var tokens: TokenSet?
        /// The DPoP key those tokens are bound to (the session's, read with them).
        var dpopKey: DPoPKey?
        /// The latest DPoP nonce the MCP server gave.
        var dpopNonce: String?
        /// The access token obtained in answer to a `401`: when it is refused too, it is not
        /// renewed again.
        var renewedAfterRefusal: String?
        /// The step-ups made, by operation and scope set.
        var stepUps: Set<String> = []
    }

    /// Creates an authorizer sending `session`'s tokens.
    ///
    /// - Parameters:
    ///   - session: the session of the MCP server's resource (its `DiscoveredResource/account`
    ///     keeps the tokens of two servers apart).
    ///   - signIn: signs in when the session has no tokens or the server refused its refresh
    ///     token (`OAuth2Error/Code/signInRequired`): an authorization-code flow bound to the
    ///     resource, a device flow…; its tokens become the session's. `nil`: such a challenge
    ///     fails with `OAuth2Error/Code/signInRequired`.
    ///   - maxAuthorizationAttempts: the SDK's bound on retries of one request (at least 1).
    public convenience init(
        session: TokenSession,
        signIn: (@Sendable (OAuth2Client) async throws -> TokenSet)? = nil,
        maxAuthorizationAttempts: Int = 3
    ) {
        self.init(session: session, signIn: signIn, maxAuthorizationAttempts: maxAuthorizationAttempts, now: { Date() })
    }

    /// The same, with the clock of the DPoP proofs' `iat` (tests).
    init(
        session: TokenSession,
        signIn: (@Sendable (OAuth2Client) async throws -> TokenSet)?,
        maxAuthorizationAttempts: Int,
        now: @escaping @Sendable () -> Date
    ) {
        self.session = session
        self.signIn = signIn
        self.maxAuthorizationAttempts = max(1, maxAuthorizationAttempts)
        self.now = now
    }

    // MARK: - HTTPClientAuthorizer

    /// Refuses an MCP endpoint a token must not go to: one neither HTTPS nor plain HTTP on a
    /// loopback host, or one with a fragment.
    ///
    /// - Throws: `OAuth2Error/Code/insecureEndpoint`; `OAuth2Error/Code/invalidConfiguration`
    ///   for a fragment.
    public func validateEndpointSecurity(for endpoint: URL) throws {
        try EndpointPolicy.validate(endpoint, name: "MCP endpoint")
    }

    /// The `Authorization` value of the tokens last obtained: `Bearer <token>`, or
    /// `DPoP <token>` for a DPoP-bound token (whose proof ``requestModifier`` adds); `nil`
    /// before the session has any.
    public func authorizationHeader(for endpoint: URL) -> String? {
        state.withLock { state in state.tokens.map { "\($0.tokenType.rawValue) \($0.accessToken)" } }
    }

    /// Gets fresh tokens from the session before a request — renewing them when they expire
    /// within its leeway, once for every task and process sharing its store — and keeps them
    /// for ``authorizationHeader(for:)``.
    ///
    /// The transport ignores what this throws (it then sends what it has, and a `401` leads
    /// to ``handleChallenge(statusCode:headers:endpoint:operationKey:session:)``).
    ///
    /// - Throws: as `TokenSession/freshTokens()`.
    public func prepareAuthorization(for endpoint: URL, session _: URLSession) async throws {
        let tokens = try await session.freshTokens()
        let nonce = await session.client.dpopNonces.nonce(for: endpoint)
        keep(tokens, nonce: nonce)
    }

    /// Answers a `401` or `403` of the MCP server (see the type's documentation).
    ///
    /// - Returns: `true` when the request should be sent again with
    ///   ``authorizationHeader(for:)``'s new value; `false` when this challenge is not one a
    ///   new token answers, or was answered already.
    /// - Throws: `OAuth2Error/Code/signInRequired` when the session has no tokens (or the
    ///   server refused its refresh token) and there is no `signIn`; what the session's
    ///   renewal, step-up and store throw. The SDK reports it as "Authorization flow failed".
    public func handleChallenge(
        statusCode: Int, headers: [String: String], endpoint: URL, operationKey: String?, session _: URLSession
    ) async throws -> Bool {
        let challenges = Self.challenges(in: headers)
        switch statusCode {
        case 401:
            if let nonce = Self.nonceAsked(challenges: challenges, headers: headers) {
                let fresh = state.withLock { state in
                    guard state.dpopNonce != nonce else { return false }
                    state.dpopNonce = nonce
                    return true
                }
                if fresh { await session.client.dpopNonces.remember(nonce, for: endpoint) }
                return fresh
            }
            guard Self.refusesToken(challenges) else { return false }
            return try await renewAfterRefusal()
        case 403:
            guard let wanted = Self.insufficientScope(challenges) else { return false }
            return try await stepUp(for: wanted, operation: operationKey)
        default:
            return false
        }
    }

    // MARK: - DPoP

    /// Adds a DPoP proof (RFC 9449 §7) to a request whose `Authorization` is `DPoP <token>`:
    /// signed with the session's key, for the request's method and URL, with `ath` and the
    /// server's latest nonce. Other requests pass unchanged.
    ///
    /// Pass it to the SDK's transport with the authorizer:
    /// `HTTPClientTransport(endpoint:authorizer:requestModifier: authorizer.requestModifier)`.
    public var requestModifier: @Sendable (URLRequest) -> URLRequest {
        { [self] request in addingProof(to: request) }
    }

    /// `request` with its DPoP proof, when its token is DPoP-bound.
    func addingProof(to request: URLRequest) -> URLRequest {
        guard let authorization = request.value(forHTTPHeaderField: "Authorization"),
            authorization.count > 5, authorization.prefix(5).lowercased() == "dpop ",
            let url = request.url, let method = HTTPRequest.Method(request.httpMethod ?? "GET")
        else { return request }
        let (key, nonce) = state.withLock { ($0.dpopKey, $0.dpopNonce) }
        guard let key,
            let proof = try? key.proof(
                method: method, url: url, accessToken: String(authorization.dropFirst(5)), nonce: nonce, issuedAt: now())
        else { return request }
        var request = request
        request.setValue(proof, forHTTPHeaderField: "DPoP")
        return request
    }

    // MARK: - Renewal and step-up

    /// Keeps `tokens` (and the DPoP key they are bound to) for the synchronous hooks.
    private func keep(_ tokens: TokenSet, nonce: String? = nil) {
        let key = tokens.tokenType == .dpop ? session.client.configuration.dpop?.key : nil
        state.withLock { state in
            state.tokens = tokens
            state.dpopKey = key
            if let nonce { state.dpopNonce = nonce }
        }
    }

    /// A `401` refused the token sent: renew it once (sign in when there is nothing to renew).
    private func renewAfterRefusal() async throws -> Bool {
        let (sent, renewed) = state.withLock { ($0.tokens?.accessToken, $0.renewedAfterRefusal) }
        if let sent, sent == renewed { return false }
        let tokens: TokenSet
        do {
            tokens = sent == nil ? try await session.freshTokens() : try await session.refresh()
        } catch let error as OAuth2Error where error.code == .signInRequired {
            guard let signIn else { throw error }
            tokens = try await session.signIn(signIn)
        }
        keep(tokens)
        state.withLock { $0.renewedAfterRefusal = tokens.accessToken }
        return true
    }

    /// A `403 insufficient_scope`: the session's step-up for the union of the scopes, once
    /// per operation and scope set.
    private func stepUp(for wanted: [String], operation: String?) async throws -> Bool {
        guard let stepUp = session.options.stepUp else { return false }
        var scopes = state.withLock { $0.tokens?.scopes } ?? session.tokens?.scopes ?? session.client.configuration.scopes
        for scope in wanted where !scopes.contains(scope) { scopes.append(scope) }
        let union = scopes
        let attempt = (operation ?? "") + "\u{0}" + union.sorted().joined(separator: " ")
        guard state.withLock({ $0.stepUps.insert(attempt).inserted }) else { return false }
        let tokens = try await session.signIn { client in try await stepUp(client, union) }
        keep(tokens)
        return true
    }

    // MARK: - Challenges

    /// The challenges of the response's `WWW-Authenticate` headers (the SDK joins several
    /// into one value, separated by commas).
    static func challenges(in headers: [String: String]) -> [WWWAuthenticate] {
        guard let value = header("WWW-Authenticate", in: headers) else { return [] }
        // Split at commas outside quotes; a part that starts with a token followed by a
        // space (or is a lone token) begins a new challenge, the others are its parameters.
        var parts: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in value {
            if escaped {
                escaped = false
            } else if character == "\\" && quoted {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                parts.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        parts.append(current)
        var challenges: [String] = []
        for part in parts {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            let first = trimmed.prefix(while: { $0 != " " && $0 != "\t" && $0 != "=" })
            let next = trimmed.dropFirst(first.count).drop(while: { $0 == " " || $0 == "\t" }).first
            let startsChallenge = !first.isEmpty && next != "="
            if startsChallenge || challenges.isEmpty {
                challenges.append(trimmed)
            } else {
                challenges[challenges.count - 1] += ", " + trimmed
            }
        }
        return challenges.compactMap(WWWAuthenticate.init)
    }

    /// Whether a `401`'s challenges say the token was refused in a way a new one cures: a
    /// `Bearer`/`DPoP` challenge with `invalid_token`, or none naming an error.
    static func refusesToken(_ challenges: [WWWAuthenticate]) -> Bool {
        for challenge in challenges where ["bearer", "dpop"].contains(challenge.scheme.lowercased()) {
            if let error = challenge.parameters["error"] { return error == "invalid_token" }
        }
        return true
    }

    /// The nonce a `401` `DPoP error="use_dpop_nonce"` challenge asks for (its `DPoP-Nonce`
    /// header), else `nil`.
    static func nonceAsked(challenges: [WWWAuthenticate], headers: [String: String]) -> String? {
        guard challenges.contains(where: { $0.scheme.lowercased() == "dpop" && $0.parameters["error"] == "use_dpop_nonce" }),
            let nonce = header("DPoP-Nonce", in: headers)?.trimmingCharacters(in: .whitespaces), !nonce.isEmpty,
            nonce.utf8.count <= 1024,
            nonce.utf8.allSatisfy({ $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) })
        else { return nil }
        return nonce
    }

    /// The scopes a `403`'s `insufficient_scope` challenge names (RFC 6750 §3.1); `nil` for
    /// any other challenge or one naming none.
    static func insufficientScope(_ challenges: [WWWAuthenticate]) -> [String]? {
        for challenge in challenges
        where ["bearer", "dpop"].contains(challenge.scheme.lowercased()) && challenge.parameters["error"] == "insufficient_scope" {
            let scopes = (challenge.parameters["scope"] ?? "").split(separator: " ").map(String.init)
            if !scopes.isEmpty { return scopes }
        }
        return nil
    }

    /// A header's value, whatever the case of its name.
    static func header(_ name: String, in headers: [String: String]) -> String? {
        if let value = headers[name] { return value }
        let lowered = name.lowercased()
        return headers.first(where: { $0.key.lowercased() == lowered })?.value
    }
}
#endif
