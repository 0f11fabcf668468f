import Foundation

/// A change of a ``TokenSession``'s tokens, for an app that reacts to refreshes and sign-outs
/// (update a UI, re-open a connection, show the sign-in screen).
///
/// ```swift
/// for await event in session.events() {
///     switch event {
///     case .signedOut(let error): showSignIn(reason: error)
///     default: break
///     }
/// }
/// ```
public enum TokenSessionEvent: Sendable, CustomStringConvertible {
    /// The session has new tokens from a sign-in (``TokenSession/signIn(_:)``).
    case signedIn(TokenSet)
    /// The session's tokens were renewed: by this session, or by another session or
    /// process sharing the store (then they were read from the store).
    case refreshed(TokenSet)
    /// Renewing failed and every token was kept: a network failure, a 5xx, a 429
    /// (``OAuth2Error/retryAfter`` says when to try again), or another error that is not a
    /// refused grant.
    case refreshFailed(OAuth2Error)
    /// The session has no tokens any more: `nil` after ``TokenSession/signOut(_:endSession:progress:)``
    /// removed them, else the error that ended the grant (``OAuth2Error/Code/signInRequired``).
    case signedOut(OAuth2Error?)

    /// The event's kind, the tokens redacted.
    public var description: String {
        switch self {
        case .signedIn(let tokens): "signedIn(\(tokens))"
        case .refreshed(let tokens): "refreshed(\(tokens))"
        case .refreshFailed(let error): "refreshFailed(\(error))"
        case .signedOut(let error): "signedOut(\(error.map(String.init(describing:)) ?? "by the app"))"
        }
    }
}
