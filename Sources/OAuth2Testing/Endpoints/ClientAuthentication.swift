import Foundation
import NIOHTTP1
import OAuth2Internals

extension ProviderCore {
    /// The opening of every client-authenticated POST endpoint: the method, the form body,
    /// the client's authentication, and no repeated parameter (RFC 6749 §3.2).
    func authenticatedForm(_ request: HTTPServerRequest) -> Result<(Parameters, TestProvider.Client), HTTPServerReply> {
        guard request.method == .POST else { return .failure(.methodNotAllowed("POST")) }
        let parameters: Parameters
        switch Parameters.read(request, body: true) {
        case .success(let read): parameters = read
        case .failure(let reply): return .failure(reply)
        }
        let client: TestProvider.Client
        switch authenticateClient(request, parameters) {
        case .success(let authenticated): client = authenticated
        case .failure(let reply): return .failure(reply)
        }
        if let name = parameters.duplicated.sorted().first {
            return .failure(.oauthError("invalid_request", "The parameter \(name) is repeated."))
        }
        return .success((parameters, client))
    }

    /// Authenticates the client of a token, device, introspection or revocation request
    /// (RFC 6749 §2.3): `client_secret_basic` (the id and secret form-encoded, then joined
    /// and base64-encoded), `client_secret_post`, or — for public clients only — just
    /// `client_id`. Using two methods at once is refused (§2.3).
    ///
    /// - Parameter allowPublic: whether a public client may call (not at introspection).
    func authenticateClient(
        _ request: HTTPServerRequest, _ parameters: Parameters, allowPublic: Bool = true
    ) -> Result<TestProvider.Client, HTTPServerReply> {
        let header = request.headers.first(name: "Authorization")
        let realm = #"Basic realm="\#(issuer)""#
        func invalidClient(_ description: String) -> HTTPServerReply {
            // §5.2: 401 with a challenge when the client tried the Authorization header.
            .oauthError("invalid_client", description, status: .unauthorized, headers: header == nil ? [] : [("WWW-Authenticate", realm)])
        }
        if parameters.duplicated.contains("client_id") || parameters.duplicated.contains("client_secret") {
            return .failure(.oauthError("invalid_request", "client_id or client_secret is repeated."))
        }
        let clients = state.withLock { $0.clients }
        let client: TestProvider.Client
        if let header {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "basic" else {
                return .failure(invalidClient("Only Basic client authentication is accepted in the Authorization header."))
            }
            guard parameters["client_secret"] == nil else {
                return .failure(.oauthError("invalid_request", "The client authenticated with more than one method."))
            }
            guard let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
                let credentials = String(data: decoded, encoding: .utf8), let colon = credentials.firstIndex(of: ":"),
                let id = FormEncoding.percentDecode(credentials[..<colon]),
                let secret = FormEncoding.percentDecode(credentials[credentials.index(after: colon)...])
            else { return .failure(invalidClient("The Basic credentials are malformed.")) }
            if let bodyID = parameters["client_id"], bodyID != id {
                return .failure(invalidClient("client_id differs from the authenticated client."))
            }
            guard let known = clients[id], let expected = known.secret, Check.constantTimeEquals(secret, expected) else {
                return .failure(invalidClient("Client authentication failed."))
            }
            client = known
        } else if let secret = parameters["client_secret"] {
            guard let id = parameters["client_id"], let known = clients[id], let expected = known.secret,
                Check.constantTimeEquals(secret, expected)
            else { return .failure(invalidClient("Client authentication failed.")) }
            client = known
        } else {
            guard let id = parameters["client_id"] else { return .failure(invalidClient("The client is not identified.")) }
            guard let known = clients[id] else { return .failure(invalidClient("Client authentication failed.")) }
            guard known.isPublic else { return .failure(invalidClient("A confidential client must authenticate.")) }
            client = known
        }
        if client.isPublic && !allowPublic {
            return .failure(invalidClient("A public client may not use this endpoint."))
        }
        return .success(client)
    }
}
