import Foundation

/// When a session's access token has to be renewed, read from a ``TokenSet``.
///
/// `expires_in` is relative, so ``TokenSet/expiresAt`` is already in this machine's clock
/// and needs no correction. An access token without `expires_in` may still say when it
/// expires: a JWT access token (RFC 9068) carries `exp`, written in the server's clock.
/// That one is moved into this machine's clock by the skew measured from the token
/// response's `Date` header (``TokenSet/serverDate``).
///
/// Two plain dates, no optional: every session keeps one.
struct TokenExpiry: Sendable, Equatable {
    /// When the access token stops working, in this machine's clock; `nil` when unknown.
    var expiresAt: Date? { stopsAt == .distantFuture ? nil : stopsAt }
    /// When to renew it: `expiresAt` less the leeway; `distantFuture` when the expiry is
    /// unknown (then only a refused token renews it).
    var renewAt: Date
    /// ``expiresAt``, `distantFuture` when unknown (the same answer to "has it expired?").
    private var stopsAt: Date

    /// Makes the tokens due for renewal now (they still work until ``expiresAt``): the next
    /// caller renews, and the renewal reads the stored record before asking the server.
    mutating func renewNow() { renewAt = .distantPast }

    /// `true` while the access token needs no renewal at `now` (before ``renewAt``): the
    /// one rule by which a session answers from the tokens in hand, and by which the
    /// `oauth2` tool answers from its store (``TokenSession/isFresh(_:options:at:)``).
    func isFresh(at now: Date) -> Bool { now < renewAt }

    init(_ tokens: TokenSet, leeway: TimeInterval) {
        let expiry = tokens.expiresAt ?? Self.jwtExpiry(tokens.accessToken).map { $0.addingTimeInterval(-Self.skew(tokens)) }
        guard let expiry else {
            stopsAt = .distantFuture
            renewAt = .distantFuture
            return
        }
        stopsAt = expiry
        // A token that lives less than twice the leeway is renewed at half its life, not at
        // once and on every call.
        let lifetime = expiry.timeIntervalSince(tokens.issuedAt)
        let effective = lifetime > 0 ? min(max(0, leeway), lifetime / 2) : max(0, leeway)
        renewAt = expiry.addingTimeInterval(-effective)
    }

    /// The server's clock minus this machine's, measured when the tokens arrived (0 when
    /// the server sent no `Date`). The `Date` header has a resolution of one second.
    static func skew(_ tokens: TokenSet) -> TimeInterval {
        guard let serverDate = tokens.serverDate else { return 0 }
        return serverDate.timeIntervalSince(tokens.issuedAt)
    }

    /// The `exp` claim of a JWT access token, read without verifying it: it only decides
    /// when to renew the token, never whether to trust it. `nil` for an opaque token.
    static func jwtExpiry(_ token: String) -> Date? {
        guard let jws = try? JWS(compact: token), let claims = try? jws.claims(),
            let exp = ResponseParsing.number(claims["exp"]), exp > 0, exp < 1e11
        else { return nil }
        return Date(timeIntervalSince1970: exp)
    }
}
