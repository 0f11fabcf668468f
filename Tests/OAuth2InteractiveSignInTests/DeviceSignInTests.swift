import Foundation
import OAuth2
import OAuth2TestSupport
import Testing
@testable import OAuth2InteractiveSignIn

/// `DeviceSignIn`: the presentation of the device flow, against a local provider.
@Suite struct DeviceSignInTests {
    static let deviceCode = "dc-never-shown-4711"

    static func deviceAnswer(_ base: URL, complete: Bool = true, interval: Int = 1) -> LocalHTTPServer.Reply {
        let verification = base.appendingPathComponent("activate").absoluteString
        let completeMember = complete ? #","verification_uri_complete":"\#(verification)?user_code=WDJB-MJHT""# : ""
        return .json(200, #"{"device_code":"\#(deviceCode)","user_code":"WDJB-MJHT","verification_uri":"\#(verification)"\#(completeMember),"expires_in":900,"interval":\#(interval)}"#)
    }

    static let pending = LocalHTTPServer.Reply.json(400, #"{"error":"authorization_pending"}"#)
    static let slowDown = LocalHTTPServer.Reply.json(400, #"{"error":"slow_down"}"#)

    @Test func showsTheCodeAndPollsUntilApproved() async throws {
        let base = BaseBox()
        try await SignInProvider.with(
            token: { index, _ in [Self.pending, Self.slowDown, Self.pending, SignInProvider.tokens][min(index, 3)] },
            device: { _ in Self.deviceAnswer(base.url!) }
        ) { provider in
            base.url = provider.baseURL
            let output = CapturedOutput()
            let clock = ImmediateClock()
            let date = ManualDate(Self.instant)
            let tokens = try await DeviceSignIn(output: output, qrCode: .never, now: date.function)
                .signIn(client: try provider.client(now: date.function), scopes: ["read", "write"], clock: clock)
            #expect(tokens.accessToken == "at-from-fake")
            #expect(provider.deviceRequests == [["client_id": "cli", "scope": "read write"]])
            #expect(provider.tokenRequests.count == 4)
            #expect(provider.tokenRequests.allSatisfy { $0["device_code"] == Self.deviceCode && $0["grant_type"] == Grant.deviceCodeType })
            #expect(clock.sleeps == [.seconds(1), .seconds(1), .seconds(6), .seconds(6)], "slow_down added 5 s")
            let text = output.text
            #expect(text.contains("    WDJB-MJHT\n"))
            #expect(text.contains(provider.baseURL.appendingPathComponent("activate").absoluteString + "\n"))
            #expect(text.contains("activate?user_code=WDJB-MJHT"))
            // The code's lifetime counts from the request's stamp, on the clock the text reads.
            #expect(text.contains("The code expires in 15 minutes.\n"))
            #expect(text.contains("The server asked to poll less often: every 6 seconds now."))
            #expect(!text.contains(Self.deviceCode))
            #expect(!text.contains("at-from-fake"))
            #expect(!text.contains("\u{1B}"), "no terminal controls when the output is not a terminal")
        }
    }

    @Test func onATerminalItCountsDownAndDrawsTheQRCode() async throws {
        let base = BaseBox()
        try await SignInProvider.with(
            token: { index, _ in index < 2 ? Self.pending : SignInProvider.tokens },
            device: { _ in Self.deviceAnswer(base.url!) }
        ) { provider in
            base.url = provider.baseURL
            let output = CapturedOutput(isTerminal: true)
            // Polling waits on the real clock (a 1 s interval), so the countdown ticks; the time
            // it shows is read from the instant the request was stamped with.
            let date = ManualDate(Self.instant)
            _ = try await DeviceSignIn(output: output, qrStyle: .darkOnLight, now: date.function)
                .signIn(client: try provider.client(now: date.function))
            let text = output.text
            #expect(text.contains("\r\u{1B}[2KWaiting for approval… 15:00 left"))
            #expect(text.hasSuffix("\r\u{1B}[2K"), "the countdown line is cleared at the end")
            if TerminalQRCode.isAvailable() {
                let qr = try #require(TerminalQRCode(encoding: provider.baseURL.appendingPathComponent("activate").absoluteString + "?user_code=WDJB-MJHT"))
                #expect(text.contains("Or scan this QR code with a phone (it carries the code):"))
                #expect(text.contains(qr.render(style: .darkOnLight)))
            }
        }
    }

    @Test func withoutACompleteURITheQRCodeCarriesThePlainURI() throws {
        let authorization = DeviceAuthorization(
            deviceCode: Self.deviceCode, userCode: "ABCD", verificationURI: URL(string: "https://as.example.com/device")!,
            expiresAt: Self.instant.addingTimeInterval(60), interval: 5)
        let qr = try #require(TerminalQRCode(version: 1, size: 2, modules: [true, false, false, true]))
        let presenter = DeviceSignIn(output: CapturedOutput(), qrStyle: .darkOnLight, now: { Self.instant })
        let text = presenter.instructions(for: authorization, qrCode: qr)
        #expect(text.contains("https://as.example.com/device\n"))
        #expect(!text.contains("carries the code:\n\n    "), "no complete URI to show")
        #expect(text.contains("Or scan this QR code with a phone, then enter the code:"))
        #expect(text.contains(qr.render(style: .darkOnLight)))
        #expect(text.contains("The code expires in 1 minute."))
        #expect(!text.contains(Self.deviceCode))
        #expect(!presenter.instructions(for: authorization, qrCode: nil).contains("QR"))
        #expect(DeviceSignIn(output: CapturedOutput(isTerminal: false), qrCode: .automatic).qrCodeToShow(for: authorization) == nil)
        #expect(DeviceSignIn(output: CapturedOutput(isTerminal: true), qrCode: .never).qrCodeToShow(for: authorization) == nil)
        #expect(DeviceSignIn(output: CapturedOutput(isTerminal: true), qrCode: .always, qrLibraries: ["libnothing.so.1"]).qrCodeToShow(for: authorization) == nil)
    }

    @Test func theCountdownLine() {
        #expect(DeviceSignIn.countdownLine(remaining: 872.6) == "Waiting for approval… 14:32 left")
        #expect(DeviceSignIn.countdownLine(remaining: 3725) == "Waiting for approval… 1:02:05 left")
        #expect(DeviceSignIn.countdownLine(remaining: 9) == "Waiting for approval… 0:09 left")
        #expect(DeviceSignIn.countdownLine(remaining: -3) == "Waiting for approval… 0:00 left")
    }

    @Test func aDenialEndsItTyped() async throws {
        let base = BaseBox()
        try await SignInProvider.with(
            token: { index, _ in index == 0 ? Self.pending : .json(400, #"{"error":"access_denied"}"#) },
            device: { _ in Self.deviceAnswer(base.url!) }
        ) { provider in
            base.url = provider.baseURL
            do {
                _ = try await DeviceSignIn(output: CapturedOutput()).signIn(client: try provider.client(), clock: ImmediateClock())
                Issue.record("a denied device sign-in returned tokens")
            } catch let error as OAuth2Error {
                #expect(error.code == .accessDenied)
            }
        }
    }

    @Test("signIn(client:store:account:) ends with the session, its tokens saved under the account")
    func signInEndsWithAStoredSession() async throws {
        let base = BaseBox()
        try await SignInProvider.with(token: { _, _ in SignInProvider.tokens }, device: { _ in Self.deviceAnswer(base.url!) }) { provider in
            base.url = provider.baseURL
            let client = try provider.client()
            let store = MemoryTokenStore()
            let session = try await DeviceSignIn(output: CapturedOutput()).signIn(
                client: client, store: store, account: "tv", clock: ImmediateClock())
            #expect(session.key == TokenSession.key(for: client, account: "tv"))
            #expect(session.tokens?.accessToken == "at-from-fake")
            let stored = try #require(try await store.load(TokenSession.key(for: client, account: "tv")))
            #expect(stored.tokens.accessToken == "at-from-fake")
        }
    }

    @Test func openBrowserOpensTheCompleteURI() async throws {
        let base = BaseBox()
        let opened = PageBox()
        try await SignInProvider.with(token: { _, _ in SignInProvider.tokens }, device: { _ in Self.deviceAnswer(base.url!) }) { provider in
            base.url = provider.baseURL
            let presenter = DeviceSignIn(output: CapturedOutput(), browser: .custom { url in
                opened.url = url
                return true
            })
            _ = try await presenter.signIn(client: try provider.client(), clock: ImmediateClock())
            #expect(opened.url?.absoluteString == provider.baseURL.appendingPathComponent("activate").absoluteString + "?user_code=WDJB-MJHT")
        }
    }

    @Test func theTimeoutEndsAWaitThatWouldOutliveIt() async throws {
        let base = BaseBox()
        try await SignInProvider.with(token: { _, _ in Self.pending }, device: { _ in Self.deviceAnswer(base.url!) }) { provider in
            base.url = provider.baseURL
            do {
                // Polls without waiting (ImmediateClock) for a minute of the clock's time, then
                // its time stops: the code (15 minutes) never expires, however fast the machine,
                // and the 4 s timeout on the wall clock is the only way this ends. No bound on
                // the wall clock either: a busy machine may take as long as it likes.
                _ = try await DeviceSignIn(output: CapturedOutput(), timeout: .seconds(4))
                    .signIn(client: try provider.client(), clock: ImmediateClock(horizon: .seconds(60)))
                Issue.record("pending forever, yet tokens")
            } catch let error as OAuth2Error {
                #expect(error.code == .timeout)
            }
            #expect(provider.tokenRequests.count >= 1, "it did poll before giving up")
        }
    }

    /// The minutes an instructions text says `what` ("code", "request") expires in.
    /// A fixed instant for the instructions' clock.
    static let instant = Date(timeIntervalSince1970: 1_800_000_000)
}

final class BaseBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: URL?
    var url: URL? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
