#if MCP && Hummingbird
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MCP
import NIOCore
import OAuth2Hummingbird
import OAuth2Web

/// The MCP endpoint (`/mcp`, Streamable HTTP) behind Hummingbird: the MCP Swift SDK's
/// `StatefulHTTPServerTransport` is framework-neutral and serves one MCP session, so this
/// glue keeps a transport and an MCP `Server` per session (`MCP-Session-Id`), and translates
/// Hummingbird's requests and responses to the SDK's.
///
/// It runs behind `HummingbirdResourceServerMiddleware`: every request it sees carries a
/// verified access token for this resource. Two checks are its own:
/// - a `tools/call` for a tool whose scope (``ExampleTools/requiredScope``) the token does not
///   grant is answered 403 `insufficient_scope` with the resource server's challenge, naming
///   the scopes the token has and the tool's (so that a client which signs in again for them
///   keeps what it had: incremental consent);
/// - a session belongs to the user and client that opened it: another token's request for it
///   is answered 404, as for an unknown session.
actor MCPEndpoint {
    private struct Session {
        let server: Server
        let transport: StatefulHTTPServerTransport
        let owner: String
    }

    /// The largest request body read, in bytes.
    static let maximumBodySize = 1 << 20
    /// The most sessions kept at once; the oldest is closed to make room.
    static let maximumSessions = 1000

    private let resourceServer: ResourceServer
    private let validation: any HTTPRequestValidationPipeline
    private let notes = NoteBook()
    private let logger: Logger
    private var sessions: [String: Session] = [:]
    private var order: [String] = []

    /// - Parameters:
    ///   - resourceServer: the resource server whose challenges answer a missing scope.
    ///   - resource: the resource identifier (the public `/mcp` URL): requests must name its
    ///     host (`Host`) and, from a browser, its origin (`Origin`) — the transport's
    ///     protection against DNS rebinding.
    init(resourceServer: ResourceServer, resource: URL, logger: Logger) {
        self.resourceServer = resourceServer
        self.logger = logger
        let host = resource.host ?? "localhost"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let authority = shownHost + (resource.port.map { ":\($0)" } ?? "")
        let origin = "\(resource.scheme ?? "http")://\(authority)"
        var hosts = [authority]
        var origins = [origin]
        if ["127.0.0.1", "localhost", "::1"].contains(host), let port = resource.port {
            hosts += ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"]
            origins += ["http://127.0.0.1:\(port)", "http://localhost:\(port)", "http://[::1]:\(port)"]
        }
        validation = StandardValidationPipeline(validators: [
            OriginValidator(allowedHosts: hosts, allowedOrigins: origins),
            AcceptHeaderValidator(mode: .sseRequired),
            ContentTypeValidator(),
            ProtocolVersionValidator(),
            SessionValidator(),
        ])
    }

    /// Answers one request to the endpoint, made with `token`.
    nonisolated func respond(to request: Request, token: VerifiedAccessToken) async throws -> Response {
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: Self.maximumBodySize)
        } catch {
            return Response(status: .contentTooLarge)
        }
        let data = Data(body.readableBytesView)
        if request.method == .post, let refusal = scopeRefusal(body: data, token: token) {
            return Response(WebResponse(status: refusal.status, headerFields: refusal.headerFields))
        }
        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        let mcpRequest = MCP.HTTPRequest(
            method: request.method.rawValue, headers: headers, body: data.isEmpty ? nil : data, path: request.uri.path)
        let answer = await handle(mcpRequest, owner: Self.owner(of: token))
        return Self.response(answer)
    }

    /// The challenge for a `tools/call` whose tool needs a scope the token lacks, else `nil`.
    nonisolated func scopeRefusal(body: Data, token: VerifiedAccessToken) -> AccessTokenChallenge? {
        // Decoded as the SDK decodes it (JSONDecoder), so that both read the same tool name.
        guard let call = try? JSONDecoder().decode(ToolCall.self, from: body), call.method == CallTool.name,
            let name = call.params?.name, let scope = ExampleTools.requiredScope[name], !token.scopes.contains(scope)
        else { return nil }
        var error = AccessTokenError(
            .insufficientScope, reason: .missingScope, "The access token does not grant the scope of the tool \(name).",
            requiredScopes: token.scopes.union([scope]).sorted())
        error.scheme = token.isDPoPBound ? .dpop : .bearer
        return resourceServer.challenge(for: error)
    }

    private struct ToolCall: Decodable {
        struct Parameters: Decodable { let name: String? }
        let method: String?
        let params: Parameters?
    }

    /// Who a session belongs to: the token's issuer, subject and client.
    static func owner(of token: VerifiedAccessToken) -> String {
        [token.issuer ?? "", token.subject ?? "", token.clientID ?? ""].joined(separator: "\u{0}")
    }

    /// Routes a request to its session's transport, or opens a session for an `initialize`.
    private func handle(_ request: MCP.HTTPRequest, owner: String) async -> MCP.HTTPResponse {
        if let id = request.header(HTTPHeaderName.sessionID) {
            guard let session = sessions[id], session.owner == owner else {
                return .error(statusCode: 404, .invalidRequest("Not Found: Session not found or expired"))
            }
            let answer = await session.transport.handleRequest(request)
            if request.method.uppercased() == "DELETE", answer.statusCode == 200 { await close(id) }
            return answer
        }
        guard request.method.uppercased() == "POST", let body = request.body, Self.isInitialize(body) else {
            return .error(statusCode: 400, .invalidRequest("Bad Request: Missing \(HTTPHeaderName.sessionID) header"))
        }
        let id = UUID().uuidString
        let transport = StatefulHTTPServerTransport(sessionIDGenerator: FixedSessionID(id: id), validationPipeline: validation, logger: logger)
        let server = Server(
            name: "oauth2-mcp-server-example", version: "1.0.0", capabilities: .init(tools: .init(listChanged: false)))
        await ExampleTools.register(on: server, notes: notes)
        do {
            try await server.start(transport: transport)
        } catch {
            await transport.disconnect()
            return .error(statusCode: 500, .internalError("The session could not start."))
        }
        let answer = await transport.handleRequest(request)
        if case .error = answer {
            await server.stop()
            return answer
        }
        if sessions.count >= Self.maximumSessions, let oldest = order.first { await close(oldest) }
        sessions[id] = Session(server: server, transport: transport, owner: owner)
        order.append(id)
        return answer
    }

    private func close(_ id: String) async {
        guard let session = sessions.removeValue(forKey: id) else { return }
        order.removeAll { $0 == id }
        await session.server.stop()
    }

    /// Closes every session.
    func closeAll() async {
        for id in Array(sessions.keys) { await close(id) }
    }

    private static func isInitialize(_ body: Data) -> Bool {
        struct Message: Decodable {
            let method: String?
            let id: ID?
        }
        guard let message = try? JSONDecoder().decode(Message.self, from: body) else { return false }
        return message.method == Initialize.name && message.id != nil
    }

    private struct FixedSessionID: SessionIDGenerator {
        let id: String
        func generateSessionID() -> String { id }
    }

    /// The SDK's answer as a Hummingbird response; an SSE stream is streamed as it comes.
    static func response(_ answer: MCP.HTTPResponse) -> Response {
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        let status = HTTPResponse.Status(code: answer.statusCode)
        switch answer {
        case .stream(let stream, _):
            return Response(
                status: status, headers: fields,
                body: ResponseBody { writer in
                    do {
                        for try await chunk in stream { try await writer.write(ByteBuffer(bytes: chunk)) }
                    } catch {}
                    try await writer.finish(nil)
                })
        default:
            let body = answer.bodyData.map { ResponseBody(byteBuffer: ByteBuffer(bytes: $0)) } ?? ResponseBody()
            return Response(status: status, headers: fields, body: body)
        }
    }
}
#endif
