import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Testing
import Testing

/// Shared setup for the provider's own tests: the library's client, pointed at a provider.
enum Fixture {
    static let redirectURI = URL(string: "http://127.0.0.1:53682/callback")!

    /// The library's other transport, for the cases the URLSession one cannot finish on Linux
    /// with Swift 6.3.1's Foundation: a 401 with `WWW-Authenticate: Basic` never completes
    /// (swift-corelibs-foundation #5456), and a connection closed after a POST on a reused
    /// connection ends only at the request timeout. Never shut down: it lives as long as the
    /// test process.
    static let asyncHTTPClient = AsyncHTTPClientTransport()

    /// The demo public client (authorization code, refresh, device).
    static func publicClient(
        _ provider: TestProvider, scopes: [String] = ["openid", "profile", "email", "offline_access"]
    ) async throws -> OAuth2Client {
        try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(clientID: TestProvider.Demo.publicClientID, redirectURI: redirectURI, scopes: scopes),
            environment: HTTPEnvironment(metadataCache: MetadataCache()))
    }

    /// The demo confidential client, authenticating with `method`.
    static func confidentialClient(
        _ provider: TestProvider, method: ClientAuthenticationMethod = .clientSecretBasic,
        secret: String = TestProvider.Demo.confidentialClientSecret,
        scopes: [String] = ["openid", "profile", "email", "offline_access"],
        transport: any HTTPTransport = URLSessionTransport.shared
    ) async throws -> OAuth2Client {
        try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(
                clientID: TestProvider.Demo.confidentialClientID, clientSecret: secret, authenticationMethod: method,
                redirectURI: redirectURI, scopes: scopes),
            environment: HTTPEnvironment(transport: transport, metadataCache: MetadataCache()))
    }

    /// A full authorization code sign-in through the provider's browser stand-in.
    static func signIn(_ client: OAuth2Client, _ provider: TestProvider, options: AuthorizationOptions = AuthorizationOptions())
        async throws -> TokenSet
    {
        let request = try client.authorizationRequest(options)
        let callback = try await provider.followRedirect(from: request.url)
        return try await client.completeAuthorization(callbackURL: callback, request: request)
    }

    /// The query parameters of a URL.
    static func query(_ url: URL) -> [String: String] {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    /// Runs `body` and returns the `OAuth2Error` it throws (recording an issue if it throws
    /// nothing or something else).
    static func oauthError(_ body: () async throws -> Void) async -> OAuth2Error? {
        do {
            try await body()
            Issue.record("expected an OAuth2Error, got success")
            return nil
        } catch let error as OAuth2Error {
            return error
        } catch {
            Issue.record("expected an OAuth2Error, got \(error)")
            return nil
        }
    }

    /// Runs `body` and returns the `TestProviderError` it throws (recording an issue if it
    /// throws nothing or something else).
    static func providerError(_ body: () async throws -> Void) async -> TestProviderError? {
        do {
            try await body()
            Issue.record("expected a TestProviderError, got success")
            return nil
        } catch let error as TestProviderError {
            return error
        } catch {
            Issue.record("expected a TestProviderError, got \(error)")
            return nil
        }
    }

    /// A raw request to the provider, for what the library's client would never send.
    static func send(
        _ method: HTTPRequest.Method, _ url: URL, form: [(String, String)]? = nil, headers: HTTPFields = [:]
    ) async throws -> (HTTPResponse, Data) {
        var request = HTTPRequest(method: method, url: url)
        request.headerFields = headers
        var body: Data?
        if let form {
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            body = Data(encode(form).utf8)
        }
        return try await transport.send(request, body: body)
    }

    static let transport = URLSessionTransport()

    /// `name=value&…`, percent-encoded but for the unreserved characters.
    static func encode(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        allowed.insert(charactersIn: "-._~")
        func escape(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text }
        return pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    /// The members of a JSON object body.
    static func json(_ data: Data) -> [String: JSONValue] {
        (try? JSONDecoder().decode([String: JSONValue].self, from: data)) ?? [:]
    }
}
