import Foundation
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// The signed-in user of a request, as a handler sees them: who they are (the claims of
/// their ID token), the token for the app's forms, and their tokens, refreshed when needed,
/// for calls to APIs on their behalf.
///
/// ```swift
/// let user = try await webSignIn.user(for: request)   // or the adapter's request property
/// let name = user.claims["name"]?.stringValue ?? user.subject
/// let (head, body) = try await user.tokenSession.perform(HTTPRequest(method: .get, url: ordersAPI))
/// ```
public struct WebUser: Sendable {
    /// The session's record (issuer, subject, claims, scopes, lifetimes).
    public let record: WebSessionRecord
    /// The user's tokens: `TokenSession.freshAccessToken()` and
    /// `TokenSession.perform(_:body:)` refresh them when needed — once for all
    /// concurrent callers, and once for all replicas when the token store is shared.
    ///
    /// Made when first read, then the same object for this user and every copy of it: most
    /// requests never call an API on the user's behalf, and a request should not pay for a
    /// token session it does not use.
    public var tokenSession: TokenSession {
        tokens.withLock { tokens in
            switch tokens {
            case .made(let session):
                return session
            case .due(let client, let store, let account, let options):
                let session = TokenSession(client: client, store: store, account: account, options: options)
                tokens = .made(session)
                return session
            }
        }
    }
    /// The token session, or what it is made of until it is first read.
    private let tokens: Locked<LazyTokenSession>

    private enum LazyTokenSession {
        case due(OAuth2Client, any TokenStore, account: String, options: TokenSession.Options)
        case made(TokenSession)
    }

    /// A user whose token session is made, from `client`, `store` and `options` under the
    /// record's account, when ``tokenSession`` is first read.
    init(record: WebSessionRecord, client: OAuth2Client, store: any TokenStore, options: TokenSession.Options) {
        tokens = Locked(.due(client, store, account: record.account, options: options))
        self.record = record
    }

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
