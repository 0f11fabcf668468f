import Foundation
import HTTPTypes
import OAuth2Internals
import OAuth2JOSE

/// Where a client in CIBA ping mode receives the server's pings (OpenID Connect CIBA Core
/// §10.2), and where ``OAuth2Client/waitForBackchannelPing(_:inbox:clock:fallbackPollInterval:progress:)``
/// waits for them.
///
/// A ping is the server's `POST` to the client's registered
/// `backchannel_client_notification_endpoint`, with `Authorization: Bearer
/// <client_notification_token>` and the JSON body `{"auth_req_id": "…"}`: the user has
/// decided, and one token request now gets the answer. Hand every request to that endpoint
/// to ``receive(_:body:)`` (or mount `BackchannelPingEndpoint` of `OAuth2Web`, which answers
/// for you); share one inbox between the endpoint and the code that waits.
///
/// ```swift
/// let inbox = BackchannelPingInbox()
/// let authentication = try await client.startBackchannelAuthentication(request, pingInbox: inbox)
/// let tokens = try await client.waitForBackchannelPing(authentication, inbox: inbox)
/// ```
///
/// Only requests this client started with the inbox are known to it, at most ``capacity``
/// at a time: a request to the endpoint cannot make it store anything. The bearer token is
/// compared in constant time with each pending request's `client_notification_token`
/// before the body is read; a ping is accepted only when it also names that request's
/// `auth_req_id`. The tokens and the `auth_req_id`s never appear in an error or a log line.
/// Pings reach only the process that started the request: a fleet of replicas behind one
/// endpoint needs the pings routed to it (or polling).
public final class BackchannelPingInbox: Sendable {
    /// The most pending requests an inbox holds by default.
    public static let defaultCapacity = 1024
    /// The seconds between the polls of a ping-mode wait while no ping comes, by default:
    /// a lost ping (or none after a cancel) costs at most this long.
    public static let defaultFallbackPollInterval: TimeInterval = 60
    /// The largest body read, in bytes (a ping is `{"auth_req_id": "…"}`).
    public static let maximumBodySize = 8 * 1024

    /// The most pending requests this inbox holds; starting one more throws.
    public let capacity: Int
    private let state = Locked(State())
    private let now: @Sendable () -> Date

    private struct Entry {
        /// The request's `auth_req_id`, once the server has answered.
        var authenticationRequestID: String?
        /// Until when the entry is kept (the request's expiry).
        var expiresAt: Date
        /// A ping arrived and no one has taken it yet.
        var pinged = false
        /// The `auth_req_id` of a ping that came before the server's answer was read.
        var earlyPing: String?
        /// The task waiting for a ping.
        var waiter: CheckedContinuation<Void, Never>?
    }

    private struct State {
        /// The pending requests by `client_notification_token`.
        var entries: [String: Entry] = [:]
    }

    /// Creates an inbox.
    ///
    /// - Parameters:
    ///   - capacity: the most requests pending at a time (at least 1).
    ///   - now: the clock of the requests' expiry (tests inject theirs).
    public init(capacity: Int = BackchannelPingInbox.defaultCapacity, now: @escaping @Sendable () -> Date = { Date() }) {
        self.capacity = max(1, capacity)
        self.now = now
    }

    /// How many requests wait for a ping.
    public var pendingCount: Int { state.withLock { $0.entries.count } }

    // MARK: Receiving

    /// Receives a request to the client notification endpoint: a valid ping is recorded for
    /// the waiting request (or for the next wait); anything else throws, and the caller
    /// answers with the error's ``BackchannelPingError/status`` (CIBA Core §10.2 asks for
    /// `204 No Content` on success).
    ///
    /// - Parameters:
    ///   - request: the request's head (method and `Authorization`, `Content-Type` fields).
    ///   - body: the body's bytes; at most ``maximumBodySize`` are read, and only once the
    ///     bearer token names a pending request.
    /// - Throws: ``BackchannelPingError``: a method other than POST; no bearer token, or one
    ///   that names no pending request (401, telling nothing more); a body that is too large,
    ///   not `application/json`, not one strict JSON object with a string `auth_req_id`, or
    ///   whose `auth_req_id` is not the pending request's.
    public func receive(_ request: HTTPRequest, body: some Sequence<UInt8>) throws(BackchannelPingError) {
        try receive(
            method: request.method, authorization: request.headerFields[.authorization],
            contentType: request.headerFields[.contentType], body: body)
    }

    /// Receives a request to the client notification endpoint, given as its parts; see
    /// ``receive(_:body:)``.
    public func receive(
        method: HTTPRequest.Method, authorization: String?, contentType: String?, body: some Sequence<UInt8>
    ) throws(BackchannelPingError) {
        guard method == .post else { throw BackchannelPingError(.methodNotAllowed, "Pings are POST requests.") }
        let token = try Self.bearerToken(authorization)
        guard let key = pendingKey(matching: token) else {
            throw BackchannelPingError(.unknownToken, "The bearer token names no pending request.")
        }
        let id = try Self.authenticationRequestID(contentType: contentType, body: body)
        let outcome = state.withLock { state -> Result<CheckedContinuation<Void, Never>?, BackchannelPingError> in
            guard var entry = state.entries[key] else {
                return .failure(BackchannelPingError(.unknownToken, "The bearer token names no pending request."))
            }
            if let expected = entry.authenticationRequestID {
                guard constantTimeEquals(expected, id) else {
                    return .failure(BackchannelPingError(.unknownRequest, "The auth_req_id is not the one of the request the token names."))
                }
                entry.pinged = true
            } else {
                // The server pinged before its answer to the request was read: checked then.
                entry.earlyPing = id
            }
            // A waiting task takes the ping at once.
            let waiter = entry.pinged ? entry.waiter : nil
            if waiter != nil {
                entry.pinged = false
                entry.waiter = nil
            }
            state.entries[key] = entry
            return .success(waiter)
        }
        let waiter = try outcome.get()
        waiter?.resume()
    }

    /// The pending request whose `client_notification_token` is `token`: every pending
    /// token is compared in constant time, and all of them are, whatever matches.
    private func pendingKey(matching token: String) -> String? {
        let now = now()
        return state.withLock { state in
            var found: String?
            for (key, entry) in state.entries where entry.expiresAt > now {
                if constantTimeEquals(key, token) { found = key }
            }
            return found
        }
    }

    /// The bearer token of an `Authorization` field (RFC 6750 §2.1).
    static func bearerToken(_ authorization: String?) throws(BackchannelPingError) -> String {
        guard let authorization, authorization.count <= 2048 else {
            throw BackchannelPingError(.missingToken, "The ping has no bearer token.")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw BackchannelPingError(.missingToken, "The ping has no bearer token.")
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard isToken(token) else { throw BackchannelPingError(.unknownToken, "The bearer token names no pending request.") }
        return token
    }

    /// Whether `value` is an RFC 6750 `b64token` of 22 to 1024 characters (about 128 bits
    /// at least, as CIBA Core §7.1 asks of a `client_notification_token`).
    static func isToken(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard (22...1024).contains(bytes.count) else { return false }
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        guard !body.isEmpty, bytes.dropFirst(body.count).allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"): true
            default: false
            }
        }
    }

    /// The `auth_req_id` of a ping's body (CIBA Core §10.2): one strict JSON object (no
    /// duplicate members, valid UTF-8, nothing after it) with a non-empty string
    /// `auth_req_id`; other members are ignored.
    static func authenticationRequestID(contentType: String?, body: some Sequence<UInt8>) throws(BackchannelPingError) -> String {
        let mediaType = contentType?.split(separator: ";", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/json" else {
            throw BackchannelPingError(.unsupportedMediaType, "The body must be application/json.")
        }
        var bytes: [UInt8] = []
        for byte in body {
            guard bytes.count < maximumBodySize else { throw BackchannelPingError(.bodyTooLarge, "The body is too large.") }
            bytes.append(byte)
        }
        let members: [String: JSONValue]
        do {
            members = try StrictJSON.parseObject(bytes)
        } catch {
            throw BackchannelPingError(.malformedRequest, "The body is not one JSON object.")
        }
        guard let id = members["auth_req_id"]?.stringValue, !id.isEmpty, id.utf8.count <= 4096 else {
            throw BackchannelPingError(.malformedRequest, "The body has no auth_req_id string.")
        }
        return id
    }

    // MARK: The client's side

    /// Adds a request about to be sent with `token` as its `client_notification_token`,
    /// kept until `expiresAt`; expired requests are dropped first.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for a token that is not a
    ///   `b64token` of 22 to 1024 characters or is already pending;
    ///   ``OAuth2Error/Code/temporarilyUnavailable`` when ``capacity`` requests are pending.
    func register(token: String, until expiresAt: Date) throws(OAuth2Error) {
        guard Self.isToken(token) else {
            throw .client(
                .invalidConfiguration,
                "A client_notification_token must be 22 to 1024 characters of RFC 6750's b64token (A-Z a-z 0-9 - . _ ~ + / then =).")
        }
        let now = now()
        let refusal = state.withLock { state -> OAuth2Error? in
            state.entries = state.entries.filter { $0.value.expiresAt > now || $0.value.waiter != nil }
            guard state.entries[token] == nil else {
                return .client(.invalidConfiguration, "A pending backchannel authentication already uses this client_notification_token.")
            }
            guard state.entries.count < capacity else {
                return .client(.temporarilyUnavailable, "The ping inbox already holds \(capacity) pending backchannel authentications.")
            }
            state.entries[token] = Entry(expiresAt: expiresAt)
            return nil
        }
        if let refusal { throw refusal }
    }

    /// Records the server's answer to the request sent with `token`: its `auth_req_id` and
    /// expiry. A ping that came before is kept if it names that `auth_req_id`.
    func started(token: String, authenticationRequestID id: String, expiresAt: Date) {
        state.withLock { state in
            guard var entry = state.entries[token] else { return }
            entry.authenticationRequestID = id
            entry.expiresAt = expiresAt
            if let early = entry.earlyPing, constantTimeEquals(early, id) { entry.pinged = true }
            entry.earlyPing = nil
            state.entries[token] = entry
        }
    }

    /// Whether the request sent with `token` is pending here.
    func isPending(token: String) -> Bool { state.withLock { $0.entries[token]?.authenticationRequestID != nil } }

    /// Whether a ping for the request sent with `token` waits to be taken.
    func isPinged(token: String) -> Bool { state.withLock { $0.entries[token]?.pinged == true } }

    /// Forgets the request sent with `token`, waking a task that waits for it.
    func remove(token: String) {
        let waiter = state.withLock { $0.entries.removeValue(forKey: token)?.waiter }
        waiter?.resume()
    }

    /// Returns when a ping for the request sent with `token` arrives (taking it), at once
    /// when one arrived since the last call or the request is not pending, or when the task
    /// is cancelled.
    func nextPing(token: String) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (resumeNow, previous) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                    guard var entry = state.entries[token], !Task.isCancelled else { return (true, nil) }
                    if entry.pinged {
                        entry.pinged = false
                        state.entries[token] = entry
                        return (true, nil)
                    }
                    let previous = entry.waiter
                    entry.waiter = continuation
                    state.entries[token] = entry
                    return (false, previous)
                }
                previous?.resume()
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                let waiter = state.entries[token]?.waiter
                state.entries[token]?.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }
}
