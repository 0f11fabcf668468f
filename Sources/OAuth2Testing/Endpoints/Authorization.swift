import Foundation
import NIOHTTP1
import OAuth2JOSE

/// A redirect URI the client registered and the request named: where answers may go.
struct RedirectTarget {
    let uri: String
}

extension ProviderCore {
    /// `true` when `requested` is the registered URI: equal character for character, or —
    /// for a registered `http` loopback IP literal without a port — equal but for the port
    /// (RFC 8252 §7.3).
    static func redirectURI(_ requested: String, matches registered: URL) -> Bool {
        if requested == registered.absoluteString { return true }
        guard let wanted = URLComponents(url: registered, resolvingAgainstBaseURL: false), wanted.scheme == "http",
            wanted.port == nil, let host = wanted.host, ["127.0.0.1", "::1", "[::1]"].contains(host),
            let given = URLComponents(string: requested), given.scheme == "http", given.port != nil,
            given.host == wanted.host, given.user == nil, given.password == nil, given.fragment == nil,
            given.percentEncodedPath == wanted.percentEncodedPath, given.percentEncodedQuery == wanted.percentEncodedQuery
        else { return false }
        return true
    }

    /// The request's redirect URI when its client is known and registered it.
    func validatedRedirect(_ parameters: Parameters) -> RedirectTarget? {
        guard !parameters.duplicated.contains("client_id"), !parameters.duplicated.contains("redirect_uri"),
            let clientID = parameters["client_id"], let redirect = parameters["redirect_uri"],
            let client = state.withLock({ $0.clients[clientID] }),
            client.redirectURIs.contains(where: { Self.redirectURI(redirect, matches: $0) })
        else { return nil }
        return RedirectTarget(uri: redirect)
    }

    /// A redirect carrying an error to the client (RFC 6749 §4.1.2.1, RFC 9207), inside a
    /// JWT for a JARM response mode.
    func errorRedirect(_ target: RedirectTarget, code: String, description: String?, parameters: Parameters, now: Date, plain: Bool = false) -> HTTPServerReply {
        var pairs = [("error", code)]
        if let description { pairs.append(("error_description", description)) }
        if let state = parameters["state"] { pairs.append(("state", state)) }
        if sendsIssuerParameter { pairs.append(("iss", issuer)) }
        return redirect(target, pairs, mode: plain ? nil : Self.jwtResponseMode(parameters), clientID: parameters["client_id"] ?? "", now: now)
    }

    /// The request's JARM response mode, if it asked for one.
    static func jwtResponseMode(_ parameters: Parameters) -> String? {
        parameters["response_mode"].flatMap { jwtResponseModes.contains($0) ? $0 : nil }
    }

    /// The JARM response modes the provider answers with (JWT Secured Authorization Response
    /// Mode for OAuth 2.0 §2.3): `jwt` is `query.jwt` for a code response.
    static let jwtResponseModes: Set<String> = ["jwt", "query.jwt", "fragment.jwt"]

    /// How long a JARM response is valid (its `exp`): JARM advises a short lifetime.
    static let jwtResponseLifetime: TimeInterval = 600

    /// Sends `pairs` back to the redirect URI: as query parameters, or — for a JARM mode — as
    /// one `response` JWT (the pairs as claims, with `iss`, `aud` and `exp`) signed with the
    /// provider's key, encrypted to the client's key when it has
    /// ``TestProvider/Client/authorizationResponseEncryption``, in the query (`jwt`,
    /// `query.jwt`) or the fragment (`fragment.jwt`).
    func redirect(
        _ target: RedirectTarget, _ pairs: [(String, String)], mode: String?, clientID: String, now: Date, headers: [(String, String)] = []
    ) -> HTTPServerReply {
        guard let mode else { return .redirect(FormEncoding.appending(pairs, to: target.uri), headers: headers) }
        var claims: [String: JSONValue] = [:]
        for (name, value) in pairs { claims[name] = .string(value) }
        claims["iss"] = .string(issuer)
        claims["aud"] = .string(clientID)
        claims["exp"] = .integer(Int64(now.timeIntervalSince1970 + Self.jwtResponseLifetime))
        let (key, encryption) = state.withLock { ($0.signingKey, $0.clients[clientID]?.authorizationResponseEncryption) }
        let response: String
        do {
            var token = try key.sign(claims: claims)
            if let encryption {
                token = try JWE.encrypt(
                    Data(token.utf8), to: encryption.key, algorithm: encryption.algorithm, encryption: encryption.encryption, contentType: "JWT")
            }
            response = token
        } catch {
            return .html(.internalServerError, title: "Server error", "The authorization response could not be signed or encrypted.")
        }
        let answer = [("response", response)]
        if mode == "fragment.jwt" {
            let base = target.uri.split(separator: "#", maxSplits: 1).first.map(String.init) ?? target.uri
            return .redirect(base + "#" + FormEncoding.encode(answer), headers: headers)
        }
        return .redirect(FormEncoding.appending(answer, to: target.uri), headers: headers)
    }

    /// The authorization endpoint (RFC 6749 §4.1.1, OIDC Core §3.1.2): checks the request and
    /// signs in the auto-approved user (or the one `login_hint` names) without a page. The
    /// sign-in joins the browser's session when its cookie names one of the same user's, else
    /// starts one; the redirect sets the cookie (BrowserSessionCookie.swift).
    func authorize(_ request: HTTPServerRequest, now: Date) -> HTTPServerReply {
        guard request.method == .GET || request.method == .POST else { return .methodNotAllowed("GET, POST") }
        let parameters: Parameters
        switch Parameters.read(request, body: request.method == .POST) {
        case .success(let read): parameters = read
        case .failure: return .html(.badRequest, title: "Invalid request", "The request's parameters are not valid form encoding.")
        }
        // Until the client and its redirect URI are known good, errors stay here (§4.1.2.1).
        guard let clientID = parameters["client_id"], !parameters.duplicated.contains("client_id"),
            let client = state.withLock({ $0.clients[clientID] })
        else { return .html(.badRequest, title: "Unknown client", "The request names no registered client (client_id).") }
        guard let target = validatedRedirect(parameters) else {
            return .html(.badRequest, title: "Invalid redirect_uri", "The redirect_uri is missing or not registered for this client.")
        }
        let state = parameters["state"]
        // JARM: errors and answers alike go back in a signed JWT for a JARM response mode.
        if let mode = parameters["response_mode"], mode != "query", !Self.jwtResponseModes.contains(mode) {
            return errorRedirect(target, code: "invalid_request", description: "This response_mode is not supported.", parameters: parameters, now: now, plain: true)
        }
        func fail(_ code: String, _ description: String) -> HTTPServerReply {
            errorRedirect(target, code: code, description: description, parameters: parameters, now: now)
        }
        if let name = parameters.duplicated.sorted().first { return fail("invalid_request", "The parameter \(name) is repeated.") }
        guard client.grantTypes.contains(.authorizationCode) else {
            return fail("unauthorized_client", "The client may not use the authorization code grant.")
        }
        if parameters["request"] != nil { return fail("request_not_supported", "Request objects are not supported.") }
        if parameters["request_uri"] != nil { return fail("request_uri_not_supported", "request_uri is not supported.") }
        guard let responseType = parameters["response_type"] else { return fail("invalid_request", "response_type is missing.") }
        guard responseType == "code" else { return fail("unsupported_response_type", "Only response_type=code is supported.") }
        guard let challenge = parameters["code_challenge"] else {
            return fail("invalid_request", "PKCE is required: code_challenge is missing.")
        }
        guard parameters["code_challenge_method"] == "S256" else {
            return fail("invalid_request", "code_challenge_method must be S256.")
        }
        guard Check.isValidS256Challenge(challenge) else { return fail("invalid_request", "The code_challenge is not an S256 challenge.") }
        let scopes = Self.scopes(parameters["scope"])
        let forbidden = Self.forbiddenScopes(scopes, for: client)
        guard forbidden.isEmpty else { return fail("invalid_scope", "The client may not ask for: \(forbidden.joined(separator: " ")).") }
        if let invalid = Self.invalidResource(parameters.resources) { return fail("invalid_target", invalid) }
        let prompt = Set(Self.scopes(parameters["prompt"]))
        if prompt.contains("none"), prompt.count > 1 { return fail("invalid_request", "prompt=none cannot be combined.") }
        if let maxAge = parameters["max_age"], Int(maxAge).map({ $0 >= 0 }) != true {
            return fail("invalid_request", "max_age is not a number of seconds.")
        }

        let lifetime = self.state.withLock { $0.lifetimes.authorizationCode }
        let browserSessionID = Self.browserSessionID(request)
        let outcome = self.state.withLock { state -> Result<(code: String, sessionID: String), HTTPServerReply> in
            // login_hint picks a user (multi-account tests); otherwise the auto-approved one.
            guard let user = state.user(named: parameters["login_hint"]) ?? state.user(named: state.autoApprovedUser) else {
                return .failure(
                    prompt.contains("none")
                        ? fail("login_required", "No user is signed in.")
                        : fail("access_denied", "No user approves this request."))
            }
            state.prune(now: now)
            let sessionID = browserSessionID.flatMap { state.sessions[$0] == user.username ? $0 : nil } ?? Random.token(bytes: 16)
            state.sessions[sessionID] = user.username
            let code = Random.token()
            state.codes[code] = CodeRecord(
                clientID: client.id, redirectURI: target.uri, challenge: challenge, scopes: state.grantedScopes(asked: scopes), nonce: parameters["nonce"],
                username: user.username, authTime: now, sessionID: sessionID,
                acr: parameters["acr_values"]?.split(separator: " ").first.map(String.init), expiresAt: now.addingTimeInterval(lifetime.timeInterval),
                resources: parameters.resources)
            return .success((code, sessionID))
        }
        switch outcome {
        case .failure(let reply):
            return reply
        case .success(let signedIn):
            var pairs = [("code", signedIn.code)]
            if let state { pairs.append(("state", state)) }
            if sendsIssuerParameter { pairs.append(("iss", issuer)) }
            return redirect(
                target, pairs, mode: Self.jwtResponseMode(parameters), clientID: client.id, now: now,
                headers: [sessionCookie(signedIn.sessionID)])
        }
    }
}
