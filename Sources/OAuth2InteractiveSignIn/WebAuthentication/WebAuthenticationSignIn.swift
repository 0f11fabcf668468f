import Foundation
import NIOConcurrencyHelpers
import OAuth2

/// What shows the user the authorization page and hands back where the provider
/// redirected: `ASWebAuthenticationSession` on Apple platforms
/// (`WebAuthenticationSessionPresenter`), or your own (an embedded web view, a test
/// driving a provider).
///
/// A presenter only presents: ``WebAuthenticationSignIn`` builds the request before and
/// checks the callback after.
public protocol WebAuthenticationPresenter: Sendable {
    /// Shows `url` and returns the first URL of `callbackScheme` the browser is sent to, or
    /// ``WebAuthenticationResult/cancelled`` when the user closed the page first.
    ///
    /// - Parameters:
    ///   - url: the authorization request's URL.
    ///   - callbackScheme: the redirect URI's scheme (`com.example.app`).
    /// - Throws: when the page cannot be shown; `CancellationError` or
    ///   `OAuth2Error.Code.cancelled` when the task is cancelled.
    func present(_ url: URL, callbackScheme: String) async throws -> WebAuthenticationResult
}

/// How a ``WebAuthenticationPresenter``'s presentation ended.
public enum WebAuthenticationResult: Sendable, Hashable {
    /// The browser was sent to this URL of the callback scheme (the provider's redirect,
    /// with `code`, `state` and `iss`, or `error`).
    case callback(URL)
    /// The user closed the page (or refused to continue) before the provider redirected.
    case cancelled
}

/// Interactive sign-in with the authorization code flow through a web authentication
/// session — on iOS and macOS `ASWebAuthenticationSession`, whose redirect comes back to the
/// app's private-use URI scheme (RFC 8252 §7.1).
///
/// ```swift
/// let presenter = WebAuthenticationSessionPresenter(presentationContextProvider: self)
/// let tokens = try await WebAuthenticationSignIn(presenter: presenter).signIn(client: client)
/// ```
///
/// The request is made by `OAuth2Client.startAuthorization(_:)` — PKCE (S256), `state`,
/// a `nonce` with `openid`, pushed (PAR) when the server requires it or the configuration
/// asks for it — and the callback is checked and its code exchanged by
/// `OAuth2Client.completeAuthorization(callbackURL:request:)`: `state` compared, `iss`
/// checked (RFC 9207), the provider's `error` turned into an `OAuth2Error`, the ID token
/// verified. Everything but the presentation is platform-neutral, and tested on Linux.
public struct WebAuthenticationSignIn: Sendable {
    /// What presents the authorization page.
    public var presenter: any WebAuthenticationPresenter

    /// A sign-in through `presenter`.
    public init(presenter: any WebAuthenticationPresenter) {
        self.presenter = presenter
    }

    /// Signs the user in and returns the tokens.
    ///
    /// - Parameters:
    ///   - client: the client; its redirect URI (or `options.redirectURI`) must use a
    ///     private-use scheme such as `com.example.app:/oauth/callback`.
    ///   - options: the authorization request's options (scopes, prompt, login hint…).
    /// - Throws: `OAuth2Error.Code.invalidConfiguration` for a redirect URI of scheme
    ///   `http` or `https` (a web authentication session returns only to a private-use
    ///   scheme; use `LoopbackSignIn` for a loopback redirect), before anything is shown;
    ///   what `OAuth2Client.startAuthorization(_:)` throws; what the presenter throws;
    ///   `OAuth2Error.Code.userCancelled` when the user closed the page;
    ///   `OAuth2Error.Code.cancelled` when the task is cancelled; the provider's error
    ///   (`access_denied`…), `OAuth2Error.Code.stateMismatch`,
    ///   `OAuth2Error.Code.issuerMismatch` and everything else
    ///   `OAuth2Client.completeAuthorization(callbackURL:request:)` throws.
    public func signIn(client: OAuth2Client, options: AuthorizationOptions = AuthorizationOptions()) async throws -> TokenSet {
        let callbackScheme = try Self.callbackScheme(options.redirectURI ?? client.configuration.redirectURI)
        let request = try await client.startAuthorization(options)
        let result = try await presenter.present(request.url, callbackScheme: callbackScheme)
        if Task.isCancelled { throw OAuth2Error(.cancelled, source: .client, message: "The sign-in was cancelled.") }
        switch result {
        case .cancelled:
            throw OAuth2Error(.userCancelled, source: .client, message: "The user closed the sign-in page.")
        case .callback(let url):
            return try await client.completeAuthorization(callbackURL: url, request: request)
        }
    }

    /// Signs the user in and keeps the sign-in: the tokens are saved in `store` under
    /// `account` (on Apple platforms, a `KeychainTokenStore`), and the session that keeps
    /// them fresh is returned.
    ///
    /// ```swift
    /// let session = try await WebAuthenticationSignIn(presenter: presenter).signIn(client: client, store: KeychainTokenStore())
    /// ```
    ///
    /// - Parameters:
    ///   - client: the client, with a private-use redirect URI.
    ///   - store: where the tokens are saved.
    ///   - account: the name the tokens are saved under (`"default"`).
    ///   - options: the authorization request's options.
    ///   - sessionOptions: the session's options (refresh leeway, renewal, retries).
    /// - Returns: the session, its tokens already in `store`.
    /// - Throws: as ``signIn(client:options:)``; what `store` throws when saving.
    public func signIn(
        client: OAuth2Client,
        store: any TokenStore,
        account: String = "default",
        options: AuthorizationOptions = AuthorizationOptions(),
        sessionOptions: TokenSession.Options = TokenSession.Options()
    ) async throws -> TokenSession {
        let tokens = try await signIn(client: client, options: options)
        return try await TokenSession(client: client, tokens: tokens, store: store, account: account, options: sessionOptions)
    }

    /// The scheme a web authentication session waits for: the redirect URI's, which must
    /// be a private-use one (not `http` or `https`).
    static func callbackScheme(_ redirectURI: URL?) throws -> String {
        guard let redirectURI, let scheme = redirectURI.scheme?.lowercased(), !scheme.isEmpty else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The client has no redirect URI.")
        }
        guard scheme != "http", scheme != "https" else {
            throw OAuth2Error(
                .invalidConfiguration, source: .client,
                message: "A web authentication session returns to a private-use URI scheme (RFC 8252 §7.1), not \(scheme): register a redirect URI such as com.example.app:/oauth/callback, or use LoopbackSignIn.")
        }
        return scheme
    }
}

/// Ends one presentation exactly once — with the browser's answer, with an error, or with
/// the task's cancellation, which also stops the presentation — whatever order the
/// browser's completion handler, the start of the presentation and the cancellation come in.
/// `WebAuthenticationSessionPresenter` runs `ASWebAuthenticationSession` through it.
package final class WebAuthenticationRelay: Sendable {
    private struct State {
        var answer: Result<WebAuthenticationResult, any Error>?
        var waiter: CheckedContinuation<WebAuthenticationResult, any Error>?
        var finished = false
        var cancelled = false
        var stop: (@Sendable () async -> Void)?
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// Runs `start`, which begins a presentation that ends with ``finish(callback:error:)``
    /// and returns how to stop it, and returns the presentation's result.
    ///
    /// - Throws: what `start` throws; `OAuth2Error.Code.cancelled` when the task is
    ///   cancelled (the presentation is then stopped); what ``finish(callback:error:)`` maps.
    package static func run(
        _ start: @Sendable (WebAuthenticationRelay) async throws -> @Sendable () async -> Void
    ) async throws -> WebAuthenticationResult {
        let relay = WebAuthenticationRelay()
        return try await withTaskCancellationHandler {
            // Cancelled already: ended by `onCancel`, nothing is shown.
            if !relay.hasEnded {
                do {
                    relay.started(stop: try await start(relay))
                } catch {
                    relay.end(.failure(error))
                }
            }
            return try await relay.wait()
        } onCancel: {
            relay.cancel()
        }
    }

    /// The browser's answer, as `ASWebAuthenticationSession`'s completion handler gives it;
    /// only the first answer counts.
    package func finish(callback: URL?, error: (any Error)?) {
        end(Result { try Self.result(callback: callback, error: error) })
    }

    /// An `ASWebAuthenticationSession` answer as a result: a callback URL; the user's
    /// cancellation (`ASWebAuthenticationSessionError.canceledLogin`); or an error —
    /// `OAuth2Error.Code.invalidConfiguration` without a usable presentation anchor
    /// (`.presentationContextNotProvided`, `.presentationContextInvalid`).
    static func result(callback: URL?, error: (any Error)?) throws -> WebAuthenticationResult {
        if let callback { return .callback(callback) }
        let error = error.map { $0 as NSError }
        if error?.domain == "com.apple.AuthenticationServices.WebAuthenticationSession" {
            switch error?.code {
            case 1: return .cancelled
            case 2, 3:
                throw OAuth2Error(
                    .invalidConfiguration, source: .client,
                    message: "The web authentication session has no usable presentation anchor (ASWebAuthenticationSessionError \(error?.code ?? 0)).")
            default: break
            }
        }
        let reason = error.map { " (\($0.domain) \($0.code))" } ?? ""
        throw OAuth2Error(.invalidResponse, source: .client, message: "The web authentication session ended without a callback\(reason).")
    }

    private var hasEnded: Bool { state.withLockedValue(\.finished) }

    /// The presentation began; `stop` ends it early. A cancellation that came first stops it now.
    private func started(stop: @escaping @Sendable () async -> Void) {
        let stopNow = state.withLockedValue { state -> Bool in
            if state.cancelled { return true }
            state.stop = stop
            return false
        }
        if stopNow { Task { await stop() } }
    }

    private func cancel() {
        let stop = state.withLockedValue { state -> (@Sendable () async -> Void)? in
            state.cancelled = true
            defer { state.stop = nil }
            return state.finished ? nil : state.stop
        }
        end(.failure(OAuth2Error(.cancelled, source: .client, message: "The sign-in was cancelled.")))
        if let stop { Task { await stop() } }
    }

    private func end(_ result: Result<WebAuthenticationResult, any Error>) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<WebAuthenticationResult, any Error>? in
            guard !state.finished else { return nil }
            state.finished = true
            state.stop = nil
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.answer = result
            return nil
        }
        waiter?.resume(with: result)
    }

    private func wait() async throws -> WebAuthenticationResult {
        try await withCheckedThrowingContinuation { continuation in
            let answer = state.withLockedValue { state -> Result<WebAuthenticationResult, any Error>? in
                if let answer = state.answer {
                    state.answer = nil
                    return answer
                }
                state.waiter = continuation
                return nil
            }
            if let answer { continuation.resume(with: answer) }
        }
    }
}
