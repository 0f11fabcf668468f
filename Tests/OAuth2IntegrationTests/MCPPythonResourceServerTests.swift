import Foundation
import HTTPTypes
import OAuth2
import OAuth2Internals
import OAuth2TestSupport
import Testing

extension Integration {
    /// The official MCP Python SDK's server side (mcp 2.3.0: `MCPServer` with `AuthSettings`
    /// and a `TokenVerifier`, Tests/MCPPython/resource_server.py) as the resource our client
    /// signs into from its URL alone, as the article "Calling an MCP server" shows: the `401`
    /// and its `resource_metadata`, the SDK's protected resource metadata, Glewlwyd (its OIDC
    /// instance oidc-mcp) as its authorization server, dynamic registration there, a sign-in
    /// with PKCE and `resource`, tools over streamable HTTP, and a step-up on
    /// `403 insufficient_scope`. The token is bound to the server's URL: Glewlwyd names it as
    /// the token's `aud` because the client registered it as a resource of its own
    /// (Glewlwyd's `resource` registration member and resource-client-property; the port is
    /// picked per run), and the server's verifier asks Glewlwyd about each token (RFC 7662) and
    /// refuses one whose `aud` is not its URL.
    ///
    /// Needs `OAUTH2_TEST_MCP_PYTHON`, the python of the pinned venv
    /// (`Tests/MCPPython/resource.sh python`), and Glewlwyd's instance oidc-mcp
    /// (`OAUTH2_TEST_GLEWLWYD_MCP_*`, scripts/test-servers/glewlwyd.sh seed_mcp_peers);
    /// without them the tests fail, they do not skip. Each passing check appends
    /// `mcp python-server <check>` to `$OAUTH2_INTEGRATION_LOG`.
    @Suite struct MCPPythonResourceServer {
        /// The API Glewlwyd issues tokens of scope `read` for (its `resource-scope`): another
        /// resource than the server.
        static let glewlwydResource = Server.env("OAUTH2_TEST_GLEWLWYD_RESOURCE", "https://api.example.test/orders")
        /// Glewlwyd's OIDC instance of the MCP peers.
        static var issuer: URL { URL(string: Server.env("OAUTH2_TEST_GLEWLWYD_MCP_ISSUER", "http://127.0.0.1:4593/api/oidc-mcp"))! }
        /// The client the server introspects as.
        static var introspectionClient: (id: String, secret: String) {
            (Server.env("OAUTH2_TEST_GLEWLWYD_MCP_RS_ID", "mcp-resource-server"),
             Server.env("OAUTH2_TEST_GLEWLWYD_MCP_RS_SECRET", "mcp-resource-server-secret"))
        }

        static func passed(_ check: String) {
            IntegrationLog.append("mcp python-server", test: check)
        }

        /// The Python server, started on a free port for one test.
        final class RunningServer: Sendable {
            let process: ChildProcess
            let url: URL

            init(process: ChildProcess, url: URL) {
                self.process = process
                self.url = url
            }

            /// Stops the server and waits until it has exited: SIGTERM, then (a hang bound of
            /// 10 s) SIGKILL; it keeps nothing. The wait is on a thread of its own, never the
            /// cooperative pool's.
            func stop() async {
                let process = process
                process.send(SIGTERM)
                let killer = Task {
                    try await Task.sleep(for: .seconds(10))
                    process.send(SIGKILL)
                }
                _ = await process.termination()
                killer.cancel()
            }
        }

        /// Starts resource_server.py trusting Glewlwyd for tokens whose audience is its own URL,
        /// and waits (a hang bound, not a speed requirement) for its `LISTENING <url>` line.
        static func start() async throws -> RunningServer {
            let python = try #require(
                Server.environment["OAUTH2_TEST_MCP_PYTHON"].flatMap { $0.isEmpty ? nil : $0 },
                "OAUTH2_TEST_MCP_PYTHON is not set: Tests/MCPPython/resource.sh python prints it (scripts/test sets it)")
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("MCPPython/resource_server.py")
            let issuer = Self.issuer.absoluteString
            let introspection = Self.introspectionClient
            var environment = ProcessInfo.processInfo.environment
            environment["MCP_RS_ISSUER"] = issuer
            environment["MCP_RS_INTROSPECTION_URL"] = issuer + "/introspect"
            environment["MCP_RS_INTROSPECTION_ID"] = introspection.id
            environment["MCP_RS_INTROSPECTION_SECRET"] = introspection.secret
            environment["MCP_RS_AUDIENCE"] = nil  // its own URL
            let process = try ChildProcess.spawn(python, arguments: [script.path], environment: environment, standardOutput: .pipe)
            let lines = process.standardOutput!
            let url: URL? = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: firstLine(of: lines)) }.start()
            }
            if url == nil {
                process.send(SIGKILL)
                _ = await process.termination()
            }
            return RunningServer(process: process, url: try #require(url, "resource_server.py did not start"))
        }

        /// Runs `body` with a server started for it, and stops the server however `body` ends.
        static func withServer<T>(_ body: (RunningServer) async throws -> T) async throws -> T {
            let server = try await start()
            do {
                let value = try await body(server)
                await server.stop()
                return value
            } catch {
                await server.stop()
                throw error
            }
        }

        /// The URL in the server's first line, `LISTENING <url>` (read blocking: on a thread of its own).
        private static func firstLine(of lines: FileHandle) -> URL? {
            var text = ""
            while !text.contains("\n") {
                let data = lines.availableData  // blocks until output or end of file
                if data.isEmpty { return nil }
                text += String(decoding: data, as: UTF8.self)
            }
            let first = text.split(separator: "\n").first.map(String.init) ?? ""
            guard first.hasPrefix("LISTENING ") else { return nil }
            return URL(string: String(first.dropFirst("LISTENING ".count)))
        }

        /// The MCP calls, through `send` (a session's `perform`, or a plain bearer request).
        struct MCP {
            let url: URL
            let send: (HTTPRequest, Data) async throws -> (HTTPResponse, Data)
            var sessionID: String?

            func request() -> HTTPRequest {
                var request = HTTPRequest(method: .post, url: url)
                request.headerFields[.contentType] = "application/json"
                request.headerFields[.accept] = "application/json, text/event-stream"
                if let sessionID { request.headerFields[HTTPField.Name("Mcp-Session-Id")!] = sessionID }
                if sessionID != nil { request.headerFields[HTTPField.Name("MCP-Protocol-Version")!] = "2025-06-18" }
                return request
            }

            mutating func initialize() async throws -> HTTPResponse {
                let body = #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"swift-oauth2-tests","version":"1"}}}"#
                let (response, _) = try await send(request(), Data(body.utf8))
                guard response.status == .ok else { return response }
                sessionID = response.headerFields[HTTPField.Name("Mcp-Session-Id")!]
                let (initialized, _) = try await send(request(), Data(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.utf8))
                #expect(initialized.status.code == 202, "the notification is accepted")
                return response
            }

            /// `tools/call` of `tool`: the answer, and the text of its first content item.
            func call(_ tool: String) async throws -> (HTTPResponse, String?) {
                let body = #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"\#(tool)","arguments":{}}}"#
                let (response, data) = try await send(request(), Data(body.utf8))
                let answer = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
                let content = (answer?["result"] as? [String: Any])?["content"] as? [[String: Any]]
                return (response, content?.first?["text"] as? String)
            }
        }

        /// A request with `token` as bearer, outside any session (the hostile checks).
        static func bearer(_ token: String) -> (HTTPRequest, Data) async throws -> (HTTPResponse, Data) {
            { request, body in
                var request = request
                request.headerFields[.authorization] = "Bearer \(token)"
                return try await URLSessionTransport.shared.send(request, body: body)
            }
        }

        /// Signs the test user in through `client` (Glewlwyd's own pages, driven as a browser).
        static func signIn(_ client: OAuth2Client, scopes: [String]? = nil) async throws -> TokenSet {
            let request = try client.authorizationRequest(AuthorizationOptions(scopes: scopes))
            let callback = try await Server.glewlwyd.authorize(request, clientID: client.configuration.clientID)
            return try await client.completeAuthorization(callbackURL: callback, request: request)
        }

        /// What the article's client does from `found` at Glewlwyd: registers a client
        /// dynamically (RFC 7591) whose `resource` member (Glewlwyd's) lists the resource, and
        /// binds it to the resource. Confidential (client_secret_basic): Glewlwyd 2.7.5 stores a
        /// client registered with `none` as confidential without a secret.
        static func registeredClient(for found: DiscoveredResource, environment: HTTPEnvironment) async throws -> OAuth2Client {
            var metadata = found.registrationMetadata(redirectURI: Server.redirectURI, clientName: "swift-oauth2 MCP integration")
            metadata.tokenEndpointAuthMethod = .clientSecretBasic
            metadata.additionalMembers["resource"] = .array([.string(found.resource.absoluteString)])
            let registration = try await ClientRegistrar(server: found.server, environment: environment).register(metadata)
            let configuration = found.boundToResource(
                ClientConfiguration(clientID: registration.clientID, clientSecret: registration.clientSecret, redirectURI: Server.redirectURI, scopes: []))
            return try await OAuth2Client(server: found.server, configuration: configuration, environment: environment)
        }

        static func environment() -> HTTPEnvironment {
            HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache())
        }

        @Test func fromItsURLAloneToAToolAndAStepUp() async throws {
            try await Self.withServer { server in
                let environment = Self.environment()

                // The SDK's RequireAuthMiddleware: 401 with resource_metadata, no token sent.
                let (probe, _) = try await URLSessionTransport.shared.send(HTTPRequest(method: .get, url: server.url), body: nil)
                #expect(probe.status == .unauthorized)
                #expect(probe.headerFields[.wwwAuthenticate]?.contains("resource_metadata=") == true)
                Self.passed("unauthorized-names-metadata")

                // Discovery as the article shows: the SDK's metadata, its resource checked, Glewlwyd
                // discovered from the listed issuer.
                let found = try await ProtectedResourceDiscovery(environment: environment).discover(resource: server.url)
                #expect(found.resource == server.url)
                #expect(found.metadataURL.path == "/.well-known/oauth-protected-resource/mcp", "the SDK's path-inserted place (RFC 9728 §3.1)")
                #expect(found.issuer == Self.issuer)
                #expect(found.authorizationServer.issuer == Self.issuer.absoluteString)
                #expect(found.scopes == ["read"], "the SDK lists its required_scopes as scopes_supported")
                Self.passed("discovery")

                // The client's identity in the MCP order: a held client id wins; without one,
                // Glewlwyd (no client id metadata documents, a registration endpoint) means
                // dynamic registration.
                let conf = Server.glewlwyd.confidential(scopes: [])
                #expect(try found.clientIdentity(configuredClientID: conf.clientID) == .configured(conf.clientID))
                #expect(
                    try found.clientIdentity(configuredClientID: nil, metadataDocument: URL(string: "https://agent.example.org/oauth/client.json")!)
                        == .dynamicRegistration)
                Self.passed("client-identity")

                // A client that never listed the server's URL (the seeded code-conf) asks for a
                // token for it, and Glewlwyd refuses: it issues tokens only for resources its
                // configuration lists for a scope or the client lists (protocol_oidc.c verify_resource).
                let unlisted = try await OAuth2Client(server: found.server, configuration: found.boundToResource(conf), environment: environment)
                let refused = await #expect(throws: OAuth2Error.self) { _ = try await Self.signIn(unlisted) }
                #expect(refused?.code == .invalidTarget, "Glewlwyd: invalid_target (RFC 8707 §2)")
                Self.passed("glewlwyd-refuses-unlisted-resource")

                // Registered dynamically with the server's URL as its resource, the client signs in
                // for that resource: the token names it.
                let client = try await Self.registeredClient(for: found, environment: environment)
                #expect(client.configuration.additionalParameters[.authorization]?["resource"] == server.url.absoluteString)
                Self.passed("registers-dynamically-for-the-resource")
                let tokens = try await Self.signIn(client)
                #expect(tokens.scopes?.contains("read") == true)
                #expect(tokens.scopes?.contains("g_profile") != true)
                let stepUps = Counter()
                let options = TokenSession.Options(stepUp: { client, scopes in
                    stepUps.increment()
                    return try await Self.signIn(client, scopes: scopes)
                })
                let session = try await TokenSession(client: client, tokens: tokens, store: MemoryTokenStore(), account: found.account, options: options)
                #expect(found.account == server.url.absoluteString)

                var mcp = MCP(url: server.url, send: { request, body in try await session.perform(request, body: body) })
                let initialized = try await mcp.initialize()
                #expect(initialized.status == .ok)
                #expect(mcp.sessionID?.isEmpty == false, "the SDK's streamable HTTP names a session")
                Self.passed("initialize")

                let (listed, orders) = try await mcp.call("list_orders")
                #expect(listed.status == .ok)
                #expect(orders == "orders: 1, 2, 3")
                #expect(stepUps.value == 0)
                Self.passed("tool-call")

                // `profile` needs g_profile too: 403 insufficient_scope, one step-up sign-in for
                // read and g_profile, and the call again, in the same MCP session.
                let (stepped, profile) = try await mcp.call("profile")
                #expect(stepped.status == .ok)
                #expect(profile == "profile: alice")
                #expect(stepUps.value == 1)
                Self.passed("step-up")
            }
        }

        @Test func tokensNotForTheServerAreRefused() async throws {
            try await Self.withServer { server in
                try await Self.withServer { other in
                    let environment = Self.environment()

                    // A token Glewlwyd bound to the other server's URL (its own client, registered for
                    // it): accepted there, refused here (the verifier: aud is not this server's URL).
                    let foundOther = try await ProtectedResourceDiscovery(environment: environment).discover(resource: other.url)
                    let tokens = try await Self.signIn(try await Self.registeredClient(for: foundOther, environment: environment))
                    var there = MCP(url: other.url, send: Self.bearer(tokens.accessToken))
                    #expect(try await there.initialize().status == .ok, "the token's own server accepts it")
                    var here = MCP(url: server.url, send: Self.bearer(tokens.accessToken))
                    #expect(try await here.initialize().status == .unauthorized)
                    Self.passed("refuses-token-for-another-mcp-server")

                    // A token of the same instance for another resource, the API Glewlwyd lists for the
                    // scope read: active, refused.
                    let api = try await OAuth2Client(
                        server: .issuer(Self.issuer), configuration: Server.glewlwyd.clientCredentials(), environment: environment)
                    let forAPI = try await api.requestToken(
                        Grant(type: "client_credentials", parameters: [("scope", "read"), ("resource", Self.glewlwydResource)], requestedScopes: ["read"]))
                    var apiMCP = MCP(url: server.url, send: Self.bearer(forAPI.accessToken))
                    #expect(try await apiMCP.initialize().status == .unauthorized)
                    Self.passed("refuses-other-audience")

                    // A token without a resource indicator: Glewlwyd's aud is then the scope list.
                    let plain = try await api.requestToken(Grant(type: "client_credentials", parameters: [("scope", "read")], requestedScopes: ["read"]))
                    var plainMCP = MCP(url: server.url, send: Self.bearer(plain.accessToken))
                    #expect(try await plainMCP.initialize().status == .unauthorized)
                    Self.passed("refuses-token-without-resource")

                    // A token of Glewlwyd's other instance (another issuer): unknown to this one.
                    let password = try await Server.glewlwyd.client(Server.glewlwyd.passwordClient())
                        .password(username: Server.username, password: Server.password)
                    var foreign = MCP(url: server.url, send: Self.bearer(password.accessToken))
                    #expect(try await foreign.initialize().status == .unauthorized)
                    Self.passed("refuses-other-issuer")

                    // A token Glewlwyd never issued.
                    var madeUp = MCP(url: server.url, send: Self.bearer("madeUp" + UUID().uuidString))
                    #expect(try await madeUp.initialize().status == .unauthorized)
                    Self.passed("refuses-made-up-token")
                }
            }
        }

        @Test func metadataNamingAnotherResourceIsRefused() async throws {
            // The server's own metadata is right; one whose resource is not the URL called (the
            // same server reached through "localhost", its metadata found at the well-known
            // place) is refused before any authorization server is asked.
            try await Self.withServer { server in
                var components = try #require(URLComponents(url: server.url, resolvingAgainstBaseURL: false))
                components.host = "localhost"
                let aliased = try #require(components.url)
                let error = await #expect(throws: OAuth2Error.self) {
                    _ = try await ProtectedResourceDiscovery(environment: Self.environment())
                        .discover(resource: aliased, unauthorizedResponse: nil)
                }
                #expect(error?.code == .resourceMismatch)
                Self.passed("resource-mismatch-refused")
            }
        }
    }
}

/// A count the step-up hook bumps.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
