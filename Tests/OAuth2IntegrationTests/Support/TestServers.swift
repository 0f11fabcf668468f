import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2AsyncHTTPClient
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
        let client = try await OAuth2Client.discover(
            issuer: issuer, configuration: configuration, transport: transport.transport, interceptors: interceptors,
            logger: logger, cache: MetadataCache())
        IntegrationLog.record(rawValue, variant: "\(transport.rawValue)/\(configuration.authenticationMethod?.rawValue ?? "auto")")
        return client
    }

    /// Drives the browser part of an authorization-code flow as the user would, and returns
    /// the URL the server redirected the browser to.
    func authorize(_ request: AuthorizationRequest, clientID: String, browser: Browser = Browser()) async throws -> URL {
        switch self {
        case .glewlwyd:
            let api = baseURL.appendingPathComponent("api")
            try await browser.json(.post, api.appendingPathComponent("auth/"), #"{"username":"\#(Self.username)","password":"\#(Self.password)"}"#)
            try await browser.json(.put, api.appendingPathComponent("auth/grant/\(clientID)"), #"{"scope":"\#(request.scopes.joined(separator: " "))"}"#)
            return try await browser.redirect(from: URL(string: request.url.absoluteString + "&g_continue")!)
        case .dot:
            let login = baseURL.appendingPathComponent("accounts/login/")
            _ = try await browser.get(login)
            let csrf = try #require(browser.cookies["csrftoken"])
            try await browser.form(login, [("csrfmiddlewaretoken", csrf), ("username", Self.username), ("password", Self.password), ("next", "/")])
            #expect(browser.cookies["sessionid"] != nil, "DOT login failed")
            return try await browser.redirect(from: request.url)
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

/// Appends `<server> <test>` to `$OAUTH2_INTEGRATION_LOG`, which `scripts/test` counts.
enum IntegrationLog {
    private static let lock = NSLock()

    static func record(_ server: String, variant: String = "") {
        guard let path = ProcessInfo.processInfo.environment["OAUTH2_INTEGRATION_LOG"], !path.isEmpty else { return }
        var test = Test.current?.id.description ?? "unknown"
        if !variant.isEmpty { test += "#" + variant }
        let line = "\(server) \(test.filter { !$0.isWhitespace })\n"
        lock.withLock {
            if let handle = FileHandle(forWritingAtPath: path) {
                handle.seekToEndOfFile()
                handle.write(Data(line.utf8))
                try? handle.close()
            } else {
                _ = FileManager.default.createFile(atPath: path, contents: Data(line.utf8))
            }
        }
    }
}
