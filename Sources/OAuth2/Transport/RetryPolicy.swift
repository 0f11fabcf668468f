import Foundation

/// How the client repeats an exchange that is safe to repeat — discovery, the JWK set,
/// UserInfo, introspection — after a transient failure: a refused or reset connection, a
/// transport timeout, or HTTP 429, 502, 503 or 504.
///
/// Attempts are spaced by exponential back-off with full jitter (a random delay between
/// zero and `initialBackoff × 2^(attempt−1)`, at most ``maximumBackoff``); a `Retry-After`
/// the server sends replaces the back-off. Every attempt and every wait stays inside the
/// request deadline (``HTTPEnvironment/requestDeadline``): a `Retry-After` longer than
/// the time left ends the retries, and the caller gets the server's answer with its
/// ``OAuth2Error/retryAfter``; a deadline that passes during a retry ends it, and the caller
/// gets the outcome of the latest attempt that completed (a reset, a 503), not a bare timeout.
///
/// A token request is never repeated: a refresh whose answer was lost may already have
/// rotated the refresh token. A ``TokenSession`` reports the transient error, keeps its tokens,
/// and re-reads its store before the next renewal. Requests to resource servers are not
/// repeated either: the library cannot know that your API's calls are idempotent.
public struct RetryPolicy: Sendable, Hashable {
    /// The most attempts one exchange makes, the first included. `1` turns retries off.
    public var maximumAttempts: Int
    /// The back-off before the second attempt (before jitter). Default 200 ms.
    public var initialBackoff: Duration
    /// The longest back-off (before jitter), and the longest `Retry-After` waited for.
    /// Default 10 s.
    public var maximumBackoff: Duration
    /// The kinds of request repeated. Default: discovery, JWK set, UserInfo, introspection.
    /// ``RequestKind/token`` and ``RequestKind/resource`` are never repeated, whatever this says.
    public var kinds: Set<RequestKind>

    /// Creates a policy.
    public init(
        maximumAttempts: Int = 3,
        initialBackoff: Duration = .milliseconds(200),
        maximumBackoff: Duration = .seconds(10),
        kinds: Set<RequestKind> = [.discovery, .jwks, .userInfo, .introspection]
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.kinds = kinds
    }

    /// No retries.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// Kinds that are never repeated: see the type's documentation.
    static let neverRepeated: Set<RequestKind> = [.token, .resource, .authorization, .pushedAuthorization, .registration, .deviceAuthorization, .backchannelAuthentication]

    /// Whether a request of `kind` may be repeated.
    func repeats(_ kind: RequestKind) -> Bool {
        maximumAttempts > 1 && kinds.contains(kind) && !Self.neverRepeated.contains(kind)
    }

    /// The back-off before attempt `attempt + 1` (full jitter), `unit` a random number in 0..<1.
    func backoff(after attempt: Int, unit: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(initialBackoff * (1 << exponent), maximumBackoff)
        return ceiling * min(max(unit, 0), 1)
    }

    /// HTTP statuses that say "try again": too many requests, bad gateway, unavailable,
    /// gateway timeout. A 500 is not among them: it usually means the request itself broke
    /// the server, and it would again.
    static let retryableStatuses: Set<Int> = [429, 502, 503, 504]

    /// Transport failures worth another attempt: the connection failed or was reset, or a
    /// transport's own timeout ended an attempt. TLS failures and cancellation are not.
    static func isRetryable(_ error: OAuth2Error) -> Bool {
        error.source == .transport && (error.code == .network || error.code == .timeout)
    }
}
