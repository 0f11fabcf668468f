import Foundation
import NIOHTTP1
import OAuth2JOSE

extension ProviderCore {
    /// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0 §2, §3).
    ///
    /// `id_token_hint` must be an ID token this provider signed (expired ones are fine);
    /// `post_logout_redirect_uri` must be registered for the client that `client_id` or the
    /// hint's `aud` names, and then the browser goes back there with `state`. The session
    /// the hint's `sid` names ends, and the tokens issued in it are revoked; every client that
    /// signed in through it and registered a back-channel logout URI gets a logout token
    /// (OpenID Connect Back-Channel Logout 1.0 §2.7), and the provider waits for their
    /// answers (5 s at most each) before answering the browser. Without a hint, the session
    /// the browser's cookie names ends the same way: a person signing out at the provider.
    /// The cookie is removed when its session ends. Without a post-logout redirect, a
    /// "signed out" page.
    func endSession(_ request: HTTPServerRequest, now: Date) async -> HTTPServerReply {
        guard request.method == .GET || request.method == .POST else { return .methodNotAllowed("GET, POST") }
        guard case .success(let parameters) = Parameters.read(request, body: request.method == .POST) else {
            return .html(.badRequest, title: "Invalid logout request", "The parameters are not valid form encoding.")
        }
        if let name = parameters.duplicated.sorted().first {
            return .html(.badRequest, title: "Invalid logout request", "The parameter \(name) is repeated.")
        }
        var hintClaims: [String: JSONValue]?
        if let hint = parameters["id_token_hint"] {
            guard let claims = verifiedOwnToken(hint) else {
                return .html(.badRequest, title: "Invalid logout request", "The id_token_hint is not an ID token of this provider.")
            }
            hintClaims = claims
        }
        let audience = hintClaims?["aud"].flatMap { $0.stringValue ?? $0.arrayValue?.first?.stringValue }
        if let clientID = parameters["client_id"], let audience, clientID != audience {
            return .html(.badRequest, title: "Invalid logout request", "The id_token_hint was not issued to this client_id.")
        }
        let clientID = parameters["client_id"] ?? audience
        var target: String?
        if let redirect = parameters["post_logout_redirect_uri"] {
            guard let clientID, let client = state.withLock({ $0.clients[clientID] }) else {
                return .html(.badRequest, title: "Invalid logout request", "A post_logout_redirect_uri needs a known client_id or id_token_hint.")
            }
            guard client.postLogoutRedirectURIs.contains(where: { Self.redirectURI(redirect, matches: $0) }) else {
                return .html(.badRequest, title: "Invalid logout request", "The post_logout_redirect_uri is not registered for this client.")
            }
            target = redirect
        }
        let browserSessionID = Self.browserSessionID(request)
        let ended = hintClaims.map { $0["sid"]?.stringValue } ?? browserSessionID
        if let sessionID = ended {
            // The clients that signed in through the session, with the user's subject.
            let clients = state.withLock { state -> [String: String?] in
                var clients: [String: String?] = [:]
                if let username = state.sessions[sessionID] {
                    let subject = state.user(named: username)?.subject
                    for code in state.codes.values where code.sessionID == sessionID { clients.updateValue(subject, forKey: code.clientID) }
                }
                for grant in state.grants.values where grant.sessionID == sessionID { clients.updateValue(grant.subject, forKey: grant.clientID) }
                state.sessions[sessionID] = nil
                for grant in state.grants.values where grant.sessionID == sessionID { state.revokeGrant(grant.id) }
                return clients
            }
            await notifyBackChannelLogout(sessionID: sessionID, clients: clients, now: now)
        }
        let cookie = browserSessionID != nil && browserSessionID == ended ? [expiredSessionCookie] : []
        guard let target else { return .html(.ok, title: "Signed out", "You are signed out.", headers: cookie) }
        var pairs: [(String, String)] = []
        if let value = parameters["state"] { pairs.append(("state", value)) }
        return .redirect(FormEncoding.appending(pairs, to: target), headers: cookie)
    }

    /// The claims of a JWS this provider signed with one of its published keys and whose
    /// `iss` is this issuer; `nil` otherwise.
    private func verifiedOwnToken(_ compact: String) -> [String: JSONValue]? {
        guard let jws = try? JWS(compact: compact) else { return nil }
        let keys = state.withLock { $0.keys.compactMap(\.publicKey) }
        guard keys.contains(where: { ($0.keyID == nil || $0.keyID == jws.keyID) && jws.isSigned(by: $0) }),
            let claims = try? jws.claims(), claims["iss"]?.stringValue == issuer
        else { return nil }
        return claims
    }
}
