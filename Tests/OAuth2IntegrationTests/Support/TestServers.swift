import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

/// The real authorization servers that `scripts/test-servers/up.sh` starts, described by the
/// environment it exports (defaults match the scripts). A server that does not answer makes
/// its tests fail: they never skip.
enum Server: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case glewlwyd
    case dot

    static let environment = ProcessInfo.processInfo.environment

    static func env(_ name: String, _ fallback: String) -> String {
        environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback
    }

    var testDescription: String { rawValue }

    var baseURL: URL {
        switch self {
        case .glewlwyd: URL(string: Self.env("OAUTH2_TEST_GLEWLWYD_URL", "http://127.0.0.1:4593"))!
        case .dot: URL(string: Self.env("OAUTH2_TEST_DOT_URL", "http://127.0.0.1:8000"))!
        }
    }

    var issuer: URL {
        switch self {
        case .glewlwyd: URL(string: Self.env("OAUTH2_TEST_GLEWLWYD_ISSUER", "http://127.0.0.1:4593/api/oidc"))!
        case .dot: URL(string: Self.env("OAUTH2_TEST_DOT_ISSUER", "http://127.0.0.1:8000/o"))!
        }
    }

    private var prefix: String { self == .glewlwyd ? "OAUTH2_TEST_GLEWLWYD" : "OAUTH2_TEST_DOT" }

    static var redirectURI: URL { URL(string: env("OAUTH2_TEST_REDIRECT_URI", "http://127.0.0.1:9999/callback"))! }
    static var username: String { env("OAUTH2_TEST_USER", "alice") }
    static var password: String { env("OAUTH2_TEST_PASSWORD", "alice-pw") }

    /// The confidential authorization-code client.
    func confidential(_ method: ClientAuthenticationMethod? = nil, scopes: [String] = ["openid", "read"]) -> ClientConfiguration {
        ClientConfiguration(
            clientID: Self.env("\(prefix)_CONF_ID", "code-conf"),
            clientSecret: Self.env("\(prefix)_CONF_SECRET", "code-conf-secret"),
            authenticationMethod: method, redirectURI: Self.redirectURI, scopes: scopes)
    }

    /// The public (PKCE-only) authorization-code client.
    func publicClient(scopes: [String] = ["openid", "read"]) -> ClientConfiguration {
        ClientConfiguration(clientID: Self.env("\(prefix)_PUBLIC_ID", "code-public"), redirectURI: Self.redirectURI, scopes: scopes)
    }

    /// The client_credentials client.
    func clientCredentials(secret: String? = nil) -> ClientConfiguration {
        ClientConfiguration(
            clientID: Self.env("\(prefix)_CC_ID", "cc"),
            clientSecret: secret ?? Self.env("\(prefix)_CC_SECRET", "cc-secret"),
            scopes: ["read"])
    }

    /// The client allowed the password grant (Glewlwyd's confidential client; DOT's `pw`).
    func passwordClient() -> ClientConfiguration {
        switch self {
        case .glewlwyd: return confidential(scopes: ["read"])
        case .dot:
            return ClientConfiguration(
                clientID: Self.env("OAUTH2_TEST_DOT_PW_ID", "pw"), clientSecret: Self.env("OAUTH2_TEST_DOT_PW_SECRET", "pw-secret"),
                scopes: ["read"])
        }
    }

    /// Discovers the server (through a fresh cache, so each test talks to it) and records
    /// that this test ran against it.
    func client(
        _ configuration: ClientConfiguration,
        transport: TransportKind = .urlSession,
        interceptors: [any HTTPInterceptor] = [],
        logger: Logger = Logger(label: "integration")
    ) async throws -> OAuth2Client {
        let client = try await OAuth2Client(
            server: .issuer(issuer),
            configuration: configuration,
            environment: HTTPEnvironment(transport: transport.transport, interceptors: interceptors, logger: logger, metadataCache: MetadataCache()))
        IntegrationLog.record(rawValue, variant: "\(transport.rawValue)/\(configuration.authenticationMethod?.rawValue ?? "auto")")
        return client
    }

    /// Drives the browser part of an authorization-code flow as the user would, and returns
    /// the URL the server redirected the browser to.
    func authorize(_ request: AuthorizationRequest, clientID: String, browser: Browser = Browser()) async throws -> URL {
        try await authorize(url: request.url, scopes: request.scopes, clientID: clientID, browser: browser)
    }

    /// The same for an authorization URL built elsewhere (a loopback sign-in's).
    func authorize(url: URL, scopes: [String], clientID: String, browser: Browser = Browser()) async throws -> URL {
        try await logIn(clientID: clientID, scopes: scopes, browser: browser)
        switch self {
        case .glewlwyd: return try await browser.redirect(from: URL(string: url.absoluteString + "&g_continue")!)
        case .dot: return try await browser.redirect(from: url)
        }
    }

    /// Signs the test user in on the server's own pages (and, on Glewlwyd, grants the
    /// client `scopes`), leaving the session in `browser`'s cookies.
    func logIn(clientID: String, scopes: [String], browser: Browser) async throws {
        switch self {
        case .glewlwyd:
            let api = baseURL.appendingPathComponent("api")
            try await browser.json(.post, api.appendingPathComponent("auth/"), #"{"username":"\#(Self.username)","password":"\#(Self.password)"}"#)
            try await browser.json(.put, api.appendingPathComponent("auth/grant/\(clientID)"), #"{"scope":"\#(scopes.joined(separator: " "))"}"#)
        case .dot:
            let login = baseURL.appendingPathComponent("accounts/login/")
            _ = try await browser.get(login)
            let csrf = try #require(browser.cookies["csrftoken"])
            try await browser.form(login, [("csrfmiddlewaretoken", csrf), ("username", Self.username), ("password", Self.password), ("next", "/")])
            #expect(browser.cookies["sessionid"] != nil, "DOT login failed")
        }
    }

    /// The client allowed the device grant: Glewlwyd's public (or confidential) client,
    /// DOT's `device` client (public; DOT allows one grant type per client).
    func deviceConfiguration(confidential: Bool = false, scopes: [String] = ["openid", "read"]) -> ClientConfiguration {
        switch self {
        case .glewlwyd: return confidential ? self.confidential(scopes: scopes) : publicClient(scopes: scopes)
        case .dot: return ClientConfiguration(clientID: Self.env("OAUTH2_TEST_DOT_DEVICE_ID", "device"), scopes: scopes)
        }
    }

    /// A client for the device flow. DOT's discovery documents omit its device
    /// authorization endpoint, so it is added to the discovered metadata, as a user would.
    func deviceClient(_ configuration: ClientConfiguration, transport: TransportKind = .urlSession) async throws -> OAuth2Client {
        let discovered = try await client(configuration, transport: transport)
        guard self == .dot else { return discovered }
        #expect(discovered.metadata.deviceAuthorizationEndpoint == nil, "DOT now publishes its device endpoint: drop this")
        let metadata = discovered.metadata.filling(
            from: ServerMetadata(deviceAuthorizationEndpoint: issuer.appendingPathComponent("device-authorization/")))
        return try OAuth2Client(metadata: metadata, configuration: configuration, environment: HTTPEnvironment(transport: transport.transport, logger: discovered.logger))
    }

    /// The user's side of the device flow: signs in and approves (or denies) `userCode` on
    /// the server's pages, as the reference recipes do.
    func decideDevice(userCode: String, clientID: String, scopes: [String], approve: Bool = true, browser: Browser = Browser()) async throws {
        try await logIn(clientID: clientID, scopes: scopes, browser: browser)
        switch self {
        case .glewlwyd:
            try #require(approve, "Glewlwyd's API has no denial step")
            var components = URLComponents(url: baseURL.appendingPathComponent("api/oidc/device"), resolvingAgainstBaseURL: false)!
            components.queryItems = [URLQueryItem(name: "code", value: userCode), URLQueryItem(name: "g_continue", value: nil)]
            let (response, _) = try await browser.get(components.url!)
            #expect(response.headerFields[.location]?.contains("prompt=deviceComplete") == true, "Glewlwyd did not complete the device approval")
        case .dot:
            let device = issuer.appendingPathComponent("device/")
            try await browser.form(device, [("csrfmiddlewaretoken", try #require(browser.cookies["csrftoken"])), ("user_code", userCode)])
            let confirm = issuer.appendingPathComponent("device-confirm/\(clientID)/\(userCode)")
            try await browser.form(confirm, [("csrfmiddlewaretoken", try #require(browser.cookies["csrftoken"])), ("action", approve ? "accept" : "deny")])
        }
    }
}

/// The two transport adapters, so a test can run through both.
enum TransportKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case urlSession
    case asyncHTTPClient

    var testDescription: String { rawValue }

    /// One AsyncHTTPClient transport for the whole run (shut down with the process).
    static let sharedAHC = AsyncHTTPClientTransport()

    var transport: any HTTPTransport {
        switch self {
        case .urlSession: URLSessionTransport.shared
        case .asyncHTTPClient: Self.sharedAHC
        }
    }
}

extension IntegrationLog {
    /// Records that the current test ran against `server` (`variant`: which transport and
    /// client authentication, when a test runs in several).
    static func record(_ server: String, variant: String = "") {
        append(server, test: (Test.current?.id.description ?? "unknown") + (variant.isEmpty ? "" : "#" + variant))
    }
}
