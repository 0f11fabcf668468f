#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
import AuthenticationServices
import Foundation
import OAuth2

// Apple platforms only, and not compiled by this project's CI (Linux): it starts and stops an
// ASWebAuthenticationSession, nothing more. Ending it once, cancellation and the mapping of
// its errors are in `WebAuthenticationRelay`; building the request and checking the callback
// in `WebAuthenticationSignIn`; both are compiled and tested on Linux.

/// Presents the authorization page in an `ASWebAuthenticationSession`, which hands the
/// redirect to the app's private-use URI scheme back without a URL handler in the app.
@MainActor
public final class WebAuthenticationSessionPresenter: WebAuthenticationPresenter {
    /// `true` asks for a private browser session that shares no cookies with Safari (no
    /// single sign-on; no "wants to use … to sign in" prompt). Default `false`.
    public var prefersEphemeralWebBrowserSession: Bool
    /// The window to present over (held weakly, as the session holds it).
    public weak var presentationContextProvider: (any ASWebAuthenticationPresentationContextProviding)?
    private var session: ASWebAuthenticationSession?

    /// A presenter over `presentationContextProvider`'s window.
    public init(
        presentationContextProvider: any ASWebAuthenticationPresentationContextProviding,
        prefersEphemeralWebBrowserSession: Bool = false
    ) {
        self.presentationContextProvider = presentationContextProvider
        self.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
    }

    /// Shows `url` in an `ASWebAuthenticationSession` and returns its callback, or
    /// ``WebAuthenticationResult/cancelled`` when the user closed it.
    ///
    /// - Throws: `OAuth2Error.Code.invalidConfiguration` when the session cannot start or has
    ///   no presentation anchor; `OAuth2Error.Code.cancelled` when the task is cancelled (the
    ///   session is dismissed).
    nonisolated public func present(_ url: URL, callbackScheme: String) async throws -> WebAuthenticationResult {
        try await WebAuthenticationRelay.run { relay in
            try await self.start(url, callbackScheme: callbackScheme, relay: relay)
            return { await self.stop() }
        }
    }

    private func start(_ url: URL, callbackScheme: String, relay: WebAuthenticationRelay) throws {
        // @Sendable: not main-actor isolated, whichever thread the session calls it on.
        let session = ASWebAuthenticationSession(url: url, callbackURLScheme: callbackScheme) { @Sendable callback, error in
            relay.finish(callback: callback, error: error)
        }
        session.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
        session.presentationContextProvider = presentationContextProvider
        guard session.start() else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The ASWebAuthenticationSession did not start.")
        }
        self.session = session
    }

    private func stop() {
        session?.cancel()
        session = nil
    }
}
#endif
