import Crypto
import Foundation
@_spi(Tooling) import OAuth2
import OAuth2Internals
import Testing
@testable import OAuth2InteractiveSignIn

/// The implicit grant's fragment relay: the page and its one script, the POST it makes, and
/// the sign-in that completes with it — over real sockets, with node running the page's
/// actual script where it is installed (scripts/test requires it).
@Suite struct FragmentRelayTests {
    /// scripts/test installs nodejs and sets this, so the node tests cannot quietly skip there.
    static let node = Self.findNode()
    static let nodeExpected = node != nil || ProcessInfo.processInfo.environment["OAUTH2_TEST_REQUIRE_NODE"] == "1"
    static let relayScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Browser/fragment-relay.mjs").standardizedFileURL

    static func findNode() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/node" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The page's scripts (the text between each `<script>` and `</script>`).
    static func scripts(in html: String) -> [String] {
        html.components(separatedBy: "<script").dropFirst().compactMap { part -> String? in
            guard let open = part.firstIndex(of: ">"), let close = part.range(of: "</script>") else { return nil }
            return String(part[part.index(after: open)..<close.lowerBound])
        }
    }

    /// A POST of `body` to the listener's callback path, as the script sends it (plus `extra` headers).
    static func post(_ body: String, port: Int, path: String = "/callback", contentType: String = "application/x-www-form-urlencoded", extra: String = "") async throws -> RawHTTP.Answer {
        try await RawHTTP.request(
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://127.0.0.1:\(port)\r\nContent-Type: \(contentType)\r\n\(extra)"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)",
            port: port)
    }

    @Test func theServedScriptIsExactlyWhatTheCSPHashAllows() async throws {
        let listener = try await LoopbackRedirectListener.start(relaysFragment: true)
        let page = try await RawHTTP.get("/callback", port: listener.port)
        await listener.close()
        #expect(page.status == 200)
        let scripts = Self.scripts(in: page.body)
        try #require(scripts.count == 1, "one inline script")
        #expect(!page.body.contains("<script src") && !page.body.contains("src="), "no script is loaded from anywhere")
        let digest = Data(SHA256.hash(data: Data(scripts[0].utf8))).base64EncodedString()
        let csp = try #require(page.header("Content-Security-Policy"))
        let directives = Dictionary(
            csp.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).split(separator: " ").map(String.init) }.map { ($0[0], Array($0.dropFirst())) },
            uniquingKeysWith: { first, _ in first })
        #expect(directives["script-src"] == ["'sha256-\(digest)'"], "the hash of the served script, and nothing else")
        #expect(directives["connect-src"] == ["'self'"])
        #expect(directives["default-src"] == ["'none'"])
        #expect(directives["form-action"] == ["'none'"])
        #expect(scripts[0] == LoopbackPages.fragmentRelayScript)
        #expect(LoopbackPages.fragmentRelayScriptSource == "'sha256-\(digest)'")
        #expect(page.header("Referrer-Policy") == "no-referrer")
        #expect(page.header("Cache-Control") == "no-store")
        for reference in ["http://", "https://", "href=", "@import", "url("] {
            #expect(!page.body.contains(reference), "the page refers to something: \(reference)")
        }
    }

    @Test func withoutRelayThereIsNoScriptAndNoPost() async throws {
        let listener = try await LoopbackRedirectListener.start()
        let waiting = Task { try await listener.waitForCallback(timeout: .seconds(120)) }
        let page = try await RawHTTP.get("/callback", port: listener.port)
        #expect(page.status == 400, "no parameters: rejected, as before")
        #expect(!page.body.contains("<script"))
        #expect(page.header("Content-Security-Policy")?.contains("script-src") == false)
        let post = try await Self.post("access_token=at&state=s", port: listener.port)
        #expect(post.status == 405)
        _ = try await RawHTTP.get("/callback?code=c&state=s", port: listener.port)
        #expect(try await waiting.value.query == "code=c&state=s")
    }

    @Test func onlyARealFragmentFromTheListenersOwnOriginEndsTheWait() async throws {
        let listener = try await LoopbackRedirectListener.start(relaysFragment: true)
        let waiting = Task { try await listener.waitForCallback(timeout: .seconds(120)) }
        let port = listener.port
        // The relay page (as often as the browser loads it) delivers nothing.
        #expect(try await RawHTTP.get("/callback", port: port).status == 200)
        #expect(try await RawHTTP.get("/callback", port: port).status == 200)
        #expect(try await Self.post("", port: port).status == 400, "no fragment data")
        #expect(try await Self.post("state=s&nothing=else", port: port).status == 400, "no token, no error")
        #expect(try await Self.post("access_token=at&state=s", port: port, contentType: "text/plain").status == 415)
        #expect(try await Self.post("access_token=at&state=s", port: port, extra: "Sec-Fetch-Site: cross-site\r\n").status == 403)
        let foreign = try await RawHTTP.request(
            "POST /callback HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: https://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                + "Content-Length: 23\r\nConnection: close\r\n\r\naccess_token=at&state=s", port: port)
        #expect(foreign.status == 403, "another site's page cannot post here")
        #expect(try await Self.post("access_token=at&state=s", port: port, path: "/other").status == 404)
        let big = String(repeating: "a", count: CallbackHandler.maximumRelayBody + 1)
        #expect(try await Self.post("access_token=\(big)&state=s", port: port).status == 413)
        let answer = try await Self.post("access_token=the-token&token_type=Bearer&state=s", port: port)
        #expect(answer.status == 200)
        #expect(answer.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(answer.header("Referrer-Policy") == "no-referrer")
        #expect(answer.body.contains("Signed in"))
        #expect(!answer.body.contains("the-token"), "the answer never echoes a token")
        let callback = try await waiting.value
        #expect(callback.absoluteString == "http://127.0.0.1:\(port)/callback#access_token=the-token&token_type=Bearer&state=s")
        LoopbackRedirectListenerTests.expectReleased(listener)
    }

    @Test func anErrorInTheQueryIsStillACallback() async throws {
        let listener = try await LoopbackRedirectListener.start(relaysFragment: true)
        async let page = RawHTTP.get("/callback?error=access_denied&state=s", port: listener.port)
        let callback = try await listener.waitForCallback(timeout: .seconds(120))
        #expect(callback.query == "error=access_denied&state=s")
        #expect(try await page.body.contains("access_denied"))
    }

    /// Runs the relay browser (node with the page's own script) on `url`. The child is
    /// waited for on a thread of its own, off the cooperative thread pool, which must stay
    /// free to run the listener's verdicts.
    static func runNode(_ url: String) async throws -> (status: Int32, output: String) {
        let node = try #require(node, "node is not installed (apt-get install nodejs)")
        let child = try ChildProcess.spawn(node, arguments: [relayScript.path, url], standardOutput: .pipe, standardError: .output)
        return await withCheckedContinuation { continuation in
            Thread {
                // The pipe reaches its end once the child has exited; then the output is whole.
                let output = child.standardOutput!.readDataToEndOfFile()
                let status: Int32 = switch child.waitUntilExit() {
                case .exited(let status): status
                case .signalled(let signal): 128 + signal
                }
                continuation.resume(returning: (status, String(decoding: output, as: UTF8.self)))
            }.start()
        }
    }

    @Test(.enabled(if: nodeExpected, "node is not installed"))
    func nodeRunsThePagesOwnScriptAndTheFragmentArrives() async throws {
        let listener = try await LoopbackRedirectListener.start(relaysFragment: true)
        let waiting = Task { try await listener.waitForCallback(timeout: .seconds(120)) }
        let base = listener.redirectURI.absoluteString
        // No fragment: the script posts nothing and the wait goes on.
        let empty = try await Self.runNode(base)
        #expect(empty.status == 1, "\(empty.output)")
        #expect(empty.output.contains("no sign-in response"))
        let fragment = "access_token=2YotnFZFEjr1zCsicMWpAA&token_type=Bearer&expires_in=3600&state=xyz%20z"
        let run = try await Self.runNode(base + "#" + fragment)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("Signed in"))
        #expect(!run.output.contains("2YotnFZFEjr1zCsicMWpAA"))
        let callback = try await waiting.value
        #expect(callback.fragment(percentEncoded: true) == fragment, "the fragment arrives byte for byte")
    }

    @Test(.enabled(if: nodeExpected, "node is not installed")) @available(*, deprecated)
    func implicitSignInCompletesThroughTheRealScript() async throws {
        let client = try Self.implicitClient()
        let signIn = LoopbackSignIn(timeout: .seconds(120), browser: .custom { url in
            // The provider: redirects to the listener with the tokens in the fragment.
            guard let state = url.queryValue("state"), let redirect = url.queryValue("redirect_uri") else { return false }
            let forged = try? await Self.runNode(redirect + "#access_token=forged&state=not-the-state")
            #expect(forged?.status == 1, "a wrong state does not end the sign-in")
            let run = try? await Self.runNode(redirect + "#access_token=at-implicit&token_type=Bearer&expires_in=600&scope=read&state=\(state)")
            return run?.status == 0
        }, output: TextSink())
        let tokens = try await signIn.implicitSignIn(client: client, responseType: .token)
        #expect(tokens.accessToken == "at-implicit")
        #expect(tokens.refreshToken == nil)
        #expect(tokens.scopes == ["read"])
    }

    @Test @available(*, deprecated) func implicitSignInIsRefusedUnlessAllowed() async throws {
        var configuration = try Self.implicitClient().configuration
        configuration.allowsImplicitGrant = false
        let client = try OAuth2Client(metadata: try Self.implicitClient().metadata, configuration: configuration)
        let signIn = LoopbackSignIn(timeout: .seconds(5), browser: .none, output: TextSink())
        await #expect(throws: OAuth2Error.self) { _ = try await signIn.implicitSignIn(client: client, responseType: .token) }
    }

    @Test @available(*, deprecated) func implicitVerdictJudgesTheFragment() throws {
        let client = try Self.implicitClient()
        let request = try client.implicitAuthorizationRequest(.token, options: AuthorizationOptions(redirectURI: URL(string: "http://127.0.0.1:9/callback")!))
        func verdict(_ suffix: String) -> LoopbackRedirectListener.Verdict {
            LoopbackSignIn.implicitVerdict(URL(string: "http://127.0.0.1:9/callback" + suffix)!, request: request)
        }
        #expect(verdict("#access_token=at&state=\(request.state)") == .accept)
        #expect(verdict("#access_token=at&state=wrong") == .reject)
        #expect(verdict("") == .reject)
        #expect(verdict("#error=access_denied&state=\(request.state)") == .acceptFailure(errorCode: "access_denied"))
        #expect(verdict("?error=access_denied&state=\(request.state)") == .acceptFailure(errorCode: "access_denied"))
        #expect(verdict("#access_token=at&refresh_token=rt&state=\(request.state)") == .acceptFailure(errorCode: nil))
    }

    static func implicitClient() throws -> OAuth2Client {
        var configuration = ClientConfiguration(clientID: "legacy", scopes: ["read"])
        configuration.allowsImplicitGrant = true
        return try OAuth2Client(
            metadata: ServerMetadata(issuer: URL(string: "http://127.0.0.1:1")!, authorizationEndpoint: URL(string: "http://127.0.0.1:1/authorize")!),
            configuration: configuration)
    }
}

/// Output that goes nowhere (the sign-in's instructions are not under test here).
struct TextSink: TerminalOutput {
    func write(_ text: String) {}
    var isTerminal: Bool { false }
}
