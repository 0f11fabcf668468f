import Foundation
import Logging
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// Checks a JWS's signature with the keys of an issuer's ``TrustedIssuer/KeySource``: what
/// ``AccessTokenVerifier`` and ``LogoutTokenVerifier`` share.
///
/// With a JWK set cache: a set that has expired keeps verifying while a fresh one is fetched
/// in the background (an outage of the JWKS endpoint does not stop tokens signed with known
/// keys), until `JWKSCache.Policy.maximumStaleness` after its last successful fetch; a token
/// naming a `kid` the set lacks makes one refetch, rate-limited by the cache and bounded by
/// ``keyFetchDeadline``; without any set yet, or with one older than that cap, the request
/// waits for a fetch at most that long, and is refused as unavailable when it fails.
package struct IssuerSignatureCheck: Sendable {
    /// Why a signature was not accepted.
    package enum Failure: Error, Equatable {
        /// No key of the set fits the algorithm (and the `kid`, when there is one).
        case keyNotFound(hasKeyID: Bool)
        /// A fitting key exists, and the signature does not verify with it.
        case signatureInvalid
        /// The issuer's keys cannot be fetched now, and none are cached (or those cached are
        /// older than the cache's staleness cap).
        case unavailable
    }

    /// How long a request waits for the JWK set to be fetched.
    let keyFetchDeadline: Duration
    let logger: Logger
    /// When each issuer's JWK set was last refreshed in the background (shared by copies).
    private let backgroundRefreshes = Locked<[String: Date]>([:])

    init(keyFetchDeadline: Duration, logger: Logger) {
        self.keyFetchDeadline = keyFetchDeadline
        self.logger = logger
    }

    /// Why the signature is not accepted, or `nil` when it verifies with a key of `keys`.
    func failure(_ jws: JWS, keys source: TrustedIssuer.KeySource, issuer: String, now: Date, clock: PipelineClock) async -> Failure? {
        switch source.storage {
        case .fixed(let keys):
            return Self.failure(jws, keys: keys)
        case .cache(let cache):
            let keys: JSONWebKeySet
            if let fresh = cache.cachedKeys(now: now) {
                keys = fresh
            } else if let stale = cache.lastKnownKeys(now: now) {
                // Expired, within the staleness cap: keep verifying with it, and fetch a new
                // one without making this request wait (an outage of the JWKS endpoint must
                // not stop known keys; past the cap, a key the issuer removed must not either).
                keys = stale
                refreshInBackground(cache, issuer: issuer, now: now)
            } else {
                do {
                    keys = try await withDeadline(keyFetchDeadline, clock: clock, onTimeout: { throw DeadlineExceeded() }) { try await cache.keys(now: now) }
                } catch {
                    logger.debug("JWK set unavailable", metadata: ["issuer": "\(issuer)", "error": "\(Self.describe(error))"])
                    return .unavailable
                }
            }
            var failure = Self.failure(jws, keys: keys)
            if case .keyNotFound? = failure {
                // A key the set lacks: the issuer may have rotated its keys. One refetch,
                // rate-limited by the cache, and bounded in time.
                do {
                    if let refreshed = try await withDeadline(keyFetchDeadline, clock: clock, onTimeout: { throw DeadlineExceeded() }, operation: { try await cache.refreshed(now: now) }) {
                        failure = Self.failure(jws, keys: refreshed)
                    }
                } catch {
                    logger.debug("JWK set refetch failed", metadata: ["issuer": "\(issuer)", "error": "\(Self.describe(error))"])
                }
            }
            return failure
        }
    }

    /// Why the signature does not verify with `keys`, or `nil` when it does: the `kid`'s key,
    /// or each key that fits the algorithm when there is no `kid`.
    package static func failure(_ jws: JWS, keys: JSONWebKeySet) -> Failure? {
        var sawCandidate = false
        for key in keys.keys where JSONWebKeySet.isCandidate(key, for: jws.algorithm, keyID: jws.keyID) {
            sawCandidate = true
            if jws.isSigned(by: key) { return nil }
        }
        return sawCandidate ? .signatureInvalid : .keyNotFound(hasKeyID: jws.keyID != nil)
    }

    /// Starts a fetch of an expired set, at most once per the cache's
    /// `JWKSCache.Policy.minimumRefetchInterval` (an endpoint that fails at once must not
    /// be asked again on every request).
    private func refreshInBackground(_ cache: JWKSCache, issuer: String, now: Date) {
        let due = backgroundRefreshes.withLock { last -> Bool in
            if let previous = last[issuer], now.timeIntervalSince(previous) < cache.policy.minimumRefetchInterval, previous <= now { return false }
            last[issuer] = now
            return true
        }
        guard due else { return }
        let logger = logger
        Task {
            do { _ = try await cache.keys(now: now) } catch {
                logger.debug("Background JWK set refresh failed", metadata: ["issuer": "\(issuer)", "error": "\(Self.describe(error))"])
            }
        }
    }

    static func describe(_ error: any Error) -> String {
        error is DeadlineExceeded ? "deadline exceeded" : "\(error)"
    }
}
