import Foundation
import OAuth2
import OAuth2Internals

/// Backchannel sign-in (OpenID Connect CIBA) for a terminal: asks the server to have the
/// user approve on their own device, shows the binding message the user will see there,
/// counts down while the client polls, and returns the tokens.
///
/// The protocol is the core library's (`OAuth2Client.startBackchannelAuthentication(_:)`
/// and `OAuth2Client.pollBackchannelToken(_:clock:progress:)`); this type only presents
/// it, on ``output`` (standard error by default, so standard output stays free for a
/// command's result).
///
/// ```swift
/// let tokens = try await BackchannelSignIn().signIn(
///     client: client, request: BackchannelAuthenticationRequest(hint: .loginHint("alice"), bindingMessage: "W4SCT"))
/// ```
///
/// The `auth_req_id` is never written anywhere.
public struct BackchannelSignIn: Sendable {
    /// Where the instructions and the countdown are written.
    public var output: any TerminalOutput
    /// The longest wait for the user, shorter than the request's own lifetime; `nil` waits
    /// until the request expires.
    public var timeout: Duration?
    /// The wall clock that the minutes in the instructions and the countdown are read from:
    /// the system's by default; tests pass the instant their client stamped its request with.
    public var now: @Sendable () -> Date

    /// Creates a backchannel sign-in presenter.
    ///
    /// - Parameters:
    ///   - output: where to write (standard error).
    ///   - timeout: the longest wait (`nil`: the request's lifetime).
    ///   - now: the wall clock the instructions and the countdown read (the system's).
    public init(
        output: any TerminalOutput = StandardErrorOutput(), timeout: Duration? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.output = output
        self.timeout = timeout
        self.now = now
    }

    /// A binding message for a request: six characters from an alphabet without look-alikes
    /// (no 0/O, 1/I/L), short enough for any authentication device.
    public static func randomBindingMessage() -> String {
        let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<6).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// Runs the whole flow on the system's clock.
    ///
    /// See ``signIn(client:request:clock:)``.
    public func signIn(client: OAuth2Client, request: BackchannelAuthenticationRequest) async throws -> TokenSet {
        try await signIn(client: client, request: request, clock: ContinuousClock())
    }

    /// Runs the whole flow: sends the backchannel authentication request, shows the binding
    /// message, polls with a countdown, and returns the tokens.
    ///
    /// - Parameters:
    ///   - client: the client that sends the request and polls.
    ///   - request: who is asked, and what they are shown.
    ///   - clock: the clock polling waits on (tests pass one that does not wait).
    /// - Throws: what `OAuth2Client.startBackchannelAuthentication(_:)` and
    ///   `OAuth2Client.pollBackchannelToken(_:clock:progress:)` throw —
    ///   `OAuth2Error.Code.accessDenied`, `OAuth2Error.Code.expiredToken`,
    ///   `OAuth2Error.Code.cancelled`…; `OAuth2Error.Code.timeout` when ``timeout`` passes first.
    public func signIn<C: Clock>(client: OAuth2Client, request: BackchannelAuthenticationRequest, clock: C) async throws -> TokenSet
    where C.Duration == Duration {
        let authentication = try await client.startBackchannelAuthentication(request)
        return try await complete(authentication, client: client, clock: clock)
    }

    /// Shows the instructions for a backchannel authentication already started, polls with
    /// a countdown, and returns the tokens.
    ///
    /// - Throws: what `OAuth2Client.pollBackchannelToken(_:clock:progress:)` throws;
    ///   `OAuth2Error.Code.timeout` when ``timeout`` passes first.
    public func complete<C: Clock>(_ authentication: BackchannelAuthentication, client: OAuth2Client, clock: C) async throws -> TokenSet
    where C.Duration == Duration {
        output.write(instructions(for: authentication))
        return try await pollWithCountdown(output: output, expiresAt: authentication.expiresAt, now: now, timeout: timeout, what: "backchannel") { progress in
            try await client.pollBackchannelToken(authentication, clock: clock, progress: progress)
        }
    }

    /// The instructions shown before polling: the binding message to look for on the
    /// authentication device, and when the request expires. Never the `auth_req_id`.
    public func instructions(for authentication: BackchannelAuthentication) -> String {
        var text = "A sign-in request was sent to your authentication device.\n"
        if let message = authentication.bindingMessage {
            text += "Approve it there if it shows this message:\n\n    \(message)\n\n"
        } else {
            text += "Approve it there.\n"
        }
        let minutes = max(1, Int((authentication.expiresAt.timeIntervalSince(now()) / 60).rounded()))
        text += "The request expires in \(minutes) minute\(minutes == 1 ? "" : "s").\n"
        return text
    }
}
