import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport
import Testing

extension Integration {
    /// The official MCP Python SDK's server side (mcp 2.3.0: `MCPServer` with `AuthSettings`
    /// and a `TokenVerifier`, Tests/MCPPython/resource_server.py) as the resource our client
    /// signs into from its URL alone, as the article "Calling an MCP server" shows: the `401`
    /// and its `resource_metadata`, the SDK's protected resource metadata, Glewlwyd as its
    /// authorization server, a sign-in with PKCE and `resource`, tools over streamable HTTP,
    /// and a step-up on `403 insufficient_scope`. The server asks Glewlwyd about each token
    /// (RFC 7662) as the confidential client `code-conf`: Glewlwyd answers a client only about
    /// its own tokens.
    ///
    /// Needs `OAUTH2_TEST_MCP_PYTHON`, the python of the pinned venv
    /// (`Tests/MCPPython/resource.sh python`); without it the tests fail, they do not skip.
    /// Each passing check appends `mcp python-server <check>` to `$OAUTH2_INTEGRATION_LOG`.
    @Suite struct MCPPythonResourceServer {
        /// The API Glewlwyd issues tokens of scope `read` for (its `resource-scope`).
        static let glewlwydResource = Server.env("OAUTH2_TEST_GLEWLWYD_RESOURCE", "https://api.example.test/orders")

        static func passed(_ check: String) {
            IntegrationLog.append("mcp python-server", test: check)
        }

        /// The Python server, started on a free port for one test.
        final class RunningServer: Sendable {
            let process: Process
            let url: URL

            init(process: Process, url: URL) {
                self.process = process
                self.url = url
            }

            /// Stops the server: SIGTERM, then (a hang bound of 10 s) SIGKILL; it keeps nothing.
            func stop() {
                guard process.isRunning else { return }
                process.terminate()
                for _ in 0..<100 where process.isRunning { usleep(100_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
            }
        }

        /// Starts resource_server.py trusting Glewlwyd for tokens whose audience is `audience`,
        /// and waits (a hang bound, not a speed requirement) for its `LISTENING <url>` line.
        static func start(audience: String = glewlwydResource) async throws -> RunningServer {
            let python = try #require(
                Server.environment["OAUTH2_TEST_MCP_PYTHON"].flatMap { $0.isEmpty ? nil : $0 },
                "OAUTH2_TEST_MCP_PYTHON is not set: Tests/MCPPython/resource.sh python prints it (scripts/test sets it)")
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("MCPPython/resource_server.py")
            let issuer = Server.glewlwyd.issuer.absoluteString
            let conf = Server.glewlwyd.confidential()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [script.path]
            var environment = ProcessInfo.processInfo.environment
            environment["MCP_RS_ISSUER"] = issuer
            environment["MCP_RS_INTROSPECTION_URL"] = issuer + "/introspect"
            environment["MCP_RS_INTROSPECTION_ID"] = conf.clientID
            environment["MCP_RS_INTROSPECTION_SECRET"] = conf.clientSecret ?? ""
            environment["MCP_RS_AUDIENCE"] = audience
            process.environment = environment
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let lines = output.fileHandleForReading
            let url: URL? = await Task.detached {
                var text = ""
                while !text.contains("\n") {
                    let data = lines.availableData  // blocks until output or end of file
                    if data.isEmpty { return nil }
                    text += String(decoding: data, as: UTF8.self)
                }
                let first = text.split(separator: "\n").first.map(String.init) ?? ""
                guard first.hasPrefix("LISTENING ") else { return nil }
                return URL(string: String(first.dropFirst("LISTENING ".count)))
            }.value
            if url == nil, process.isRunning { process.terminate() }
            return RunningServer(process: process, url: try #require(url, "resource_server.py did not start"))
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

        @Test func fromItsURLAloneToAToolAndAStepUp() async throws {
            let server = try await Self.start()
            defer { server.stop() }
            let environment = HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache())

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
            #expect(found.issuer == Server.glewlwyd.issuer)
            #expect(found.authorizationServer.issuer == Server.glewlwyd.issuer.absoluteString)
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

            // Bound to the resource as discovered, the sign-in asks Glewlwyd for a token for
            // the MCP server's own URL, and Glewlwyd 2.7.5 refuses it: it issues tokens only for
            // the resources its configuration lists for a scope, compared exactly
            // (protocol_oidc.c verify_resource), and a server on a port picked per run cannot be
            // listed beforehand.
            let bound = found.boundToResource(conf)
            #expect(bound.scopes == ["read"])
            let boundClient = try await OAuth2Client(server: found.server, configuration: bound, environment: environment)
            let refused = await #expect(throws: OAuth2Error.self) { _ = try await Self.signIn(boundClient) }
            #expect(refused?.code == .invalidTarget, "Glewlwyd: invalid_target (RFC 8707 §2)")
            Self.passed("glewlwyd-refuses-unlisted-resource")

            // So the server trusts the API identifier Glewlwyd lists (its verifier's audience),
            // and the client names that one as its resource indicator; everything else is the
            // article's.
            var configuration = bound
            for kind in [RequestKind.authorization, .token, .deviceAuthorization] {
                configuration.additionalParameters[kind, default: [:]]["resource"] = Self.glewlwydResource
            }
            let client = try await OAuth2Client(server: found.server, configuration: configuration, environment: environment)
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

        @Test func tokensNotForTheServerAreRefused() async throws {
            let server = try await Self.start()
            defer { server.stop() }

            // The served client's token without a resource indicator: Glewlwyd's aud is then the
            // scope list, not the API; active at Glewlwyd, refused by the verifier.
            let password = try await Server.glewlwyd.client(Server.glewlwyd.passwordClient())
                .password(username: Server.username, password: Server.password)
            var other = MCP(url: server.url, send: Self.bearer(password.accessToken))
            #expect(try await other.initialize().status == .unauthorized)
            Self.passed("refuses-other-audience")

            // A token for the API but of another client (cc): Glewlwyd tells the server's client
            // nothing about it (active: false).
            let foreign = try await Server.glewlwyd.client(Server.glewlwyd.clientCredentials())
                .requestToken(Grant(type: "client_credentials", parameters: [("scope", "read"), ("resource", Self.glewlwydResource)], requestedScopes: ["read"]))
            var foreignMCP = MCP(url: server.url, send: Self.bearer(foreign.accessToken))
            #expect(try await foreignMCP.initialize().status == .unauthorized)
            Self.passed("refuses-other-client")

            // A token Glewlwyd never issued.
            var madeUp = MCP(url: server.url, send: Self.bearer("madeUp" + UUID().uuidString))
            #expect(try await madeUp.initialize().status == .unauthorized)
            Self.passed("refuses-made-up-token")
        }

        @Test func metadataNamingAnotherResourceIsRefused() async throws {
            // The server's own metadata is right; one whose resource is not the URL called (the
            // same server reached through "localhost", its metadata found at the well-known
            // place) is refused before any authorization server is asked.
            let server = try await Self.start()
            defer { server.stop() }
            var components = try #require(URLComponents(url: server.url, resolvingAgainstBaseURL: false))
            components.host = "localhost"
            let aliased = try #require(components.url)
            let error = await #expect(throws: OAuth2Error.self) {
                _ = try await ProtectedResourceDiscovery(environment: HTTPEnvironment(transport: URLSessionTransport.shared, metadataCache: MetadataCache()))
                    .discover(resource: aliased, unauthorizedResponse: nil)
            }
            #expect(error?.code == .resourceMismatch)
            Self.passed("resource-mismatch-refused")
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
