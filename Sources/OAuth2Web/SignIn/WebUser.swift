import Foundation
import OAuth2
import OAuth2JOSE

/// The signed-in user of a request, as a handler sees them: who they are (the claims of
/// their ID token), the token for the app's forms, and their tokens, refreshed when needed,
/// for calls to APIs on their behalf.
///
/// ```swift
/// let user = try await webSignIn.user(for: request)   // or the adapter's request property
/// let name = user.claims["name"]?.stringValue ?? user.subject
/// let (head, body) = try await user.tokens.perform(HTTPRequest(method: .get, url: ordersAPI))
/// ```
public struct WebUser: Sendable {
    /// The session's record (issuer, subject, claims, scopes, lifetimes).
    public let record: WebSessionRecord
    /// The user's tokens: `TokenSession.freshAccessToken()` and
    /// `TokenSession.perform(_:body:)` refresh them when needed — once for all
    /// concurrent callers, and once for all replicas when the token store is shared.
    public let tokens: TokenSession

    /// The user's `sub` at ``issuer``.
    public var subject: String { record.subject }
    /// The provider that signed the user in.
    public var issuer: String { record.issuer }
    /// The claims of the ID token of the sign-in.
    public var claims: [String: JSONValue] { record.claims }
    /// The scopes granted.
    public var scopes: [String] { record.scopes }
    /// The token the app's own forms must carry as `csrf` (the sign-out form does).
    public var csrfToken: String { record.csrfToken }
}
