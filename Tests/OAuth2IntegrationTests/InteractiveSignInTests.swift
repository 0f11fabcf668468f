import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import Testing

extension Integration {
    /// The device authorization grant (RFC 8628) against the real servers; the user's
    /// approval is given on the servers' own pages, as the reference recipes do.
    @Suite struct DeviceFlow {
        @Test(arguments: Server.allCases, TransportKind.allCases)
        func approvedAfterPendingGivesVerifiedTokens(server: Server, transport: TransportKind) async throws {
            let configuration = server.deviceConfiguration()
            let client = try await server.deviceClient(configuration, transport: transport)
            let authorization = try await client.startDeviceAuthorization()
            #expect(!authorization.userCode.isEmpty)
            #expect(authorization.verificationURI.host == "127.0.0.1")
            #expect(authorization.expiresAt > Date().addingTimeInterval(60))
            #expect(authorization.interval >= 1)
            let events = PollEvents()
            let tokens = try await client.pollDeviceToken(authorization) { event in
                events.append(event)
                // The server has said "pending" once: now the user approves.
                if case .authorizationPending(attempt: 1) = event {
                    do {
                        try await server.decideDevice(userCode: authorization.userCode, clientID: configuration.clientID, scopes: configuration.scopes)
                    } catch {
                        Issue.record("approving the device failed: \(error)")
                    }
                }
            }
            #expect(events.all.contains(.authorizationPending(attempt: 1)), "the real server answered authorization_pending first")
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.refreshToken != nil)
            #expect(tokens.scopes?.contains("openid") == true)
            switch server {
            case .glewlwyd:
                // Verified like every grant's before the tokens were returned.
                #expect(tokens.idTokenClaims?.subject.isEmpty == false, "Glewlwyd returns an ID token to an openid device grant")
            case .dot:
                #expect(tokens.idToken == nil, "DOT issues no ID token to the device grant")
                let me = try await client.userInfo(for: tokens)
                #expect(!me.subject.isEmpty, "the access token works at UserInfo")
            }
            #expect(events.all.first == .waiting(seconds: authorization.interval, attempt: 1))
        }

        @Test func glewlwydConfidentialClientAuthenticatesItsDeviceRequests() async throws {
            let server = Server.glewlwyd
            let configuration = server.deviceConfiguration(confidential: true, scopes: ["read"])
            let client = try await server.deviceClient(configuration)
            let authorization = try await client.startDeviceAuthorization()
            try await server.decideDevice(userCode: authorization.userCode, clientID: configuration.clientID, scopes: configuration.scopes)
            let tokens = try await client.pollDeviceToken(authorization)
            #expect(tokens.scopes?.contains("read") == true)
            #expect(tokens.idToken == nil, "no openid scope, no ID token")
            let introspection = try await client.introspect(tokens.accessToken)
            #expect(introspection.active)
        }

        @Test func dotDenialIsAccessDenied() async throws {
            let server = Server.dot
            let configuration = server.deviceConfiguration()
            let client = try await server.deviceClient(configuration)
            let authorization = try await client.startDeviceAuthorization()
            try await server.decideDevice(userCode: authorization.userCode, clientID: configuration.clientID, scopes: configuration.scopes, approve: false)
            do {
                _ = try await client.pollDeviceToken(authorization)
                Issue.record("a denied device authorization gave tokens")
            } catch let error as OAuth2Error {
                #expect(error.code == .accessDenied)
                #expect(error.requiresReauthorization)
                #expect(!error.description.contains(authorization.deviceCode))
            }
        }

        @Test(arguments: Server.allCases)
        func anUnknownDeviceCodeIsRefused(server: Server) async throws {
            let client = try await server.deviceClient(server.deviceConfiguration())
            do {
                _ = try await client.requestToken(.deviceCode("no-such-device-code"))
                Issue.record("an unknown device code gave tokens")
            } catch let error as OAuth2Error {
                switch server {
                case .dot: #expect(error.code == .invalidGrant && error.serverCode == "device_not_found")
                case .glewlwyd: #expect(error.code == .accessDenied, "Glewlwyd answers access_denied")
                }
                #expect(!error.description.contains("no-such-device-code"))
            }
        }

        @Test func deviceSignInOpensTheCompleteURIAndShowsTheCode() async throws {
            // `oauth2 login --device --open-browser`: the "browser" opens
            // verification_uri_complete, where Glewlwyd takes the code from the URL.
            let server = Server.glewlwyd
            let configuration = server.deviceConfiguration()
            let client = try await server.deviceClient(configuration)
            let output = TextCapture()
            let opened = URLBox()
            let presenter = DeviceSignIn(output: output, qrCode: .always, browser: .custom { url in
                opened.url = url
                do {
                    let browser = Browser()
                    try await server.logIn(clientID: configuration.clientID, scopes: configuration.scopes, browser: browser)
                    let (response, _) = try await browser.get(URL(string: url.absoluteString + "&g_continue")!)
                    return response.status.kind == .redirection
                } catch {
                    Issue.record("the browser failed: \(error)")
                    return false
                }
            })
            let tokens = try await presenter.signIn(client: client)
            #expect(tokens.idToken != nil)
            let complete = try #require(opened.url)
            #expect(complete.path.hasSuffix("/device"))
            let userCode = try #require(URLComponents(url: complete, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == "code" })?.value)
            #expect(output.text.contains("    \(userCode)\n"))
            #expect(output.text.contains(complete.absoluteString))
            if TerminalQRCode.isAvailable() {
                #expect(output.text.contains("Or scan this QR code"))
            }
        }
    }

    /// Loopback sign-in (RFC 8252 §7.3) against the real servers: the "browser" signs in on
    /// the provider's pages, follows the redirect to the listener and gets its page.
    @Suite struct LoopbackSignInAgainstRealServers {
        /// Glewlwyd compares redirect URIs exactly: it gets the registered port. DOT follows
        /// RFC 8252 §7.3 for loopback URIs: it gets any free port.
        static func signIn(for server: Server) -> (port: Int, path: String) {
            let registered = Server.redirectURI
            return (server == .glewlwyd ? registered.port ?? 9999 : 0, registered.path)
        }

        /// A browser that signs in on `server`'s pages, then requests the redirect from the
        /// listener and checks its page.
        static func browser(_ server: Server, clientID: String, scopes: [String], session: Browser, pages: PageLog) -> BrowserChoice {
            .custom { url in
                do {
                    let callback = try await server.authorize(url: url, scopes: scopes, clientID: clientID, browser: session)
                    let (response, body) = try await session.get(callback)
                    pages.add(callback: callback, response: response, body: String(decoding: body, as: UTF8.self))
                    return true
                } catch {
                    Issue.record("the browser failed: \(error)")
                    return false
                }
            }
        }

        /// Retries while another test process holds the fixed port.
        static func withFreePort<T>(_ body: () async throws -> T) async throws -> T {
            for _ in 0..<40 {
                do {
                    return try await body()
                } catch let error as OAuth2Error where error.code == .network && error.message?.contains("in use") == true {
                    try await Task.sleep(for: .milliseconds(500))
                }
            }
            return try await body()
        }

        @Test(arguments: Server.allCases)
        func signInThroughTheListener(server: Server) async throws {
            let configuration = server.publicClient()
            let client = try await server.client(configuration)
            let (port, path) = Self.signIn(for: server)
            let pages = PageLog()
            let output = TextCapture()
            let signIn = LoopbackSignIn(
                port: port, callbackPath: path, timeout: .seconds(60),
                browser: Self.browser(server, clientID: configuration.clientID, scopes: configuration.scopes, session: Browser(), pages: pages),
                output: output)
            let tokens = try await Self.withFreePort { try await signIn.signIn(client: client) }
            #expect(!tokens.accessToken.isEmpty)
            #expect(tokens.idTokenClaims?.subject.isEmpty == false)
            #expect(tokens.refreshToken != nil)
            let page = try #require(pages.all.first)
            #expect(page.response.status.code == 200)
            #expect(page.response.headerFields[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(page.body.contains("Signed in"))
            let code = try #require(URLComponents(url: page.callback, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == "code" })?.value)
            #expect(!page.body.contains(code))
            #expect(!output.text.contains(code))
            if server == .dot {
                #expect(page.callback.port != Server.redirectURI.port, "an ephemeral port, as RFC 8252 §7.3 allows")
            } else {
                #expect(page.callback.port == Server.redirectURI.port)
            }
            // The listener is gone: its port can be bound again.
            let again = try await Self.withFreePort { try await LoopbackRedirectListener.start(port: page.callback.port ?? 0) }
            await again.close()
        }

        @Test func dotLogoutReturnsToTheListenerWithItsState() async throws {
            let server = Server.dot
            let configuration = server.publicClient()
            let client = try await server.client(configuration)
            let session = Browser()
            let pages = PageLog()
            let signIn = LoopbackSignIn(
                timeout: .seconds(60),
                browser: Self.browser(server, clientID: configuration.clientID, scopes: configuration.scopes, session: session, pages: pages),
                output: TextCapture())
            let tokens = try await signIn.signIn(client: client)
            let logoutPages = PageLog()
            let signOut = LoopbackSignIn(
                timeout: .seconds(60),
                browser: .custom { url in
                    do {
                        let back = try await session.redirect(from: url)
                        let (response, body) = try await session.get(back)
                        logoutPages.add(callback: back, response: response, body: String(decoding: body, as: UTF8.self))
                        return true
                    } catch {
                        Issue.record("the browser failed: \(error)")
                        return false
                    }
                },
                output: TextCapture())
            try await signOut.signOut(client: client, options: EndSessionOptions(idTokenHint: tokens.idToken))
            let page = try #require(logoutPages.all.first)
            #expect(page.response.status.code == 200)
            #expect(page.body.contains("Signed out"))
            // The provider's session ended: a new authorization needs the login page again.
            let request = try client.authorizationRequest()
            let (response, _) = try await session.get(request.url)
            #expect(response.headerFields[.location]?.contains("/accounts/login/") == true)
        }

        @Test func glewlwydDeniesAnUnregisteredPortAndTheSignInTimesOut() async throws {
            // Exact matching at Glewlwyd: an ephemeral port is refused at the authorization
            // endpoint, so no redirect reaches the listener, and the wait ends by its timeout.
            let server = Server.glewlwyd
            let configuration = server.publicClient()
            let client = try await server.client(configuration)
            let refused = StatusBox()
            let signIn = LoopbackSignIn(timeout: .seconds(3), browser: .custom { url in
                do {
                    let session = Browser()
                    try await server.logIn(clientID: configuration.clientID, scopes: configuration.scopes, browser: session)
                    let (response, _) = try await session.get(URL(string: url.absoluteString + "&g_continue")!)
                    refused.status = response.status.code
                } catch {
                    Issue.record("the browser failed: \(error)")
                }
                return true
            }, output: TextCapture())
            do {
                _ = try await signIn.signIn(client: client)
                Issue.record("an unregistered redirect URI was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .timeout)
            }
            #expect(refused.status == 403)
        }
    }
}

/// Poll events, in order.
final class PollEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [DevicePollEvent] = []
    func append(_ event: DevicePollEvent) { lock.withLock { events.append(event) } }
    var all: [DevicePollEvent] { lock.withLock { events } }
}

/// What a sign-in front end wrote.
final class TextCapture: TerminalOutput, @unchecked Sendable {
    private let lock = NSLock()
    private var storage = ""
    var isTerminal: Bool { false }
    func write(_ text: String) { lock.withLock { storage += text } }
    var text: String { lock.withLock { storage } }
}

/// The pages the listener served to the test's browser.
final class PageLog: @unchecked Sendable {
    struct Page {
        var callback: URL
        var response: HTTPResponse
        var body: String
    }

    private let lock = NSLock()
    private var pages: [Page] = []
    func add(callback: URL, response: HTTPResponse, body: String) { lock.withLock { pages.append(Page(callback: callback, response: response, body: body)) } }
    var all: [Page] { lock.withLock { pages } }
}

final class URLBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: URL?
    var url: URL? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

final class StatusBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Int?
    var status: Int? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
