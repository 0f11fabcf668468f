import Foundation
import NIOCore
import NIOHTTP1
import OAuth2Internals
import OAuth2JOSE

/// The provider's behaviour: routing, scripted failures, and the endpoints (in
/// `Endpoints/`). All state lives in ``state``; a request holds the lock only while it
/// reads or changes it, never across a suspension.
final class ProviderCore: Sendable {
    /// The issuer, without a trailing slash.
    let issuer: String
    let issuerPath: String
    let sendsIssuerParameter: Bool
    let rotatesRefreshTokens: Bool
    let state: Locked<ProviderState>
    /// How Client ID Metadata Documents are fetched; `nil`: not accepted.
    let clientMetadataDocuments: TestProvider.ClientMetadataDocuments?
    /// The server's event loops, for the provider's own requests (back-channel logout).
    let group: any EventLoopGroup

    init(issuer: String, configuration: TestProvider.Configuration, keys: [JWSSigningKey], group: any EventLoopGroup) {
        self.issuer = issuer
        self.group = group
        issuerPath = configuration.issuerPath
        sendsIssuerParameter = configuration.sendsIssuerParameter
        rotatesRefreshTokens = configuration.rotatesRefreshTokens
        clientMetadataDocuments = configuration.clientMetadataDocuments
        state = Locked(
            ProviderState(
                clients: Dictionary(uniqueKeysWithValues: configuration.clients.map { ($0.id, $0) }),
                users: Dictionary(uniqueKeysWithValues: configuration.users.map { ($0.username, $0) }),
                autoApprovedUser: configuration.autoApprovedUser,
                lifetimes: configuration.lifetimes,
                keys: keys,
                identityAssertions: IdentityAssertionState(options: configuration.identityAssertions)))
    }

    func url(_ endpoint: TestProvider.Endpoint) -> String { issuer + endpoint.path }

    // MARK: - Routing

    /// The endpoint a path names, if any.
    func route(_ path: String) -> TestProvider.Endpoint? {
        if path == "/.well-known/oauth-authorization-server" + issuerPath { return .discovery }
        guard path.hasPrefix(issuerPath) else { return nil }
        let rest = path.dropFirst(issuerPath.count)
        return TestProvider.Endpoint.allCases.first { $0.path == rest }
    }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerReply {
        guard let endpoint = route(request.path) else {
            return .oauthError("not_found", "No endpoint at this path.", status: .notFound)
        }
        let failure = state.withLock { state -> TestProvider.Failure? in
            state.counts[endpoint, default: 0] += 1
            guard var queue = state.failures[endpoint], !queue.isEmpty else { return nil }
            let first = queue.removeFirst()
            state.failures[endpoint] = queue.isEmpty ? nil : queue
            return first
        }
        switch failure {
        case nil:
            break
        case .delay(let duration)?:
            try? await Task.sleep(for: duration)
        case .closeConnection?:
            return .close
        case .status(let code, let retryAfter)?:
            let status = HTTPResponseStatus(statusCode: code)
            var headers = [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")]
            if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
            return .response(status, headers: headers, body: Array("\(code) \(status.reasonPhrase)\n".utf8))
        case .error(let code, let status, let description)?:
            return scriptedError(endpoint, request: request, code: code, status: status, description: description)
        }
        let now = Date()
        if let refusal = await resolveClientMetadataDocument(endpoint, request, now: now) { return refusal }
        switch endpoint {
        case .discovery:
            guard request.method == .GET else { return .methodNotAllowed("GET") }
            return .json(.ok, metadata())
        case .jwks:
            guard request.method == .GET else { return .methodNotAllowed("GET") }
            return jwks()
        case .authorization:
            return authorize(request, now: now)
        case .token:
            return token(request, now: now)
        case .deviceAuthorization:
            return deviceAuthorization(request, now: now)
        case .deviceVerification:
            return deviceVerification(request, now: now)
        case .userInfo:
            return userInfo(request, now: now)
        case .introspection:
            return introspect(request, now: now)
        case .revocation:
            return revoke(request, now: now)
        case .endSession:
            return await endSession(request, now: now)
        }
    }

    private func scriptedError(
        _ endpoint: TestProvider.Endpoint, request: HTTPServerRequest, code: String, status: Int, description: String?
    ) -> HTTPServerReply {
        let httpStatus = HTTPResponseStatus(statusCode: status)
        switch endpoint {
        case .authorization:
            // An error goes back to the client when it can (RFC 6749 §4.1.2.1).
            if case .success(let parameters) = Parameters.read(request, body: request.method == .POST),
                let target = validatedRedirect(parameters)
            {
                return errorRedirect(target, code: code, description: description, parameters: parameters, now: Date())
            }
            return .oauthError(code, description, status: httpStatus)
        case .userInfo:
            var challenge = #"Bearer realm="\#(issuer)", error="\#(code)""#
            if let description { challenge += #", error_description="\#(description.replacingOccurrences(of: "\"", with: "'"))""# }
            return .oauthError(code, description, status: httpStatus, headers: [("WWW-Authenticate", challenge)])
        default:
            return .oauthError(code, description, status: httpStatus)
        }
    }

    // MARK: - Scopes and claims

    /// OIDC Core §5.4: the claims each scope releases.
    static let scopeClaims: [String: [String]] = [
        "profile": [
            "name", "family_name", "given_name", "middle_name", "nickname", "preferred_username", "profile", "picture",
            "website", "gender", "birthdate", "zoneinfo", "locale", "updated_at",
        ],
        "email": ["email", "email_verified"],
        "address": ["address"],
        "phone": ["phone_number", "phone_number_verified"],
    ]

    /// The user's claims the scopes release (any non-standard claim always), without `sub`.
    static func releasedClaims(of user: TestProvider.User, scopes: [String]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [:]
        let standard = Set(scopeClaims.values.flatMap { $0 })
        let granted = Set(scopes.flatMap { scopeClaims[$0] ?? [] })
        var source = user.claims
        if source["preferred_username"] == nil { source["preferred_username"] = .string(user.username) }
        for (name, value) in source where !standard.contains(name) || granted.contains(name) {
            claims[name] = value
        }
        for reserved in ["iss", "sub", "aud", "exp", "iat", "nbf", "auth_time", "nonce", "at_hash", "c_hash", "azp", "sid", "jti"] {
            claims[reserved] = nil
        }
        return claims
    }

    /// The scopes of a request: space-separated, duplicates dropped, order kept.
    static func scopes(_ parameter: String?) -> [String] {
        var seen = Set<String>()
        return (parameter ?? "").split(separator: " ").map(String.init).filter { seen.insert($0).inserted }
    }

    /// The scopes a client may not ask for, among `scopes`.
    static func forbiddenScopes(_ scopes: [String], for client: TestProvider.Client) -> [String] {
        guard let allowed = client.allowedScopes else { return [] }
        return scopes.filter { !allowed.contains($0) }
    }
}

// MARK: - Request parameters

/// The parameters of a request, each at most once (RFC 6749 §3.1: a repeated parameter is
/// an error; `resource`, RFC 8707, may repeat). An empty value counts as absent.
struct Parameters: Sendable {
    private(set) var values: [String: String] = [:]
    private(set) var duplicated: Set<String> = []
    /// Every `resource` (RFC 8707), in order: the one parameter that may be repeated.
    private(set) var resources: [String] = []

    subscript(_ name: String) -> String? { values[name] }

    init(pairs: [(String, String)]) {
        for (name, value) in pairs where !value.isEmpty {
            if name == "resource" { resources.append(value) }
            if values[name] != nil {
                if name != "resource" { duplicated.insert(name) }
            } else {
                values[name] = value
            }
        }
    }

    /// The query's parameters, or the form body's when `body` is true (which must then be
    /// `application/x-www-form-urlencoded`).
    static func read(_ request: HTTPServerRequest, body: Bool) -> Result<Parameters, HTTPServerReply> {
        let text: Substring
        if body {
            let contentType = request.headers.first(name: "Content-Type")?.split(separator: ";").first?
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard contentType == "application/x-www-form-urlencoded" else {
                return .failure(.oauthError("invalid_request", "The body must be application/x-www-form-urlencoded."))
            }
            text = Substring(String(decoding: request.body, as: UTF8.self))
        } else {
            text = request.query ?? ""
        }
        guard let pairs = FormEncoding.decode(text) else {
            return .failure(.oauthError("invalid_request", "The parameters are not valid form encoding."))
        }
        return .success(Parameters(pairs: pairs))
    }
}

// MARK: - Replies

extension HTTPServerReply {
    /// A JSON answer; `no-store` for answers that carry tokens or say something about them.
    static func json(_ status: HTTPResponseStatus, _ members: [String: JSONValue], headers: [(String, String)] = []) -> Self {
        .response(
            status,
            headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store"), ("Pragma", "no-cache")] + headers,
            body: Array(JSONValue.object(members).description.utf8))
    }

    /// An OAuth error (RFC 6749 §5.2).
    static func oauthError(
        _ code: String, _ description: String?, status: HTTPResponseStatus = .badRequest, headers: [(String, String)] = []
    ) -> Self {
        var members: [String: JSONValue] = ["error": .string(code)]
        if let description { members["error_description"] = .string(description) }
        return .json(status, members, headers: headers)
    }

    static func methodNotAllowed(_ allowed: String) -> Self {
        .oauthError("invalid_request", "Use \(allowed).", status: .methodNotAllowed, headers: [("Allow", allowed)])
    }

    /// A small HTML page (error pages, the device page, the signed-out page).
    static func html(_ status: HTTPResponseStatus, title: String, _ paragraph: String, headers: [(String, String)] = []) -> Self {
        .response(
            status, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")] + headers,
            body: Array(HTML.page(title: title, body: "<p>\(HTML.escape(paragraph))</p>").utf8))
    }

    /// A 302 redirect.
    static func redirect(_ location: String, headers: [(String, String)] = []) -> Self {
        .response(.found, headers: [("Location", location), ("Cache-Control", "no-store")] + headers, body: [])
    }
}
