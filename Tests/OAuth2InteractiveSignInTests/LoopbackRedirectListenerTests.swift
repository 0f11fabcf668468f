import Foundation
import OAuth2
import OAuth2TestSupport
import Testing
@testable import OAuth2InteractiveSignIn

/// The loopback redirect listener over real sockets.
@Suite struct LoopbackRedirectListenerTests {
    /// The listener's own sockets prove the release: every one is closed. Probing the port
    /// instead would depend on other tests, which may bind the freed port at any moment.
    static func expectReleased(_ listener: LoopbackRedirectListener, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(listener.isReleased, "the listener on port \(listener.port) still holds a socket", sourceLocation: sourceLocation)
    }

    /// On a port reserved for the test, binding it again proves the release to the system
    /// itself: no other test can have taken it meanwhile.
    static func expectBindable(_ reserved: ReservedPort, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let again = try await LoopbackRedirectListener.start(port: reserved.port)
        #expect(again.port == reserved.port, sourceLocation: sourceLocation)
        await again.close()
    }

    @Test func theCallbackIsHandedOverAndThePageIsSafe() async throws {
        let listener = try await LoopbackRedirectListener.start()
        #expect(listener.redirectURI.absoluteString == "http://127.0.0.1:\(listener.port)/callback")
        #expect(listener.port > 0)
        async let answer = RawHTTP.get("/callback?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj&iss=https%3A%2F%2Fas.example.com", port: listener.port)
        let callback = try await listener.waitForCallback(timeout: .seconds(120))
        #expect(callback.absoluteString == "http://127.0.0.1:\(listener.port)/callback?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj&iss=https%3A%2F%2Fas.example.com")
        let page = try await answer
        #expect(page.status == 200)
        #expect(page.header("Referrer-Policy") == "no-referrer")
        #expect(page.header("Content-Security-Policy")?.hasPrefix("default-src 'none'") == true)
        #expect(page.header("Cache-Control") == "no-store")
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Content-Length") == String(page.body.utf8.count))
        #expect(page.body.contains("Signed in"))
        for secret in ["SplxlOBeZQQYbYS6WxSbIA", "af0ifjsldkj", "as.example.com"] {
            #expect(!page.body.contains(secret), "the page echoes \(secret)")
        }
        for reference in ["src=", "href=", "http://", "https://", "<script", "@import", "url("] {
            #expect(!page.body.contains(reference), "the page refers to something: \(reference)")
        }
        Self.expectReleased(listener)
    }

    @Test func otherPathsGetA404AndTheWaitGoesOn() async throws {
        let listener = try await LoopbackRedirectListener.start(callbackPath: "/oauth/done")
        let waiting = Task { try await listener.waitForCallback(timeout: .seconds(120)) }
        for path in ["/favicon.ico", "/", "/oauth/done/extra", "/oauth", "/callback?code=x&state=y"] {
            let answer = try await RawHTTP.get(path, port: listener.port)
            #expect(answer.status == 404, "\(path)")
            #expect(answer.header("Referrer-Policy") == "no-referrer")
        }
        let head = try await RawHTTP.get("/oauth/done?code=head&state=s", port: listener.port, method: "HEAD")
        #expect(head.status == 405, "a HEAD never consumes the callback")
        let post = try await RawHTTP.request(
            "POST /oauth/done HTTP/1.1\r\nHost: 127.0.0.1:\(listener.port)\r\nContent-Length: 13\r\nConnection: close\r\n\r\ncode=x&state=y", port: listener.port)
        #expect(post.status == 405)
        let page = try await RawHTTP.get("/oauth/done?code=the-code&state=s", port: listener.port)
        #expect(page.status == 200)
        let callback = try await waiting.value
        #expect(callback.path == "/oauth/done")
        #expect(callback.query == "code=the-code&state=s")
        Self.expectReleased(listener)
    }

    @Test func aForeignHostHeaderIsRefused() async throws {
        // DNS rebinding: a page of evil.example resolves its name to 127.0.0.1.
        let listener = try await LoopbackRedirectListener.start()
        let waiting = Task { try await listener.waitForCallback(timeout: .seconds(120)) }
        let rebound = try await RawHTTP.get("/callback?code=x&state=y", port: listener.port, host: "evil.example:\(listener.port)")
        #expect(rebound.status == 400)
        let callback = try await RawHTTP.get("/callback?code=real&state=s", port: listener.port)
        #expect(callback.status == 200)
        #expect(try await waiting.value.query == "code=real&state=s")
    }

    @Test func aRejectedRequestIsAnsweredAndTheWaitGoesOn() async throws {
        let listener = try await LoopbackRedirectListener.start()
        let waiting = Task {
            try await listener.waitForCallback(timeout: .seconds(120)) { url in
                url.query?.contains("state=right") == true ? .accept : .reject
            }
        }
        let forged = try await RawHTTP.get("/callback?code=forged&state=wrong", port: listener.port)
        #expect(forged.status == 400)
        #expect(forged.body.contains("does not belong"))
        #expect(!forged.body.contains("forged"))
        let real = try await RawHTTP.get("/callback?code=real&state=right", port: listener.port)
        #expect(real.status == 200)
        #expect(try await waiting.value.query == "code=real&state=right")
    }

    @Test func anErrorResponseEndsTheWaitWithAFailurePage() async throws {
        let listener = try await LoopbackRedirectListener.start()
        async let answer = RawHTTP.get(
            "/callback?error=access_denied&error_description=%3Cscript%3Ealert(1)%3C%2Fscript%3E&state=s", port: listener.port)
        let callback = try await listener.waitForCallback(timeout: .seconds(120))
        #expect(callback.query?.hasPrefix("error=access_denied") == true)
        let page = try await answer
        #expect(page.status == 200)
        #expect(page.body.contains("Sign-in failed"))
        #expect(page.body.contains("(access_denied)"))
        #expect(!page.body.contains("<script>") && !page.body.contains("alert"), "the description is never shown")
        // A code that is not plain is not shown either.
        #expect(LoopbackPages().failurePage(errorCode: "<b>x</b>").html.contains("<b>") == false)
    }

    @Test func aCallbackBeforeTheWaitIsKept() async throws {
        let listener = try await LoopbackRedirectListener.start()
        // The browser was faster than the caller: its request waits for a verdict.
        let early = Task { try await RawHTTP.get("/callback?code=early&state=s", port: listener.port) }
        try await Task.sleep(for: .milliseconds(200))
        let callback = try await listener.waitForCallback(timeout: .seconds(120))
        #expect(callback.query == "code=early&state=s")
        #expect(try await early.value.status == 200)
    }

    @Test func aTimeoutEndsTheWaitAndReleasesThePort() async throws {
        let listener = try await LoopbackRedirectListener.start()
        let started = ContinuousClock.now
        do {
            _ = try await listener.waitForCallback(timeout: .milliseconds(300))
            Issue.record("a wait without a callback returned")
        } catch let error as OAuth2Error {
            #expect(error.code == .timeout)
            #expect(error.message?.contains(listener.redirectURI.absoluteString) == true)
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        Self.expectReleased(listener)
        await #expect(throws: OAuth2Error.self, "a finished listener does not wait again") {
            try await listener.waitForCallback(timeout: .milliseconds(10))
        }
    }

    @Test func cancellationEndsTheWaitAndReleasesThePort() async throws {
        let listener = try await LoopbackRedirectListener.start()
        let waiting = Task { try await listener.waitForCallback(timeout: nil) }
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        waiting.cancel()
        do {
            _ = try await waiting.value
            Issue.record("a cancelled wait returned")
        } catch let error as OAuth2Error {
            #expect(error.code == .cancelled)
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        Self.expectReleased(listener)
    }

    @Test func closingWithAnIdleConnectionOpenStillReleasesThePort() async throws {
        let reserved = try ReservedPort()
        let listener = try await LoopbackRedirectListener.start(port: reserved.port)
        try await RawHTTP.withIdleConnection(port: listener.port) {
            // A browser's speculative connection that never sends a request.
            try await Task.sleep(for: .milliseconds(100))
            await listener.close()
            Self.expectReleased(listener)
            try await Self.expectBindable(reserved)
        }
    }

    @Test func aFixedPortIsUsedAndABusyOneIsReported() async throws {
        // A port no other test can take (see ReservedPort): no retry, no race.
        let reserved = try ReservedPort()
        let fixed = try await LoopbackRedirectListener.start(port: reserved.port, callbackPath: "/cb")
        #expect(fixed.port == reserved.port)
        #expect(fixed.redirectURI.absoluteString == "http://127.0.0.1:\(reserved.port)/cb")
        do {
            let second = try await LoopbackRedirectListener.start(port: reserved.port)
            await second.close()
            Issue.record("two listeners on one port")
        } catch let error as OAuth2Error {
            #expect(error.code == .network)
            #expect(error.message?.contains("in use") == true)
        }
        await fixed.close()
        Self.expectReleased(fixed)
        try await Self.expectBindable(reserved)
    }

    @Test func ipv6AndLocalhost() async throws {
        let v6 = try await LoopbackRedirectListener.start(host: .ipv6)
        #expect(v6.redirectURI.absoluteString == "http://[::1]:\(v6.port)/callback")
        async let v6Answer = RawHTTP.get("/callback?code=c6&state=s", port: v6.port, address: "::1")
        #expect(try await v6.waitForCallback(timeout: .seconds(120)).absoluteString == "http://[::1]:\(v6.port)/callback?code=c6&state=s")
        #expect(try await v6Answer.status == 200)
        Self.expectReleased(v6)

        let both = try await LoopbackRedirectListener.start(host: .localhost)
        #expect(both.redirectURI.absoluteString == "http://localhost:\(both.port)/callback")
        let waiting = Task { try await both.waitForCallback(timeout: .seconds(120)) }
        let favicon = try await RawHTTP.get("/favicon.ico", port: both.port, host: "localhost:\(both.port)", address: "::1")
        #expect(favicon.status == 404, "::1 answers on the same port")
        let answer = try await RawHTTP.get("/callback?code=c&state=s", port: both.port, host: "localhost:\(both.port)")
        #expect(answer.status == 200)
        #expect(try await waiting.value.absoluteString == "http://localhost:\(both.port)/callback?code=c&state=s")
        Self.expectReleased(both)
    }

    @Test(arguments: ["callback", "/cb?x=1", "/cb#f", "/a b", ""])
    func aBadCallbackPathIsRefused(path: String) async throws {
        await #expect(throws: OAuth2Error.self) { _ = try await LoopbackRedirectListener.start(callbackPath: path) }
    }

    @Test func theDefaultVerdict() {
        let verdict = LoopbackRedirectListener.defaultVerdict
        #expect(verdict(URL(string: "http://127.0.0.1:1/callback?code=c&state=s")!) == .accept)
        #expect(verdict(URL(string: "http://127.0.0.1:1/callback?error=access_denied&state=s")!) == .acceptFailure(errorCode: "access_denied"))
        #expect(verdict(URL(string: "http://127.0.0.1:1/callback")!) == .reject)
        #expect(verdict(URL(string: "http://127.0.0.1:1/callback?state=s")!) == .reject)
    }

    @Test func withListenerClosesWhenTheBodyThrows() async throws {
        struct Boom: Error {}
        let reserved = try ReservedPort()
        let escaped = ListenerBox()
        await #expect(throws: Boom.self) {
            try await LoopbackRedirectListener.withListener(port: reserved.port) { listener in
                escaped.value = listener
                #expect(!listener.isReleased, "a started listener holds its socket")
                throw Boom()
            }
        }
        Self.expectReleased(try #require(escaped.value))
        try await Self.expectBindable(reserved)
    }
}

/// A listener handed out of a closure.
final class ListenerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: LoopbackRedirectListener?
    var value: LoopbackRedirectListener? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
