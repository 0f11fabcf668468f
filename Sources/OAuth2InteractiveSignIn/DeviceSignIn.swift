import Foundation
import OAuth2
import OAuth2Internals

/// Device sign-in (RFC 8628) for a terminal: shows the user code, the verification URI
/// and a QR code of the complete verification URI, counts down while the client polls,
/// and returns the tokens.
///
/// The protocol is the core library's (`OAuth2Client.startDeviceAuthorization(scopes:additionalParameters:)`
/// and `OAuth2Client.pollDeviceToken(_:clock:progress:)`); this type only
/// presents it, on ``output`` (standard error by default, so standard output stays free
/// for a command's result).
///
/// ```swift
/// let tokens = try await DeviceSignIn().signIn(client: client, scopes: ["openid", "offline_access"])
/// ```
///
/// The device code itself is never written anywhere.
public struct DeviceSignIn: Sendable {
    /// When to draw the QR code.
    public enum QRCodeDisplay: Sendable, Hashable {
        /// When the output is a terminal and libqrencode is present.
        case automatic
        /// Whenever libqrencode is present.
        case always
        /// Never.
        case never
    }

    /// Where instructions, the QR code and the countdown are written.
    public var output: any TerminalOutput
    /// When to draw the QR code.
    public var qrCode: QRCodeDisplay
    /// How the QR code is drawn.
    public var qrStyle: TerminalQRCode.Style
    /// The libraries tried for libqrencode.
    public var qrLibraries: [String]
    /// Whether to open the verification URI in a browser too (`--open-browser`):
    /// ``BrowserChoice/none`` by default, since the point of the device flow is usually
    /// that the browser is on another device.
    public var browser: BrowserChoice
    /// The longest wait for the user, shorter than the device code's own lifetime; `nil`
    /// waits until the code expires.
    public var timeout: Duration?
    /// The wall clock that the minutes in the instructions and the countdown are read from:
    /// the system's by default; tests pass the instant their client stamped its request with.
    public var now: @Sendable () -> Date

    /// Creates a device sign-in presenter.
    ///
    /// - Parameters:
    ///   - output: where to write (standard error).
    ///   - qrCode: when to draw the QR code (``QRCodeDisplay/automatic``).
    ///   - qrStyle: how to draw it (``TerminalQRCode/Style/ansi``: black on white on any colour terminal).
    ///   - qrLibraries: where to look for libqrencode.
    ///   - browser: whether to open the verification URI too (``BrowserChoice/none``).
    ///   - timeout: the longest wait (`nil`: the device code's lifetime).
    ///   - now: the wall clock the instructions and the countdown read (the system's).
    public init(
        output: any TerminalOutput = StandardErrorOutput(),
        qrCode: QRCodeDisplay = .automatic,
        qrStyle: TerminalQRCode.Style = .ansi,
        qrLibraries: [String] = TerminalQRCode.defaultLibraries,
        browser: BrowserChoice = .none,
        timeout: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.output = output
        self.qrCode = qrCode
        self.qrStyle = qrStyle
        self.qrLibraries = qrLibraries
        self.browser = browser
        self.timeout = timeout
        self.now = now
    }

    /// Runs the whole device flow on the system's clock.
    ///
    /// See ``signIn(client:scopes:additionalParameters:clock:)``.
    public func signIn(
        client: OAuth2Client,
        scopes: [String]? = nil,
        additionalParameters: [String: String] = [:]
    ) async throws -> TokenSet {
        try await signIn(client: client, scopes: scopes, additionalParameters: additionalParameters, clock: ContinuousClock())
    }

    /// Runs the whole device flow and keeps the sign-in: the tokens are saved in `store`
    /// under `account`, and the session that keeps them fresh is returned.
    ///
    /// ```swift
    /// let session = try await DeviceSignIn().signIn(client: client, store: store)
    /// ```
    ///
    /// - Parameters:
    ///   - client: the client that requests the device code and polls.
    ///   - store: where the tokens are saved.
    ///   - account: the name the tokens are saved under (`"default"`).
    ///   - scopes: the scopes to ask for (`nil`: the configuration's).
    ///   - additionalParameters: extra parameters of the device authorization request.
    ///   - sessionOptions: the session's options (refresh leeway, renewal, retries).
    ///   - clock: the clock polling waits on.
    /// - Returns: the session, its tokens already in `store`.
    /// - Throws: as ``signIn(client:scopes:additionalParameters:clock:)``; what `store`
    ///   throws when saving.
    public func signIn<C: Clock>(
        client: OAuth2Client,
        store: any TokenStore,
        account: String = "default",
        scopes: [String]? = nil,
        additionalParameters: [String: String] = [:],
        sessionOptions: TokenSession.Options = TokenSession.Options(),
        clock: C = ContinuousClock()
    ) async throws -> TokenSession where C.Duration == Duration {
        let tokens = try await signIn(client: client, scopes: scopes, additionalParameters: additionalParameters, clock: clock)
        return try await TokenSession(client: client, tokens: tokens, store: store, account: account, options: sessionOptions)
    }

    /// Runs the whole device flow: requests a device code, shows the instructions, polls
    /// with a countdown, and returns the tokens.
    ///
    /// - Parameters:
    ///   - client: the client that requests the device code and polls.
    ///   - scopes: the scopes to ask for (`nil`: the configuration's).
    ///   - additionalParameters: extra parameters of the device authorization request.
    ///   - clock: the clock polling waits on (tests pass one that does not wait).
    /// - Throws: what `OAuth2Client.startDeviceAuthorization(scopes:additionalParameters:)`
    ///   and `OAuth2Client.pollDeviceToken(_:clock:progress:)` throw —
    ///   `OAuth2Error.Code.accessDenied`, `OAuth2Error.Code.expiredToken`,
    ///   `OAuth2Error.Code.cancelled`…; `OAuth2Error.Code.timeout` when
    ///   ``timeout`` passes first.
    public func signIn<C: Clock>(
        client: OAuth2Client,
        scopes: [String]? = nil,
        additionalParameters: [String: String] = [:],
        clock: C
    ) async throws -> TokenSet where C.Duration == Duration {
        let authorization = try await client.startDeviceAuthorization(scopes: scopes, additionalParameters: additionalParameters)
        return try await complete(authorization, client: client, clock: clock)
    }

    /// Shows the instructions for a device authorization already started, polls with a
    /// countdown, and returns the tokens.
    ///
    /// - Throws: what `OAuth2Client.pollDeviceToken(_:clock:progress:)` throws;
    ///   `OAuth2Error.Code.timeout` when ``timeout`` passes first.
    public func complete<C: Clock>(
        _ authorization: DeviceAuthorization,
        client: OAuth2Client,
        clock: C
    ) async throws -> TokenSet where C.Duration == Duration {
        output.write(instructions(for: authorization, qrCode: qrCodeToShow(for: authorization)))
        if case .none = browser {
        } else if await !browser.open(authorization.preferredVerificationURI) {
            output.write("(No browser could be opened: open the address above yourself.)\n")
        }
        return try await pollWithCountdown(output: output, expiresAt: authorization.expiresAt, now: now, timeout: timeout, what: "device") { progress in
            try await client.pollDeviceToken(authorization, clock: clock, progress: progress)
        }
    }

    /// The QR code to draw for `authorization`, per ``qrCode``; `nil` when none.
    func qrCodeToShow(for authorization: DeviceAuthorization) -> TerminalQRCode? {
        switch qrCode {
        case .never: return nil
        case .automatic where !output.isTerminal: return nil
        case .automatic, .always:
            return TerminalQRCode(encoding: authorization.preferredVerificationURI.absoluteString, libraries: qrLibraries)
        }
    }

    /// The instructions shown before polling: where to go, the code to enter, the QR code
    /// (when given) and when the code expires. Never the device code.
    public func instructions(for authorization: DeviceAuthorization, qrCode: TerminalQRCode?) -> String {
        var text = "To sign in, open this address in a browser on any device:\n\n"
        text += "    \(authorization.verificationURI.absoluteString)\n\n"
        text += "and enter the code:\n\n"
        text += "    \(authorization.userCode)\n\n"
        if let complete = authorization.verificationURIComplete {
            text += "Or open this address, which carries the code:\n\n    \(complete.absoluteString)\n\n"
        }
        if let qrCode {
            text += authorization.verificationURIComplete != nil
                ? "Or scan this QR code with a phone (it carries the code):\n\n"
                : "Or scan this QR code with a phone, then enter the code:\n\n"
            text += qrCode.render(style: qrStyle)
            text += "\n"
        }
        let minutes = max(1, Int((authorization.expiresAt.timeIntervalSince(now()) / 60).rounded()))
        text += "The code expires in \(minutes) minute\(minutes == 1 ? "" : "s").\n"
        return text
    }

    /// The countdown line: `Waiting for approval… 14:32 left` (hours shown past an hour).
    public static func countdownLine(remaining: TimeInterval) -> String {
        let seconds = max(0, Int(remaining.rounded(.down)))
        let clock = seconds >= 3600
            ? String(format: "%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
            : String(format: "%d:%02d", seconds / 60, seconds % 60)
        return "Waiting for approval… \(clock) left"
    }

    /// A line for the events worth telling; `nil` for the routine ones.
    static func describe(_ event: DevicePollEvent) -> String? {
        switch event {
        case .waiting, .authorizationPending:
            return nil
        case .slowDown(let interval):
            return "The server asked to poll less often: every \(Int(interval)) seconds now."
        case .retrying(let code, let interval):
            return "Polling failed (\(code)); trying again in \(Int(interval)) seconds."
        }
    }
}
