import Crypto
import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport

/// An OpenID provider on 127.0.0.1 that misbehaves on request: it signs ID tokens with the
/// key, algorithm, header and claims a test chooses, and answers discovery, the
/// authorization endpoint (auto-approving), the token endpoint (PKCE and client secret
/// checked), the JWK set and UserInfo. Every request it receives is recorded.
final class MisbehavingProvider: @unchecked Sendable {
    /// What the provider does; a test changes it before (or between) sign-ins.
    struct Behaviour: @unchecked Sendable {
        /// The keys published in the JWK set.
        var publishedKeys: [JWSSigningKey]
        /// The key that signs ID tokens (published or not).
        var signingKey: JWSSigningKey
        /// The `use` of every published key.
        var publishedUse = "sig"
        /// Whether the ID token's header names the key's `kid`.
        var includeKeyID = true
        /// Changes the claims before signing.
        var claims: @Sendable (inout [String: JSONValue]) -> Void = { _ in }
        /// Rewrites the signed compact ID token (alg none, broken signatures…).
        var rewriteIDToken: @Sendable (String) -> String = { $0 }
        /// Changes the token response members.
        var tokenResponse: @Sendable (inout [String: JSONValue]) -> Void = { _ in }
        /// Changes the metadata document.
        var metadata: @Sendable (inout [String: JSONValue]) -> Void = { _ in }
        /// Changes the authorization response parameters.
        var authorizationResponse: @Sendable (inout [String: String]) -> Void = { _ in }
        /// Changes the UserInfo claims.
        var userInfo: @Sendable (inout [String: JSONValue]) -> Void = { _ in }
    }

    static let clientID = "rp-client"
    static let clientSecret = "rp-client-secret-0123456789abcdef"
    static let subject = "alice-subject"

    private let lock = NSLock()
    private var _behaviour: Behaviour
    private var _log: [String] = []
    private var pending: [String: (nonce: String?, challenge: String, redirect: String)] = [:]
    private var issuedAccessTokens: Set<String> = []
    private(set) var server: LocalHTTPServer!

    var issuer: String { server.baseURL.absoluteString + "/op" }
    var behaviour: Behaviour {
        get { lock.withLock { _behaviour } }
        set { lock.withLock { _behaviour = newValue } }
    }
    /// `METHOD path` of every request, in order.
    var log: [String] { lock.withLock { _log } }
    func clearLog() { lock.withLock { _log.removeAll() } }

    init(behaviour: Behaviour) async throws {
        _behaviour = behaviour
        server = try await LocalHTTPServer { [weak self] request in
            guard let self else { return .close }
            return self.handle(request)
        }
    }

    func shutdown() async { await server.shutdown() }

    private func handle(_ request: LocalHTTPServer.Request) -> LocalHTTPServer.Reply {
        lock.withLock { _log.append("\(request.head.method.rawValue) \(request.path)") }
        let behaviour = self.behaviour
        switch request.path {
        case "/op/.well-known/openid-configuration":
            var metadata: [String: JSONValue] = [
                "issuer": .string(issuer),
                "authorization_endpoint": .string(issuer + "/authorize"),
                "token_endpoint": .string(issuer + "/token"),
                "userinfo_endpoint": .string(issuer + "/userinfo"),
                "jwks_uri": .string(issuer + "/jwks"),
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": .array(JWSAlgorithm.asymmetric.map { .string($0.rawValue) }),
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": true,
                "end_session_endpoint": .string(issuer + "/logout"),
            ]
            behaviour.metadata(&metadata)
            return .json(200, JSONValue.object(metadata).description)
        case "/op/jwks":
            let keys = behaviour.publishedKeys.compactMap { key -> JSONValue? in
                guard var members = key.publicKey?.jsonObject else { return nil }
                members["use"] = .string(behaviour.publishedUse)
                return .object(members)
            }
            return .json(200, JSONValue.object(["keys": .array(keys)]).description)
        case "/op/authorize":
            return authorize(request, behaviour: behaviour)
        case "/op/token":
            return token(request, behaviour: behaviour)
        case "/op/userinfo":
            guard let header = request.head.headerFields[.authorization], header.hasPrefix("Bearer "),
                lock.withLock({ issuedAccessTokens.contains(String(header.dropFirst(7))) }),
                !(request.head.path ?? "").contains("access_token")
            else {
                return .json(401, "{}", headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
            }
            var claims: [String: JSONValue] = ["sub": .string(Self.subject), "name": "Alice", "email": "alice@example.com"]
            behaviour.userInfo(&claims)
            return .json(200, JSONValue.object(claims).description)
        default:
            return .json(404, #"{"error":"not_found"}"#)
        }
    }

    private func authorize(_ request: LocalHTTPServer.Request, behaviour: Behaviour) -> LocalHTTPServer.Reply {
        let query = request.query
        guard query["client_id"] == Self.clientID, query["response_type"] == "code", query["code_challenge_method"] == "S256",
            let challenge = query["code_challenge"], let redirect = query["redirect_uri"], let state = query["state"]
        else { return .json(400, #"{"error":"invalid_request"}"#) }
        let code = UUID().uuidString
        lock.withLock { pending[code] = (query["nonce"], challenge, redirect) }
        var parameters = ["code": code, "state": state, "iss": issuer]
        behaviour.authorizationResponse(&parameters)
        var components = URLComponents(string: redirect)!
        components.queryItems = parameters.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        return .response(HTTPResponse(status: .found, headerFields: [.location: components.url!.absoluteString]), Data())
    }

    private func token(_ request: LocalHTTPServer.Request, behaviour: Behaviour) -> LocalHTTPServer.Reply {
        let expected = "Basic " + Data("\(Self.clientID):\(Self.clientSecret)".utf8).base64EncodedString()
        guard request.head.headerFields[.authorization] == expected else { return .json(401, #"{"error":"invalid_client"}"#) }
        let form = request.form
        guard form["grant_type"] == "authorization_code", let code = form["code"],
            let grant = lock.withLock({ pending.removeValue(forKey: code) }),
            form["redirect_uri"] == grant.redirect, let verifier = form["code_verifier"],
            Base64URLEncoding.encode(Data(SHA256.hash(data: Data(verifier.utf8)))) == grant.challenge
        else { return .json(400, #"{"error":"invalid_grant"}"#) }
        let accessToken = "at-" + UUID().uuidString
        lock.withLock { _ = issuedAccessTokens.insert(accessToken) }
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "sub": .string(Self.subject), "aud": .string(Self.clientID),
            "exp": .integer(now + 300), "iat": .integer(now), "auth_time": .integer(now - 5),
        ]
        if let nonce = grant.nonce { claims["nonce"] = .string(nonce) }
        let algorithm = behaviour.signingKey.algorithm
        claims["at_hash"] = .string(Self.halfHash(accessToken, algorithm))
        behaviour.claims(&claims)
        let key = behaviour.includeKeyID ? behaviour.signingKey : behaviour.signingKey.withKeyID(nil)
        let idToken = behaviour.rewriteIDToken((try? key.sign(claims: claims, header: ["typ": "JWT"])) ?? "")
        var response: [String: JSONValue] = [
            "access_token": .string(accessToken), "token_type": "Bearer", "expires_in": 300,
            "refresh_token": .string("rt-" + UUID().uuidString), "id_token": .string(idToken), "scope": "openid profile",
        ]
        behaviour.tokenResponse(&response)
        return .json(200, JSONValue.object(response).description, headers: [.cacheControl: "no-store"])
    }

    static func halfHash(_ text: String, _ algorithm: JWSAlgorithm) -> String {
        let data = Data(text.utf8)
        let digest: [UInt8]
        switch algorithm {
        case .rs384, .ps384, .es384, .hs384: digest = Array(SHA384.hash(data: data))
        case .rs512, .ps512, .es512, .hs512, .edDSA: digest = Array(SHA512.hash(data: data))
        default: digest = Array(SHA256.hash(data: data))
        }
        return Base64URLEncoding.encode(Data(digest.prefix(digest.count / 2)))
    }
}

/// base64url for the test provider (the library's own encoder is internal).
enum Base64URLEncoding {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
