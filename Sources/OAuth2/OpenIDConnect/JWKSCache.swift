import Foundation
import HTTPTypes
import OAuth2Internals

/// A provider's JWK set, fetched from its `jwks_uri` and cached.
///
/// - The lifetime follows the response's `Cache-Control: max-age` (no-cache and no-store
///   mean the floor), clamped between ``Policy/minimumLifetime`` and
///   ``Policy/maximumLifetime``; without the header, ``Policy/defaultLifetime``.
/// - Concurrent lookups share one fetch.
/// - ``refreshed(now:)`` forces a refetch when a token names a key the cached set lacks
///   (key rotation), at most once per ``Policy/minimumRefetchInterval``, so that forged
///   tokens with random `kid`s cannot make the client hammer the provider.
/// - A resource server keeps using an expired set while refetches fail, for at most
///   ``Policy/maximumStaleness`` after its last successful fetch: a key the provider
///   removed must not keep verifying for as long as someone blocks the way to `jwks_uri`.
public actor JWKSCache {
    /// Cache lifetimes.
    public struct Policy: Sendable, Hashable {
        /// The shortest time a set is kept, whatever the server says.
        public var minimumLifetime: TimeInterval
        /// The longest time a set is kept, whatever the server says.
        public var maximumLifetime: TimeInterval
        /// The time a set is kept when the server says nothing.
        public var defaultLifetime: TimeInterval
        /// The shortest time between two forced refetches.
        public var minimumRefetchInterval: TimeInterval
        /// How long after its last successful fetch an expired set may still be used while
        /// refetches fail (a resource server's outage tolerance); past it, the set is not
        /// used, and what needs it fails as unavailable until a fetch succeeds. It bounds how
        /// long a key the provider removed can keep verifying when the way to `jwks_uri` is
        /// blocked. A set within its lifetime is used whatever this says.
        public var maximumStaleness: TimeInterval

        /// Creates a policy: 1 minute to 1 day, 1 hour by default, a forced refetch at
        /// most every 10 seconds, an expired set used through an outage until a day after
        /// its last successful fetch.
        public init(
            minimumLifetime: TimeInterval = 60, maximumLifetime: TimeInterval = 86_400, defaultLifetime: TimeInterval = 3_600,
            minimumRefetchInterval: TimeInterval = 10, maximumStaleness: TimeInterval = 86_400
        ) {
            self.minimumLifetime = minimumLifetime
            self.maximumLifetime = maximumLifetime
            self.defaultLifetime = defaultLifetime
            self.minimumRefetchInterval = minimumRefetchInterval
            self.maximumStaleness = maximumStaleness
        }
    }

    /// Where the set comes from.
    public nonisolated let url: URL
    /// The lifetimes.
    public nonisolated let policy: Policy
    private let fetcher: @Sendable () async throws -> (JSONWebKeySet, cacheControl: String?)
    private var cached: (keys: JSONWebKeySet, expiresAt: Date, fetchedAt: Date)? {
        didSet { snapshot.withLock { $0 = cached.map { ($0.keys, $0.expiresAt, $0.fetchedAt) } } }
    }
    /// `cached` for ``cachedKeys(now:)``, readable from any thread: a validation with a
    /// fresh set does not hop onto the actor (two thread hand-offs per token otherwise).
    private nonisolated let snapshot = Locked<(keys: JSONWebKeySet, expiresAt: Date, fetchedAt: Date)?>(nil)
    private var inFlight: Task<(JSONWebKeySet, cacheControl: String?), any Error>?
    private var lastForcedRefetch: Date?
    private(set) var fetchCount = 0

    package init(url: URL, policy: Policy, fetcher: @escaping @Sendable () async throws -> (JSONWebKeySet, cacheControl: String?)) {
        self.url = url
        self.policy = policy
        self.fetcher = fetcher
    }

    /// A cache of the set at `url`, fetched through `environment` (its transport,
    /// interceptors and logger) under the default request deadline: for a resource server,
    /// which has no ``OAuth2Client`` of the issuer.
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` unless `url` is HTTPS (or loopback).
    package init(url: URL, policy: Policy, environment: HTTPEnvironment) throws(OAuth2Error) {
        try EndpointPolicy.validate(url, name: "JWK set URL")
        let pipeline = environment.pipeline()
        self.init(url: url, policy: policy) { try await OAuth2Client.fetchKeySet(url, pipeline: pipeline) }
    }

    /// The cached set, or a fresh one when there is none or it has expired.
    ///
    /// - Throws: ``OAuth2Error`` when the set cannot be fetched or parsed.
    public func keys(now: Date = Date()) async throws -> JSONWebKeySet {
        if let cached, cached.expiresAt > now { return cached.keys }
        return try await fetch(now: now)
    }

    /// The cached set if it has not expired at `now`; `nil` otherwise (then ``keys(now:)``
    /// fetches one). Synchronous: it never waits for a fetch.
    public nonisolated func cachedKeys(now: Date = Date()) -> JSONWebKeySet? {
        snapshot.withLock { snapshot in
            guard let snapshot, snapshot.expiresAt > now else { return nil }
            return snapshot.keys
        }
    }

    /// The last set fetched, even when it has expired, unless it was fetched more than
    /// ``Policy/maximumStaleness`` before `now`; `nil` before the first fetch. Synchronous. A
    /// resource server keeps verifying with it while the provider's JWKS endpoint is down,
    /// and refreshes it in the background.
    package nonisolated func lastKnownKeys(now: Date) -> JSONWebKeySet? {
        snapshot.withLock { snapshot in
            guard let snapshot, now.timeIntervalSince(snapshot.fetchedAt) <= policy.maximumStaleness else { return nil }
            return snapshot.keys
        }
    }

    /// A refetched set, when a token names a key the cached one lacks; `nil` when a forced
    /// refetch happened less than ``Policy/minimumRefetchInterval`` ago.
    ///
    /// - Throws: ``OAuth2Error`` when the set cannot be fetched or parsed.
    public func refreshed(now: Date = Date()) async throws -> JSONWebKeySet? {
        if let inFlight { return try await inFlight.value.0 }
        if let last = lastForcedRefetch, now.timeIntervalSince(last) < policy.minimumRefetchInterval { return nil }
        lastForcedRefetch = now
        return try await fetch(now: now)
    }

    private func fetch(now: Date) async throws -> JSONWebKeySet {
        if let inFlight { return try await inFlight.value.0 }
        let task = Task { [fetcher] in try await fetcher() }
        inFlight = task
        defer { inFlight = nil }
        let (keys, cacheControl) = try await task.value
        fetchCount += 1
        cached = (keys, now.addingTimeInterval(lifetime(cacheControl)), now)
        return keys
    }

    func lifetime(_ cacheControl: String?) -> TimeInterval {
        guard let cacheControl else { return policy.defaultLifetime }
        var lifetime = policy.defaultLifetime
        for directive in cacheControl.lowercased().split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            switch parts.first {
            case "no-store", "no-cache": lifetime = 0
            case "max-age" where parts.count == 2:
                if let seconds = TimeInterval(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) { lifetime = seconds }
            default: break
            }
        }
        return min(max(lifetime, policy.minimumLifetime), policy.maximumLifetime)
    }
}
