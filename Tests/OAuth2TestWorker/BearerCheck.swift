import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import OAuth2Web

/// `bearer-check <name>=<issuer>...`: the access-token check behind nginx's `auth_request`
/// in Tests/CLI/tools.sh (git over HTTPS, kubectl), built from OAuth2Web's
/// ``ResourceServer`` and ``TokenIntrospector``.
///
/// For each `<name>=<issuer>` (an issuer of `oauth2-test-provider`), `GET /check/<name>`
/// checks the request's token at that issuer's introspection endpoint, as the demo
/// confidential client, accepting the tokens of the demo public client (`oauth2-demo`):
///
/// - `Authorization: Bearer <token>` (kubectl);
/// - `Authorization: Basic base64(<user>:<token>)` (git, which sends its credential
///   helper's password this way): the password is the token, any user name.
///
/// It answers 204 with `X-OAuth2-Subject: <sub>` when the token is good; else 401 with a
/// `Basic` challenge after a Basic attempt or none (so that git asks its credential helper)
/// and the ResourceServer's `Bearer` challenge after a bearer one. Prints
/// `LISTENING <base URL>` once it serves, then one line per check —
/// `authorized <name> <scheme> <sub>` or `refused <name> <scheme> <error code>` — never a token.
enum BearerCheck {
    /// The realm of the Basic challenge.
    static let realm = "oauth2 tools test"

    static func run(_ arguments: [String]) async throws {
        guard !arguments.isEmpty else { fail("usage: bearer-check <name>=<issuer>...", status: 64) }
        var servers: [String: ResourceServer] = [:]
        for argument in arguments {
            guard let equals = argument.firstIndex(of: "="), let issuer = URL(string: String(argument[argument.index(after: equals)...])) else {
                fail("usage: bearer-check <name>=<issuer>...", status: 64)
            }
            let client = try await OAuth2Client(
                server: .issuer(issuer),
                configuration: ClientConfiguration(clientID: "oauth2-demo-confidential", clientSecret: "oauth2-demo-secret"))
            let accepted = TokenIntrospector.AcceptedTokens(audiences: ["oauth2-demo"], clientIDs: ["oauth2-demo"])
            servers[String(argument[..<equals])] = ResourceServer(introspection: TokenIntrospector(client: client, accepting: accepted))
        }
        let checks = servers
        let server = try await LocalHTTPServer { request in
            let parts = request.path.split(separator: "/")
            guard parts.count == 2, parts[0] == "check", let resourceServer = checks[String(parts[1])] else { return .json(404, "{}") }
            return await check(request.head, name: String(parts[1]), with: resourceServer)
        }
        say("LISTENING \(server.baseURL.absoluteString)")
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    /// Checks one request: Basic becomes Bearer with the password as the token.
    static func check(_ head: HTTPRequest, name: String, with resourceServer: ResourceServer) async -> LocalHTTPServer.Reply {
        let presented = head.headerFields[.authorization] ?? ""
        let basic = presented.lowercased().hasPrefix("basic ")
        var request = HTTPRequest(method: .get, scheme: "https", authority: "tools.test", path: "/")
        if basic {
            guard let token = password(ofBasic: String(presented.dropFirst(6))) else {
                say("refused \(name) basic malformed")
                return .body(401, Data(), contentType: nil, headers: [.wwwAuthenticate: "Basic realm=\"\(realm)\""])
            }
            request.headerFields[.authorization] = "Bearer \(token)"
        } else if !presented.isEmpty {
            request.headerFields[.authorization] = presented
        }
        switch await resourceServer.authorize(request) {
        case .authorized(let access):
            let subject = access.token.subject ?? "-"
            say("authorized \(name) \(basic ? "basic" : "bearer") \(subject)")
            return .body(204, Data(), contentType: nil, headers: [HTTPField.Name("X-OAuth2-Subject")!: subject])
        case .refused(let challenge):
            say("refused \(name) \(basic ? "basic" : presented.isEmpty ? "none" : "bearer") \(challenge.error.code)")
            var headers = challenge.headerFields
            if basic || presented.isEmpty { headers[.wwwAuthenticate] = "Basic realm=\"\(realm)\"" }
            return .body(challenge.status.code, Data(), contentType: nil, headers: headers)
        }
    }

    /// The password of a Basic credential (`base64(user:password)`), `nil` when malformed.
    static func password(ofBasic credential: String) -> String? {
        guard let data = Data(base64Encoded: credential.trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        let password = String(text[text.index(after: colon)...])
        return password.isEmpty ? nil : password
    }
}
