import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// The backend of a single-page app that never holds a token (the "backend for frontend"
/// pattern): the browser has only ``WebSignIn``'s session cookie, and the app's
/// JavaScript reaches its APIs through this backend, which adds the user's access token.
///
/// ```swift
/// let signIn = WebSignIn(client: client, configuration: WebSignInConfiguration(publicBaseURL: appURL))
/// let backend = SinglePageAppBackend(signIn: signIn, configuration: .init(apis: [
///     .init(pathPrefix: "/bff/api/orders", destination: URL(string: "https://orders.example.com/v1")!),
/// ]), transport: AsyncHTTPClientProxyTransport())
///
/// // In the app's request handling, after the sign-in's own routes:
/// if backend.route(of: request) != nil { return await backend.handle(request, body: body) }
/// ```
///
/// Its routes, besides WebSignIn's (login with a checked `returnTo`, logout with the
/// session's CSRF token):
/// - ``Configuration/userPath`` (GET): the signed-in user's claims and the session's CSRF
///   token (for the sign-out form) as JSON, or 401 with JSON saying why — never a redirect,
///   which a `fetch` would follow to the provider's page.
/// - Each ``ProxiedAPI/pathPrefix``: the request is forwarded to the API with the user's
///   access token (renewed first when due: once for all concurrent calls, and with a shared
///   token store once for all replicas; DPoP-bound when the client is, with one retry for
///   a `use_dpop_nonce` challenge), bodies streamed both ways; the browser's cookies,
///   `Authorization` and hop-by-hop fields do not go; the API's `Set-Cookie` and hop-by-hop
///   fields do not come back; the API's 401 becomes "sign in again".
///
/// Every one of these requests must carry the anti-forgery header
/// (``Configuration/antiForgeryHeader``, value `1`): a cross-site page cannot add it
/// without a CORS preflight, which this backend never grants. `Sec-Fetch-Site`, when the
/// browser sends it, must be `same-origin`, and `Origin`, when sent, the app's own. A
/// request that fails is refused (403) before any session or token is looked at.
///
/// What an unauthenticated request can cost: the path match, the header checks, and at
/// most WebSignIn's bounded session lookups (two per request); never a token renewal nor
/// a call to an API.
public struct SinglePageAppBackend: Sendable {
    /// The app's sign-in: its sessions, tokens and client.
    public let signIn: WebSignIn
    /// The routes and the APIs.
    public let configuration: Configuration
    private let transport: any WebProxyTransport
    private let logger: Logger

    /// Where a single-page app's backend answers, and what it forwards.
    public struct Configuration: Sendable {
        /// The route that answers the signed-in user as JSON (GET).
        public var userPath: String
        /// The APIs reached through the backend, each under its own path prefix.
        public var apis: [ProxiedAPI]
        /// The header every request of the app to the backend carries, with the value `1`.
        /// A cross-site page cannot send it without a CORS preflight the backend never
        /// grants. `X-CSRF` by default.
        public var antiForgeryHeader: HTTPField.Name
        /// The longest a proxied exchange may last, the body streamed both ways included.
        public var timeout: Duration

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - userPath: the user route (`/bff/user`).
        ///   - apis: the proxied APIs.
        ///   - antiForgeryHeader: the header the app's requests carry (`X-CSRF: 1`).
        ///   - timeout: a proxied exchange's deadline (60 s).
        public init(
            userPath: String = "/bff/user", apis: [ProxiedAPI] = [], antiForgeryHeader: HTTPField.Name = HTTPField.Name("X-CSRF")!,
            timeout: Duration = .seconds(60)
        ) {
            self.userPath = userPath
            self.apis = apis
            self.antiForgeryHeader = antiForgeryHeader
            self.timeout = timeout
        }
    }

    /// An API the app reaches through the backend: a request to ``pathPrefix`` + `/rest`
    /// goes to ``destination`` + `/rest`, query kept.
    public struct ProxiedAPI: Sendable, Hashable {
        /// The path under which the app calls the API (`/bff/api/orders`), without a trailing `/`.
        public var pathPrefix: String
        /// The API's base URL (HTTPS, or plain HTTP on a loopback host: the token goes there).
        public var destination: URL

        /// Creates a proxied API.
        public init(pathPrefix: String, destination: URL) {
            var prefix = pathPrefix
            while prefix.hasSuffix("/") { prefix.removeLast() }
            self.pathPrefix = prefix.hasPrefix("/") ? prefix : "/" + prefix
            self.destination = destination
        }
    }

    /// The backend's routes.
    public enum Route: Sendable, Hashable {
        /// ``Configuration/userPath``.
        case user
        /// The API of ``Configuration/apis`` at this index.
        case api(Int)
    }

    /// Creates the backend.
    ///
    /// - Parameters:
    ///   - signIn: the app's sign-in (its routes stay its own: add both to the app).
    ///   - configuration: the user route, the APIs, the anti-forgery header.
    ///   - transport: how the APIs are reached (`AsyncHTTPClientProxyTransport`).
    ///   - logger: refusals and failures at debug level (reasons, never values).
    public init(signIn: WebSignIn, configuration: Configuration, transport: any WebProxyTransport, logger: Logger = Logger(label: "swift-oauth2.spa-backend")) {
        self.signIn = signIn
        self.configuration = configuration
        self.transport = transport
        self.logger = logger
    }

    /// The backend route `request` is for, by its path; `nil` for any other.
    public func route(of request: HTTPRequest) -> Route? {
        let path = WebSignIn.path(of: request)
        if path.utf8.elementsEqual(configuration.userPath.utf8) { return .user }
        for (index, api) in configuration.apis.enumerated() where Self.remainder(of: path, under: api.pathPrefix) != nil {
            return .api(index)
        }
        return nil
    }

    /// Answers a request to one of the backend's routes; `nil` for any other path.
    ///
    /// - Parameters:
    ///   - request: the request's head.
    ///   - body: its body, streamed to the API (`nil`: none); the user route reads none.
    public func handle(_ request: HTTPRequest, body: WebStreamBody? = nil) async -> WebStreamResponse? {
        switch route(of: request) {
        case .user: WebStreamResponse(await user(request))
        case .api(let index): await proxy(request, to: configuration.apis[index], body: body)
        case nil: nil
        }
    }

    // MARK: The user

    /// The user route: the signed-in user as JSON (`sub`, `iss`, `claims`, `csrf`), or 401
    /// JSON: `{"error": "not_signed_in"}` without a session cookie, `{"error":
    /// "session_expired"}` (and the cookie cleared) when the cookie's session has ended.
    public func user(_ request: HTTPRequest) async -> WebResponse {
        guard request.method == .get || request.method == .head else {
            var answer = Self.json(.methodNotAllowed, ["error": "method_not_allowed"])
            answer.headerFields[.allow] = "GET"
            return answer
        }
        if let refusal = antiForgeryRefusal(request) { return refusal }
        let record: WebSessionRecord
        switch await session(request) {
        case .found(let found): record = found
        case .refused(let answer): return answer
        }
        return Self.json(.ok, [
            "sub": .string(record.subject), "iss": .string(record.issuer), "claims": .object(record.claims),
            "csrf": .string(record.csrfToken), "logout": .string(signIn.configuration.logoutPath),
        ])
    }

    // MARK: The proxy

    /// Forwards `request` to `api` with the user's access token, streaming both bodies.
    ///
    /// - 403: the anti-forgery checks failed (before anything else); 401 JSON: no session,
    ///   an ended one (`session_expired`), tokens that can no longer be renewed
    ///   (`session_expired`, the session ended), or the API refused the token
    ///   (`token_refused`); 400: a path that climbs out of the prefix; 502/504: the API
    ///   could not be reached in time; 503: the provider or store could not answer now,
    ///   or a DPoP nonce was learnt on a request whose body cannot be sent twice (again at once).
    public func proxy(_ request: HTTPRequest, to api: ProxiedAPI, body: WebStreamBody?) async -> WebStreamResponse {
        if let refusal = antiForgeryRefusal(request) { return WebStreamResponse(refusal) }
        guard let destination = Self.destination(of: request, under: api) else {
            return WebStreamResponse(Self.json(.badRequest, ["error": "invalid_path"]))
        }
        let record: WebSessionRecord
        switch await session(request) {
        case .found(let found): record = found
        case .refused(let answer): return WebStreamResponse(answer)
        }
        let tokens = signIn.webUser(record).tokenSession
        let contentLength = request.headerFields[.contentLength].flatMap { Int($0) }
        let sentBody = body != nil && (contentLength ?? 1) > 0 ? body : nil
        var outgoing = HTTPRequest(method: request.method, url: destination)
        outgoing.headerFields = Self.forwardedRequestFields(request.headerFields, antiForgeryHeader: configuration.antiForgeryHeader)
        var exchange = await send(outgoing, tokens: tokens, record: record, body: sentBody, contentLength: contentLength)
        if case .answered(let head, let responseBody) = exchange, let nonce = Self.dpopNonceChallenge(head) {
            await signIn.client.dpopNonces.remember(nonce, for: destination)
            guard sentBody == nil else {
                // The body went once and cannot go again: the app sends the call again,
                // and the nonce is now known.
                logger.debug("Proxy: a DPoP nonce learnt on a request with a body; the app retries")
                var answer = Self.json(.serviceUnavailable, ["error": "retry"])
                answer.headerFields[.retryAfter] = "0"
                return WebStreamResponse(answer)
            }
            _ = try? await responseBody.prefix(bytes: 64 * 1024)
            exchange = await send(outgoing, tokens: tokens, record: record, body: nil, contentLength: nil)
        }
        switch exchange {
        case .refused(let answer):
            return WebStreamResponse(answer)
        case .answered(let head, let responseBody):
            if head.status.code == 401 {
                logger.debug("Proxy: the API refused the user's token")
                return WebStreamResponse(Self.signInAgain("token_refused"))
            }
            var answer = HTTPResponse(status: head.status)
            answer.headerFields = Self.forwardedResponseFields(head.headerFields)
            let length = head.headerFields[.contentLength].flatMap { Int($0) }
            return WebStreamResponse(head: answer, body: responseBody, contentLength: length)
        }
    }

    private enum Exchange {
        case answered(HTTPResponse, WebStreamBody)
        case refused(WebResponse)
    }

    /// Sends `request` with the user's access token (renewed first when due) through the
    /// transport; a renewal or transport failure as the answer to give.
    private func send(_ request: HTTPRequest, tokens: TokenSession, record: WebSessionRecord, body: WebStreamBody?, contentLength: Int?) async -> Exchange {
        let authorized: HTTPRequest
        do {
            authorized = try await tokens.authorize(request)
        } catch let error as OAuth2Error where error.code == .signInRequired || error.code == .invalidGrant {
            // The tokens can no longer be renewed: the session is over.
            logger.debug("Proxy: the session's tokens cannot be renewed", metadata: ["code": "\(error.code.rawValue)"])
            try? await signIn.end([record])
            var answer = Self.signInAgain("session_expired")
            answer.headerFields.append(HTTPField(name: .setCookie, value: clearCookie))
            return .refused(answer)
        } catch let error as OAuth2Error where error.code == .insecureEndpoint || error.code == .invalidConfiguration {
            logger.debug("Proxy: the API cannot be sent a token", metadata: ["code": "\(error.code.rawValue)"])
            return .refused(Self.json(.badGateway, ["error": "api_misconfigured"]))
        } catch {
            logger.debug("Proxy: the token could not be renewed now", metadata: ["error": "\(type(of: error))"])
            return .refused(Self.json(.serviceUnavailable, ["error": "unavailable"]))
        }
        do {
            let (head, responseBody) = try await transport.send(authorized, body: body, contentLength: body == nil ? nil : contentLength, deadline: configuration.timeout)
            return .answered(head, responseBody)
        } catch {
            let timedOut = (error as? OAuth2Error)?.code == .timeout
            logger.debug("Proxy: the API could not be reached", metadata: ["error": "\(type(of: error))"])
            return .refused(Self.json(timedOut ? .gatewayTimeout : .badGateway, ["error": timedOut ? "api_timeout" : "api_unreachable"]))
        }
    }

    // MARK: Rules

    /// What the anti-forgery checks answer: `nil` when `request` passes, else 403 JSON.
    /// No store or token is touched.
    func antiForgeryRefusal(_ request: HTTPRequest) -> WebResponse? {
        guard let reason = Self.forgeryReason(request, header: configuration.antiForgeryHeader, appOrigin: signIn.configuration.publicBaseURL) else {
            return nil
        }
        logger.debug("Backend request refused", metadata: ["reason": "\(reason)"])
        return Self.json(.forbidden, ["error": "forbidden", "reason": .string(reason)])
    }

    /// Why `request` may be a cross-site forgery, or `nil`: the anti-forgery header must be
    /// `1`; `Sec-Fetch-Site`, when sent, `same-origin`; `Origin`, when sent, the app's.
    package static func forgeryReason(_ request: HTTPRequest, header: HTTPField.Name, appOrigin: URL) -> String? {
        let values = request.headerFields[values: header]
        guard values.count == 1, values[0].trimmingCharacters(in: .whitespaces) == "1" else { return "no_anti_forgery_header" }
        let sites = request.headerFields[values: .secFetchSite]
        if !sites.isEmpty, sites != ["same-origin"] { return "cross_site" }
        let origins = request.headerFields[values: .origin]
        if !origins.isEmpty {
            guard origins.count == 1, origins[0] != "null", let url = URL(string: origins[0]), url.host != nil,
                ReturnTo.origin(url) == ReturnTo.origin(appOrigin)
            else { return "cross_origin" }
        }
        return nil
    }

    /// Where `request` goes under `api`: the destination's path + what follows the prefix,
    /// with the query; `nil` for a path that could climb out of it (dot segments, encoded
    /// slashes or backslashes) or is not under the prefix.
    package static func destination(of request: HTTPRequest, under api: ProxiedAPI) -> URL? {
        let path = WebSignIn.path(of: request)
        guard let rest = remainder(of: path, under: api.pathPrefix) else { return nil }
        let lowered = rest.lowercased()
        guard !lowered.contains("%2f"), !lowered.contains("%5c"), !rest.contains("\\") else { return nil }
        for segment in lowered.split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = segment.replacingOccurrences(of: "%2e", with: ".")
            if decoded == "." || decoded == ".." { return nil }
        }
        var base = api.destination.absoluteString
        if let mark = base.firstIndex(where: { $0 == "?" || $0 == "#" }) { base = String(base[..<mark]) }
        while base.hasSuffix("/") { base.removeLast() }
        let query = WebSignIn.rawQuery(of: request).map { "?" + $0 } ?? ""
        return URL(string: base + rest + query)
    }

    /// What follows `prefix` in `path` (empty, or starting with `/`), when `path` is under it.
    static func remainder(of path: Substring, under prefix: String) -> Substring? {
        guard path.hasPrefix(prefix) else { return nil }
        let rest = path.dropFirst(prefix.count)
        return rest.isEmpty || rest.hasPrefix("/") ? rest : nil
    }

    /// The hop-by-hop fields (RFC 9110 §7.6.1), which a proxy never forwards.
    static let hopByHop: Set<HTTPField.Name> = [
        .connection, HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!, .te, .transferEncoding, .upgrade,
        HTTPField.Name("Trailer")!, .proxyAuthenticate, .proxyAuthorization,
    ]

    /// The fields of the browser's request that go to the API: all but the hop-by-hop ones
    /// (and those `Connection` names), the browser's cookies and credentials (`Cookie`,
    /// `Authorization`, `DPoP`), `Origin`, `Host` (the API's is its URL's), and the
    /// anti-forgery header.
    package static func forwardedRequestFields(_ fields: HTTPFields, antiForgeryHeader: HTTPField.Name) -> HTTPFields {
        var dropped = hopByHop.union(connectionNamed(fields))
        dropped.formUnion([.cookie, .authorization, .dpop, .origin, host, antiForgeryHeader])
        return HTTPFields(fields.filter { !dropped.contains($0.name) })
    }

    /// The fields of the API's answer that go to the browser: all but the hop-by-hop ones
    /// (and those `Connection` names) and `Set-Cookie` (the API's cookies would land on the
    /// app's origin); `X-Content-Type-Options: nosniff` added when absent.
    package static func forwardedResponseFields(_ fields: HTTPFields) -> HTTPFields {
        var dropped = hopByHop.union(connectionNamed(fields))
        dropped.insert(.setCookie)
        return WebResponse.hardened(HTTPFields(fields.filter { !dropped.contains($0.name) }))
    }

    /// `Host`, which some adapters copy into the fields (swift-http-types keeps it as the
    /// request's authority).
    static let host = HTTPField.Name("Host")!

    /// The fields a `Connection` header names (RFC 9110 §7.6.1).
    static func connectionNamed(_ fields: HTTPFields) -> Set<HTTPField.Name> {
        var names: Set<HTTPField.Name> = []
        for value in fields[values: .connection] {
            for token in value.split(separator: ",") {
                if let name = HTTPField.Name(token.trimmingCharacters(in: .whitespaces)) { names.insert(name) }
            }
        }
        return names
    }

    /// The nonce of a `401` with `WWW-Authenticate: DPoP error="use_dpop_nonce"` and a
    /// `DPoP-Nonce` (RFC 9449 §9), else `nil`.
    static func dpopNonceChallenge(_ response: HTTPResponse) -> String? {
        guard response.status.code == 401, let nonce = response.headerFields[.dpopNonce] else { return nil }
        for value in response.headerFields[values: .wwwAuthenticate] where value.range(of: "use_dpop_nonce") != nil {
            if value.lowercased().hasPrefix("dpop") { return nonce.trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    // MARK: Sessions

    private enum SessionLookup {
        case found(WebSessionRecord)
        case refused(WebResponse)
    }

    /// The request's live session, or the 401 (503) to answer.
    private func session(_ request: HTTPRequest) async -> SessionLookup {
        let record: WebSessionRecord?
        do {
            record = try await signIn.currentRecord(request)
        } catch {
            logger.debug("Backend: the session store could not be read", metadata: ["error": "\(type(of: error))"])
            return .refused(Self.json(.serviceUnavailable, ["error": "unavailable"]))
        }
        if let record {
            try? await signIn.touchIfDue(record)
            return .found(record)
        }
        guard !WebCookies.ids(named: signIn.configuration.cookieName, in: request.headerFields, limit: 1).isEmpty else {
            return .refused(Self.signInAgain("not_signed_in"))
        }
        var answer = Self.signInAgain("session_expired")
        answer.headerFields.append(HTTPField(name: .setCookie, value: clearCookie))
        return .refused(answer)
    }

    private var clearCookie: String {
        WebCookies.setCookie(name: signIn.configuration.cookieName, value: "", maxAge: 0, secure: signIn.configuration.securesCookies)
    }

    /// 401: the app must send the user to sign in (`error` says why).
    static func signInAgain(_ error: String) -> WebResponse {
        json(.unauthorized, ["error": .string(error)])
    }

    /// A JSON answer, never cached.
    static func json(_ status: HTTPResponse.Status, _ members: [String: JSONValue]) -> WebResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(JSONValue.object(members))).map(Array.init) ?? Array("{}".utf8)
        return WebResponse(status: status, headerFields: [.contentType: "application/json", .cacheControl: "no-store"], body: body)
    }
}

extension HTTPField.Name {
    /// `Sec-Fetch-Site` (Fetch Metadata): whether a request comes from the same origin.
    package static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
}
