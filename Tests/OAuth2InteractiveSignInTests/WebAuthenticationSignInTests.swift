import Foundation
import OAuth2
import OAuth2Testing
import Testing
@testable import OAuth2InteractiveSignIn

/// `WebAuthenticationSignIn` end to end against the embedded provider: the presenter plays
/// `ASWebAuthenticationSession` — it loads the authorization URL like a browser and hands
/// back the redirect to the app's scheme (or the user's cancellation) — so the request, the
/// callback checks and the code exchange are the real ones.
@Suite struct WebAuthenticationSignInTests {
    static let redirectURI = URL(string: "com.example.app:/oauth/callback")!
    static let appClientID = "ios-app"

    /// The demo provider, with a public app client that redirects to its private-use scheme.
    static func withProvider(
        autoApproved: Bool = true, _ body: @Sendable (TestProvider, OAuth2Client) async throws -> Void
    ) async throws {
        var configuration = TestProvider.Configuration.demo
        configuration.clients.append(TestProvider.Client(id: appClientID, redirectURIs: [redirectURI]))
        if !autoApproved { configuration.autoApprovedUser = nil }
        try await TestProvider.withProvider(configuration: configuration) { provider in
            let client = try await OAuth2Client(
                server: .issuer(provider.issuer),
                configuration: ClientConfiguration(
                    clientID: appClientID, redirectURI: redirectURI, scopes: ["openid", "profile", "offline_access"]),
                environment: HTTPEnvironment(metadataCache: MetadataCache()))
            try await body(provider, client)
        }
    }

    @Test func signsInWithPKCEStateAndNonceAndExchangesTheCode() async throws {
        try await Self.withProvider { provider, client in
            let browser = BrowserPresenter(provider: provider)
            let tokens = try await WebAuthenticationSignIn(presenter: browser).signIn(client: client)

            let shown = try #require(browser.presented.first)
            #expect(browser.presented.count == 1)
            #expect(shown.scheme == "com.example.app")
            let query = Dictionary(uniqueKeysWithValues: (URLComponents(url: shown.url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(query["code_challenge_method"] == "S256")
            #expect((query["code_challenge"]?.count ?? 0) == 43)
            #expect((query["state"]?.count ?? 0) >= 22)
            #expect(query["nonce"] != nil)
            #expect(query["redirect_uri"] == Self.redirectURI.absoluteString)
            #expect(query["client_id"] == Self.appClientID)

            #expect(provider.isActive(token: tokens.accessToken))
            #expect(tokens.refreshToken != nil)
            let claims = try #require(tokens.idTokenClaims)
            #expect(claims.subject == TestProvider.Demo.subject)
            #expect(claims.audiences == [Self.appClientID])
            #expect(claims.nonce == query["nonce"])
            #expect(provider.requestCount(.token) == 1)
        }
    }

    @Test("signIn(client:store:account:) ends with the session, its tokens saved under the account")
    func signInEndsWithAStoredSession() async throws {
        try await Self.withProvider { provider, client in
            let store = MemoryTokenStore()
            let session = try await WebAuthenticationSignIn(presenter: BrowserPresenter(provider: provider))
                .signIn(client: client, store: store, account: "phone")
            #expect(session.key == TokenSession.key(for: client, account: "phone"))
            let stored = try #require(try await store.load(TokenSession.key(for: client, account: "phone")))
            #expect(stored.tokens.accessToken == session.tokens?.accessToken)
            #expect(provider.isActive(token: stored.tokens.accessToken))
        }
    }

    @Test func theUserClosingThePageIsATypedCancellation() async throws {
        try await Self.withProvider { provider, client in
            let browser = BrowserPresenter(provider: provider, answer: { _, _ in .cancelled })
            let error = await oauthError { _ = try await WebAuthenticationSignIn(presenter: browser).signIn(client: client) }
            #expect(error?.code == .userCancelled)
            #expect(error?.source == .client)
            #expect(error?.code != .cancelled, "told apart from the task's cancellation")
            #expect(provider.requestCount(.token) == 0)
        }
    }

    @Test func theProvidersErrorIsATypedErrorAndNoCodeIsExchanged() async throws {
        try await Self.withProvider(autoApproved: false) { provider, client in
            let browser = BrowserPresenter(provider: provider)
            let error = await oauthError { _ = try await WebAuthenticationSignIn(presenter: browser).signIn(client: client) }
            #expect(error?.code == .accessDenied)
            #expect(error?.source == .server)
            #expect(error?.requiresReauthorization == true)
            #expect(provider.requestCount(.token) == 0)
        }
    }

    @Test func aCallbackWithAnotherStateIsRefusedBeforeTheTokenEndpoint() async throws {
        try await Self.withProvider { provider, client in
            let browser = BrowserPresenter(provider: provider, answer: { provider, url in
                .callback(try replacing("state", with: "forged-state", in: try await provider.followRedirect(from: url)))
            })
            let error = await oauthError { _ = try await WebAuthenticationSignIn(presenter: browser).signIn(client: client) }
            #expect(error?.code == .stateMismatch)
            #expect(provider.requestCount(.token) == 0)
        }
    }

    @Test func aCallbackFromAnotherIssuerIsRefusedRFC9207() async throws {
        try await Self.withProvider { provider, client in
            let browser = BrowserPresenter(provider: provider, answer: { provider, url in
                .callback(try replacing("iss", with: "https://mix-up.example", in: try await provider.followRedirect(from: url)))
            })
            let error = await oauthError { _ = try await WebAuthenticationSignIn(presenter: browser).signIn(client: client) }
            #expect(error?.code == .issuerMismatch)
            #expect(provider.requestCount(.token) == 0)
        }
    }

    @Test func aCallbackToAnotherRedirectURIIsRefused() async throws {
        try await Self.withProvider { provider, client in
            let browser = BrowserPresenter(provider: provider, answer: { provider, url in
                let callback = try await provider.followRedirect(from: url)
                var components = try #require(URLComponents(url: callback, resolvingAgainstBaseURL: false))
                components.path = "/elsewhere"
                return .callback(try #require(components.url))
            })
            let error = await oauthError { _ = try await WebAuthenticationSignIn(presenter: browser).signIn(client: client) }
            #expect(error?.code == .redirectMismatch)
            #expect(provider.requestCount(.token) == 0)
        }
    }

    @Test(arguments: ["http://127.0.0.1/callback", "https://app.example.com/callback"])
    func aWebRedirectURIIsRefusedBeforeAnythingIsShown(redirect: String) async throws {
        try await Self.withProvider { provider, client in
            let browser = BrowserPresenter(provider: provider)
            var options = AuthorizationOptions()
            options.redirectURI = URL(string: redirect)
            let error = await oauthError {
                _ = try await WebAuthenticationSignIn(presenter: browser).signIn(client: client, options: options)
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(browser.presented.isEmpty)
            #expect(provider.requestCount(.authorization) == 0)
        }
    }

    // MARK: - Ending a presentation once (what ASWebAuthenticationSession runs through)

    @Test func theTasksCancellationStopsThePresentationAndEndsItTyped() async throws {
        let started = AsyncStream<Void>.makeStream()
        let stopped = AsyncStream<Void>.makeStream()
        let stops = Counter()
        let task = Task {
            try await WebAuthenticationRelay.run { _ in
                started.continuation.yield()
                return {
                    stops.increment()
                    stopped.continuation.yield()
                }
            }
        }
        for await _ in started.stream { break }
        task.cancel()
        let error = await oauthError { _ = try await task.value }
        #expect(error?.code == .cancelled)
        for await _ in stopped.stream { break }
        #expect(stops.value == 1, "the session is dismissed, once")
    }

    @Test func aTaskCancelledBeforeTheStartShowsNothing() async throws {
        let starts = Counter()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await WebAuthenticationRelay.run { _ in
                starts.increment()
                return {}
            }
        }
        let error = await oauthError { _ = try await task.value }
        #expect(error?.code == .cancelled)
        #expect(starts.value == 0)
    }

    @Test func anAnswerBeforeTheWaitCountsAndOnlyTheFirstAnswerCounts() async throws {
        let callback = URL(string: "com.example.app:/oauth/callback?code=c&state=s")!
        let result = try await WebAuthenticationRelay.run { relay in
            relay.finish(callback: callback, error: nil)
            relay.finish(callback: nil, error: NSError(domain: "com.apple.AuthenticationServices.WebAuthenticationSession", code: 1))
            return {}
        }
        #expect(result == .callback(callback))
    }

    @Test func anErrorThrownByTheStartEndsIt() async throws {
        let error = await oauthError {
            _ = try await WebAuthenticationRelay.run { _ in
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "did not start")
            }
        }
        #expect(error?.message == "did not start")
    }

    @Test func webAuthenticationSessionErrorsAreMapped() throws {
        let domain = "com.apple.AuthenticationServices.WebAuthenticationSession"
        #expect(try WebAuthenticationRelay.result(callback: nil, error: NSError(domain: domain, code: 1)) == .cancelled)
        for code in [2, 3] {
            #expect(throws: OAuth2Error.self) { try WebAuthenticationRelay.result(callback: nil, error: NSError(domain: domain, code: code)) }
            do {
                _ = try WebAuthenticationRelay.result(callback: nil, error: NSError(domain: domain, code: code))
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidConfiguration)
            }
        }
        for error in [NSError(domain: "NSURLErrorDomain", code: -1009), nil] as [NSError?] {
            do {
                _ = try WebAuthenticationRelay.result(callback: nil, error: error)
                Issue.record("no callback, yet a result")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidResponse)
            }
        }
    }
}

/// Plays `ASWebAuthenticationSession`: loads the authorization URL like a browser (the
/// provider signs the user in without asking) and returns the redirect, unless `answer`
/// says otherwise.
private final class BrowserPresenter: WebAuthenticationPresenter, @unchecked Sendable {
    typealias Answer = @Sendable (TestProvider, URL) async throws -> WebAuthenticationResult
    let provider: TestProvider
    let answer: Answer
    private let lock = NSLock()
    private var shown: [(url: URL, scheme: String)] = []

    init(provider: TestProvider, answer: Answer? = nil) {
        self.provider = provider
        self.answer = answer ?? { provider, url in .callback(try await provider.followRedirect(from: url)) }
    }

    var presented: [(url: URL, scheme: String)] { lock.withLock { shown } }

    func present(_ url: URL, callbackScheme: String) async throws -> WebAuthenticationResult {
        lock.withLock { shown.append((url, callbackScheme)) }
        let result = try await answer(provider, url)
        if case .callback(let callback) = result, callback.scheme != callbackScheme {
            Issue.record("the provider redirected to \(callback.scheme ?? "no scheme"), not \(callbackScheme)")
        }
        return result
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

private func replacing(_ name: String, with value: String, in url: URL) throws -> URL {
    var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
    components.queryItems = components.queryItems?.map { $0.name == name ? URLQueryItem(name: name, value: value) : $0 }
    return try #require(components.url)
}

private func oauthError(_ body: () async throws -> Void) async -> OAuth2Error? {
    do {
        try await body()
        Issue.record("no error")
        return nil
    } catch let error as OAuth2Error {
        return error
    } catch {
        Issue.record("not an OAuth2Error: \(error)")
        return nil
    }
}
