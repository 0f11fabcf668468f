import Foundation
import OAuth2
import OAuth2TestSupport
import Testing
@testable import OAuth2InteractiveSignIn

/// `LoopbackSignIn` end to end against a local provider: the "browser" is a closure that
/// plays the provider's redirect by requesting the listener's redirect URI.
@Suite struct LoopbackSignInTests {
    static let accepted = SignInProvider.tokens

    @Test func signsInAndIgnoresStrayAndForgedRequests() async throws {
        try await SignInProvider.with(token: { _, _ in Self.accepted }) { provider in
            let output = CapturedOutput()
            let statuses = Statuses()
            let signIn = LoopbackSignIn(timeout: .seconds(120), browser: .custom { url in
                guard let redirect = url.queryValue("redirect_uri").flatMap(URL.init(string:)), let state = url.queryValue("state"),
                    let port = redirect.port
                else { return false }
                do {
                    // A page of another site guessing at the sign-in; a favicon request.
                    statuses.add(try await RawHTTP.get("/callback?code=forged&state=guess", port: port).status)
                    statuses.add(try await RawHTTP.get("/callback?a=1&a=2", port: port).status)
                    statuses.add(try await RawHTTP.get("/favicon.ico", port: port).status)
                    statuses.add(try await RawHTTP.get("/callback?code=the-code&state=\(state)", port: port).status)
                } catch {
                    return false
                }
                return true
            }, output: output)
            let client = try provider.client()
            let tokens = try await signIn.signIn(client: client)
            #expect(tokens.accessToken == "at-from-fake")
            #expect(statuses.all == [400, 400, 404, 200])
            let form = try #require(provider.tokenRequests.first)
            #expect(provider.tokenRequests.count == 1, "only the real response reached the token endpoint")
            #expect(form["code"] == "the-code")
            #expect(form["grant_type"] == "authorization_code")
            #expect(form["redirect_uri"]?.hasPrefix("http://127.0.0.1:") == true)
            #expect((form["code_verifier"]?.count ?? 0) >= 43, "RFC 7636 §4.1: 43 to 128 characters")
            #expect(output.text.contains("Your browser has been opened to sign in"))
            #expect(output.text.contains(provider.baseURL.appendingPathComponent("authorize").absoluteString))
            #expect(!output.text.contains("the-code"))
            #expect(!output.text.contains("at-from-fake"))
        }
    }

    @Test("signIn(client:store:account:) ends with the session, its tokens saved under the account")
    func signInEndsWithAStoredSession() async throws {
        try await SignInProvider.with(token: { _, _ in Self.accepted }) { provider in
            let signIn = LoopbackSignIn(timeout: .seconds(120), browser: .custom { url in
                guard let redirect = url.queryValue("redirect_uri").flatMap(URL.init(string:)), let state = url.queryValue("state"),
                    let port = redirect.port
                else { return false }
                return (try? await RawHTTP.get("/callback?code=the-code&state=\(state)", port: port).status) == 200
            }, output: CapturedOutput())
            let client = try provider.client()
            let store = MemoryTokenStore()
            let session = try await signIn.signIn(client: client, store: store, account: "work")
            #expect(session.key == TokenSession.key(for: client, account: "work"))
            #expect(session.tokens?.accessToken == "at-from-fake")
            let stored = try #require(try await store.load(TokenSession.key(for: client, account: "work")))
            #expect(stored.tokens.accessToken == "at-from-fake")
            #expect(try await store.load(TokenSession.key(for: client, account: "default")) == nil)
            #expect(provider.tokenRequests.count == 1)
        }
    }

    @Test func theProvidersErrorEndsTheSignInTyped() async throws {
        try await SignInProvider.with(token: { _, _ in Self.accepted }) { provider in
            let page = PageBox()
            let signIn = LoopbackSignIn(timeout: .seconds(120), browser: .custom { url in
                guard let redirect = url.queryValue("redirect_uri").flatMap(URL.init(string:)), let state = url.queryValue("state") else { return false }
                page.answer = try? await RawHTTP.get("/callback?error=access_denied&error_description=No+thanks&state=\(state)", port: redirect.port ?? 0)
                return true
            }, output: CapturedOutput())
            do {
                _ = try await signIn.signIn(client: try provider.client())
                Issue.record("a denied sign-in returned tokens")
            } catch let error as OAuth2Error {
                #expect(error.code == .accessDenied)
                #expect(error.message == "No thanks")
            }
            #expect(provider.tokenRequests.isEmpty)
            #expect(page.answer?.body.contains("(access_denied)") == true)
        }
    }

    @Test func withoutABrowserTheURLIsPrintedAndTheTimeoutEndsIt() async throws {
        try await SignInProvider.with(token: { _, _ in Self.accepted }) { provider in
            let output = CapturedOutput()
            let reserved = try ReservedPort()
            let signIn = LoopbackSignIn(port: reserved.port, timeout: .milliseconds(500), browser: .none, output: output)
            do {
                _ = try await signIn.signIn(client: try provider.client())
                Issue.record("no response, yet tokens")
            } catch let error as OAuth2Error {
                #expect(error.code == .timeout)
            }
            #expect(output.text.contains("To sign in, open this URL in a browser:"))
            let printed = try #require(output.text.split(separator: "\n").first(where: { $0.contains("/authorize?") }))
            let url = try #require(URL(string: printed.trimmingCharacters(in: .whitespaces)))
            let redirect = try #require(url.queryValue("redirect_uri").flatMap(URL.init(string:)))
            #expect(redirect.port == reserved.port)
            // The port is free again: no other test can have taken it (see ReservedPort).
            try await LoopbackRedirectListenerTests.expectBindable(reserved)
        }
    }

    @Test func cancellingTheTaskEndsTheSignIn() async throws {
        try await SignInProvider.with(token: { _, _ in Self.accepted }) { provider in
            let client = try provider.client()
            let task = Task { try await LoopbackSignIn(timeout: nil, browser: .none, output: CapturedOutput()).signIn(client: client) }
            try await Task.sleep(for: .milliseconds(300))
            task.cancel()
            await #expect(throws: OAuth2Error.self) { try await task.value }
        }
    }

    @Test func signOutWaitsForThePostLogoutRedirectWithItsState() async throws {
        try await SignInProvider.with(token: { _, _ in Self.accepted }) { provider in
            let statuses = Statuses()
            let opened = PageBox()
            let signOut = LoopbackSignIn(callbackPath: "/logged-out", timeout: .seconds(120), browser: .custom { url in
                opened.url = url
                guard let redirect = url.queryValue("post_logout_redirect_uri").flatMap(URL.init(string:)), let state = url.queryValue("state"),
                    let port = redirect.port
                else { return false }
                statuses.add((try? await RawHTTP.get("/logged-out?state=forged", port: port).status) ?? 0)
                let answer = try? await RawHTTP.get("/logged-out?state=\(state)", port: port)
                statuses.add(answer?.status ?? 0)
                opened.answer = answer
                return true
            }, output: CapturedOutput())
            try await signOut.signOut(client: try provider.client(), options: EndSessionOptions(idTokenHint: "the-id-token"))
            #expect(statuses.all == [400, 200])
            #expect(opened.url?.path == "/logout")
            #expect(opened.url?.queryValue("id_token_hint") == "the-id-token")
            #expect(opened.url?.queryValue("post_logout_redirect_uri")?.hasSuffix("/logged-out") == true)
            #expect(opened.answer?.body.contains("Signed out") == true)
        }
    }

    @Test func theVerdictChecksTheStateFirst() throws {
        let metadata = ServerMetadata(
            issuer: URL(string: "https://as.example.com")!, authorizationEndpoint: URL(string: "https://as.example.com/authorize")!,
            tokenEndpoint: URL(string: "https://as.example.com/token")!,
            additionalFields: ["authorization_response_iss_parameter_supported": .bool(true)])
        let client = try OAuth2Client(metadata: metadata, configuration: ClientConfiguration(clientID: "cli"))
        let request = try client.authorizationRequest(AuthorizationOptions(redirectURI: URL(string: "http://127.0.0.1:5555/callback")!))
        let base = "http://127.0.0.1:5555/callback?"
        let iss = "iss=https%3A%2F%2Fas.example.com"
        func verdict(_ query: String) -> LoopbackRedirectListener.Verdict {
            LoopbackSignIn.verdict(URL(string: base + query)!, request: request)
        }
        #expect(verdict("code=c&state=\(request.state)&\(iss)") == .accept)
        #expect(verdict("code=c&state=wrong&\(iss)") == .reject)
        #expect(verdict("code=c&\(iss)") == .reject)
        #expect(verdict("code=c&state=\(request.state)&state=\(request.state)&\(iss)") == .reject)
        #expect(verdict("x=1&x=2") == .reject, "a malformed request cannot end the sign-in")
        #expect(verdict("error=access_denied&state=\(request.state)&\(iss)") == .acceptFailure(errorCode: "access_denied"))
        #expect(verdict("code=c&state=\(request.state)&iss=https%3A%2F%2Fevil.example.com") == .acceptFailure(errorCode: nil))
        #expect(verdict("code=c&state=\(request.state)") == .acceptFailure(errorCode: nil), "the promised iss is missing")
        #expect(LoopbackSignIn.verdict(URL(string: "http://127.0.0.1:5555/other?code=c&state=\(request.state)&\(iss)")!, request: request) == .reject)
    }

    @Test("A JARM request's verdict reads the state inside the response JWT (query or relayed fragment); plain answers are ignored")
    func theJWTVerdictChecksTheStateInside() throws {
        let metadata = ServerMetadata(
            issuer: URL(string: "https://as.example.com")!, authorizationEndpoint: URL(string: "https://as.example.com/authorize")!,
            tokenEndpoint: URL(string: "https://as.example.com/token")!)
        var configuration = ClientConfiguration(clientID: "cli")
        configuration.jarm = JARMOptions()
        let client = try OAuth2Client(metadata: metadata, configuration: configuration)
        let request = try client.authorizationRequest(AuthorizationOptions(redirectURI: URL(string: "http://127.0.0.1:5555/callback")!))
        let key = try JWSSigningKey.generate(.es256)
        func verdict(_ parameters: String) -> LoopbackRedirectListener.Verdict {
            LoopbackSignIn.jwtVerdict(URL(string: "http://127.0.0.1:5555/callback" + parameters)!, request: request, client: client)
        }
        let mine = try key.sign(claims: ["state": .string(request.state), "code": "c"])
        let other = try key.sign(claims: ["state": "guess", "code": "c"])
        #expect(verdict("?response=\(mine)") == .accept)
        #expect(verdict("#response=\(mine)") == .accept, "fragment.jwt, relayed")
        #expect(verdict("?response=\(other)") == .reject)
        #expect(verdict("?response=\(mine)&response=\(mine)") == .reject)
        #expect(verdict("?code=c&state=\(request.state)") == .reject, "a plain answer never ends a JARM sign-in")
        #expect(verdict("?response=garbage") == .reject)
    }
}

final class Statuses: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int] = []
    func add(_ value: Int) { lock.withLock { values.append(value) } }
    var all: [Int] { lock.withLock { values } }
}

final class PageBox: @unchecked Sendable {
    private let lock = NSLock()
    private var storedAnswer: RawHTTP.Answer?
    private var storedURL: URL?
    var answer: RawHTTP.Answer? {
        get { lock.withLock { storedAnswer } }
        set { lock.withLock { storedAnswer = newValue } }
    }
    var url: URL? {
        get { lock.withLock { storedURL } }
        set { lock.withLock { storedURL = newValue } }
    }
}
