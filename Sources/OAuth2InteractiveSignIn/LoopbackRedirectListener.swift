import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OAuth2
import OAuth2Internals

/// A one-shot HTTP listener on a loopback address that receives an authorization response
/// (RFC 8252 §7.3, loopback interface redirection).
///
/// It binds `127.0.0.1` (or `[::1]`, or both for `localhost`) on an ephemeral or given
/// port, takes only a `GET` of its callback path with its own `Host` — anything else (a
/// `/favicon.ico`, a `HEAD`, a page rebinding its DNS name to 127.0.0.1) gets a 404, 405 or
/// 400 and the wait goes on — shows the
/// browser a small self-contained page (no third-party resource, `Referrer-Policy:
/// no-referrer`, a `Content-Security-Policy` that loads nothing, never the code), hands the
/// callback URL to the caller, and closes. A timeout and cancellation end the wait, and
/// the port is released whichever way the wait ends.
///
/// For the legacy implicit grant, whose response is in the URL's fragment and so never
/// reaches a server, a listener started with `relaysFragment` answers a `GET` of the callback
/// path without a query with a page whose one inline script (allowed by its hash in the
/// page's CSP) POSTs the fragment back to the same path; the listener judges that POST as it
/// would a callback URL carrying the fragment. A listener without `relaysFragment` serves no
/// script and accepts no POST.
///
/// ```swift
/// let listener = try await LoopbackRedirectListener.start()
/// let request = try await client.startAuthorization(AuthorizationOptions(redirectURI: listener.redirectURI))
/// // open request.url in a browser…
/// let callback = try await listener.waitForCallback(timeout: .seconds(300))
/// let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
/// ```
///
/// ``LoopbackSignIn`` does all of this, browser included.
public final class LoopbackRedirectListener: Sendable {
    /// Which loopback address to listen on.
    public enum Host: String, Sendable, Hashable, CaseIterable {
        /// `127.0.0.1`; the redirect URI names `127.0.0.1` (RFC 8252 §8.3's advice).
        case ipv4
        /// `::1`; the redirect URI names `[::1]`.
        case ipv6
        /// `127.0.0.1` and, where the system has it, `::1` on the same port; the redirect URI
        /// names `localhost`, for providers that accept only that spelling.
        case localhost
    }

    /// What a callback request leads to; see ``waitForCallback(timeout:verdict:)``.
    public enum Verdict: Sendable, Hashable {
        /// The response belongs to this sign-in and carries a code: the browser gets the
        /// success page and the wait ends with this URL.
        case accept
        /// The response belongs to this sign-in and reports a failure (`error=access_denied`
        /// with the right `state`): the browser gets the failure page naming `errorCode`
        /// (when it is a plain code) and the wait ends with this URL, for the caller to turn
        /// into its typed error.
        case acceptFailure(errorCode: String?)
        /// The request is not this sign-in's response (no or wrong `state`, no parameters):
        /// the browser gets a 400 failure page and the wait goes on.
        case reject
    }

    /// The redirect URI to register and send: `http://127.0.0.1:<port><callbackPath>`
    /// (`[::1]` or `localhost` for the other hosts).
    public let redirectURI: URL
    /// The port listened on.
    public let port: Int
    /// The path callbacks must arrive at.
    public let callbackPath: String
    /// The host listened on.
    public let host: Host
    /// `true` when the listener relays fragments (the implicit grant).
    public let relaysFragment: Bool

    private let channels: [any Channel]
    private let state: ListenerState
    private let pages: LoopbackPages

    private init(
        host: Host, port: Int, callbackPath: String, channels: [any Channel], state: ListenerState, pages: LoopbackPages, relaysFragment: Bool
    ) {
        self.host = host
        self.relaysFragment = relaysFragment
        self.port = port
        self.callbackPath = callbackPath
        self.channels = channels
        self.state = state
        self.pages = pages
        let authority: String
        switch host {
        case .ipv4: authority = "127.0.0.1:\(port)"
        case .ipv6: authority = "[::1]:\(port)"
        case .localhost: authority = "localhost:\(port)"
        }
        redirectURI = URL(string: "http://\(authority)\(callbackPath)")!
    }

    /// `true` once every socket of the listener is closed — the listening ones and every
    /// connection it accepted — so that its port is free for anyone to bind. Tests read it to
    /// prove the release without probing a port that another socket may have taken since.
    package var isReleased: Bool {
        (channels + state.connections).allSatisfy { !$0.isActive }
    }

    /// A listener dropped without ``close()`` still releases its port.
    deinit {
        let (_, connections) = state.close()
        for channel in channels + connections { channel.close(promise: nil) }
    }

    /// Starts listening.
    ///
    /// - Parameters:
    ///   - host: the loopback address (``Host/ipv4`` by default).
    ///   - port: the port; 0 (the default) lets the system choose a free one, which RFC
    ///     8252 §7.3 requires servers to accept for loopback redirect URIs. Give the port when
    ///     the provider compares redirect URIs exactly.
    ///   - callbackPath: the redirect URI's path, starting with `/` (`/callback` by default).
    ///   - pages: the pages the browser is shown.
    ///   - relaysFragment: serve the fragment relay page and accept its POST (the implicit
    ///     grant only; off by default).
    /// - Throws: `OAuth2Error.Code.invalidConfiguration` for a path that does not start with
    ///   `/` or has a query or fragment, or a port outside 0…65535;
    ///   `OAuth2Error.Code.network` when the address cannot be bound (the port is in use).
    public static func start(
        host: Host = .ipv4,
        port: Int = 0,
        callbackPath: String = "/callback",
        pages: LoopbackPages = LoopbackPages(),
        relaysFragment: Bool = false
    ) async throws -> LoopbackRedirectListener {
        guard callbackPath.hasPrefix("/"), !callbackPath.contains("?"), !callbackPath.contains("#"),
            !callbackPath.contains(where: { $0.isWhitespace }), URL(string: "http://127.0.0.1\(callbackPath)") != nil
        else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The callback path must start with / and have no query or fragment.")
        }
        guard (0...65535).contains(port) else {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The port \(port) is not a TCP port.")
        }
        let state = ListenerState()
        var attempts = 0
        while true {
            attempts += 1
            do {
                let (channels, bound) = try await bind(
                    host: host, port: port, callbackPath: callbackPath, state: state, pages: pages, relaysFragment: relaysFragment)
                let listener = LoopbackRedirectListener(
                    host: host, port: bound, callbackPath: callbackPath, channels: channels, state: state, pages: pages,
                    relaysFragment: relaysFragment)
                state.configure(base: listener.redirectURI, authorities: Self.authorities(host: host, port: bound))
                return listener
            } catch let retry as RetryWithAnotherPort {
                // `localhost` with an ephemeral port: ::1 had that port taken; try another.
                guard attempts < 5 else { throw retry.underlying }
            }
        }
    }

    /// Runs `body` with a started listener and closes it afterwards, however `body` ends.
    ///
    /// - Throws: what ``start(host:port:callbackPath:pages:relaysFragment:)`` throws, and what `body` throws.
    public static func withListener<T: Sendable>(
        host: Host = .ipv4,
        port: Int = 0,
        callbackPath: String = "/callback",
        pages: LoopbackPages = LoopbackPages(),
        relaysFragment: Bool = false,
        _ body: (LoopbackRedirectListener) async throws -> T
    ) async throws -> T {
        let listener = try await start(host: host, port: port, callbackPath: callbackPath, pages: pages, relaysFragment: relaysFragment)
        do {
            let value = try await body(listener)
            await listener.close()
            return value
        } catch {
            await listener.close()
            throw error
        }
    }

    /// Waits for the authorization response and returns the URL the browser was sent to,
    /// then closes the listener (the port is free when this returns, however it returns).
    ///
    /// Each request for the callback path is judged by `verdict`: ``Verdict/accept`` and
    /// ``Verdict/acceptFailure(errorCode:)`` end the wait with that request's URL,
    /// ``Verdict/reject`` answers and waits on. Requests that arrive before this call are
    /// kept and judged first. The browser's page is written before this returns.
    ///
    /// - Parameters:
    ///   - timeout: the longest wait; `nil` waits until cancelled.
    ///   - verdict: judges a callback URL (for a relayed fragment: the redirect URI with that
    ///     fragment); the default accepts a URL with a `code`, an `access_token` or an
    ///     `error` and rejects one without any. ``LoopbackSignIn`` checks the `state`.
    /// - Throws: `OAuth2Error.Code.timeout` when `timeout` passes first;
    ///   `OAuth2Error.Code.cancelled` when the task is cancelled or the listener was closed;
    ///   `OAuth2Error.Code.invalidRequest` when another wait is already in progress.
    public func waitForCallback(
        timeout: Duration? = nil,
        verdict: @escaping @Sendable (URL) -> Verdict = LoopbackRedirectListener.defaultVerdict
    ) async throws -> URL {
        guard state.beginWaiting() else {
            throw OAuth2Error(.invalidRequest, source: .client, message: "The listener is already waiting for a callback, or has finished.")
        }
        do {
            let accept: @Sendable () async throws -> URL = { try await self.acceptLoop(verdict: verdict) }
            let url: URL
            if let timeout {
                let message = "No sign-in response arrived at \(redirectURI.absoluteString) within \(Self.describe(timeout))."
                url = try await withDeadline(timeout, onTimeout: { throw OAuth2Error(.timeout, source: .client, message: message) }, operation: accept)
            } else {
                url = try await accept()
            }
            await close()
            return url
        } catch let error as OAuth2Error {
            await close()
            throw error
        } catch {
            await close()
            throw OAuth2Error(.cancelled, source: .client, message: "Waiting for the sign-in response was cancelled.")
        }
    }

    /// Stops listening, answers requests nobody will judge, closes every connection and
    /// releases the port. Calling it again does nothing.
    public func close() async {
        let (pending, connections) = state.close()
        for callback in pending {
            try? await callback.respond(status: .serviceUnavailable, page: pages.failurePage(errorCode: nil)).get()
        }
        for channel in channels {
            try? await channel.close()
        }
        for connection in connections {
            try? await connection.close()
        }
    }

    /// Accepts a URL with a `code`, an `access_token` (in a relayed fragment) or an `error`
    /// parameter; rejects one with none.
    public static let defaultVerdict: @Sendable (URL) -> Verdict = { url in
        let items = parameters(of: url)
        if let error = items.first(where: { $0.0 == "error" }) { return .acceptFailure(errorCode: error.1) }
        return items.contains(where: { $0.0 == "code" || $0.0 == "access_token" }) ? .accept : .reject
    }

    /// A callback's parameters: its query's, or when it has none its fragment's (a relayed
    /// implicit response).
    static func parameters(of url: URL) -> [(String, String)] {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return [] }
        var items = components
        if components.percentEncodedQuery?.isEmpty ?? true {
            items.percentEncodedQuery = components.percentEncodedFragment
        }
        return (items.queryItems ?? []).map { ($0.name, $0.value ?? "") }
    }

    /// Judges callbacks until one ends the wait (cancellation and closing end it by throwing).
    private func acceptLoop(verdict: @Sendable (URL) -> Verdict) async throws -> URL {
        while let callback = await state.next() {
            switch verdict(callback.url) {
            case .accept:
                try? await callback.respond(status: .ok, page: pages.successPage(), relayAnswer: pages.relayAnswer(.accept)).get()
                return callback.url
            case .acceptFailure(let code):
                try? await callback.respond(status: .ok, page: pages.failurePage(errorCode: code), relayAnswer: pages.relayAnswer(.acceptFailure(errorCode: code))).get()
                return callback.url
            case .reject:
                try? await callback.respond(status: .badRequest, page: pages.rejectedPage(), relayAnswer: pages.relayAnswer(.reject)).get()
            }
        }
        try Task.checkCancellation()
        throw OAuth2Error(.cancelled, source: .client, message: "The listener was closed before a sign-in response arrived.")
    }

    private static func describe(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        return seconds == 1 ? "1 second" : "\(seconds) seconds"
    }

    /// The `Host` header values a browser sends for this listener.
    private static func authorities(host: Host, port: Int) -> Set<String> {
        switch host {
        case .ipv4: return ["127.0.0.1:\(port)"]
        case .ipv6: return ["[::1]:\(port)"]
        case .localhost: return ["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)"]
        }
    }

    private struct RetryWithAnotherPort: Error {
        var underlying: OAuth2Error
    }

    private static func bind(
        host: Host, port: Int, callbackPath: String, state: ListenerState, pages: LoopbackPages, relaysFragment: Bool
    ) async throws -> ([any Channel], Int) {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .childChannelInitializer { channel in
                guard state.track(channel) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        CallbackHandler(callbackPath: callbackPath, state: state, pages: pages, relaysFragment: relaysFragment))
                }
            }
        func bindOne(_ address: String, _ port: Int) async throws(OAuth2Error) -> any Channel {
            do {
                return try await bootstrap.bind(host: address, port: port).get()
            } catch {
                let inUse = (error as? IOError)?.errnoCode == EADDRINUSE
                throw OAuth2Error(
                    .network, source: .transport,
                    message: inUse
                        ? "Cannot listen on \(address) port \(port): the port is in use."
                        : "Cannot listen on \(address) port \(port).",
                    underlyingError: error)
            }
        }
        switch host {
        case .ipv4:
            let channel = try await bindOne("127.0.0.1", port)
            return ([channel], channel.localAddress?.port ?? port)
        case .ipv6:
            let channel = try await bindOne("::1", port)
            return ([channel], channel.localAddress?.port ?? port)
        case .localhost:
            let v4 = try await bindOne("127.0.0.1", port)
            let bound = v4.localAddress?.port ?? port
            do {
                let v6 = try await bindOne("::1", bound)
                return ([v4, v6], bound)
            } catch {
                let errno = (error.underlyingError as? IOError)?.errnoCode
                if errno == EADDRINUSE {
                    try? await v4.close()
                    if port == 0 { throw RetryWithAnotherPort(underlying: error) }
                    throw error
                }
                // No IPv6 loopback on this system: IPv4 alone serves `localhost`.
                return ([v4], bound)
            }
        }
    }
}
