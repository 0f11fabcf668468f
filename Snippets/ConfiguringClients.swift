// Making a client for a server: discovery, metadata by hand, a preset, a settings file;
// extra parameters and headers; an interceptor; another transport.

// snippet.hide
import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient

let secret = ProcessInfo.processInfo.environment["CLIENT_SECRET"] ?? ""
let issuer = URL(string: "https://login.example.com")!

// snippet.show
// snippet.metadata
// A server that publishes no discovery document: give its endpoints. (A known provider
// has a preset that knows them and its habits: `.preset(.github)`, not this.)
let legacy = try await OAuth2Client(
    server: .metadata(ServerMetadata(
        issuer: URL(string: "https://legacy.example.com")!,
        authorizationEndpoint: URL(string: "https://legacy.example.com/oauth/authorize")!,
        tokenEndpoint: URL(string: "https://legacy.example.com/oauth/token")!,
        tokenEndpointAuthMethodsSupported: ["client_secret_post"])),
    configuration: ClientConfiguration(
        clientID: "my-app", clientSecret: secret,
        redirectURI: URL(string: "http://127.0.0.1:8080/cb")!, scopes: ["read"]))
// snippet.end

// snippet.preset
// A preset: the provider's server, default scopes, client authentication and quirks.
// Your configuration wins wherever it says something.
let keycloak = try await OAuth2Client(
    server: .preset(try .keycloak(baseURL: URL(string: "https://sso.example.com")!, realm: "main")),
    configuration: ClientConfiguration(clientID: "worker", clientSecret: secret))
// snippet.end

// snippet.settings
// The library's own settings format: the RFCs' registered names.
let settings = try SettingsFile(data: Data("""
    {
      "client_id": "my-cli",
      "redirect_uris": ["http://127.0.0.1:53682/callback"],
      "scope": "openid profile offline_access",
      "issuer": "https://accounts.example.com",
      "additional_parameters": { "token": { "audience": "https://api.example.com" } }
    }
    """.utf8))
let fromFile = try await OAuth2Client(server: settings.server, configuration: settings.configuration)   // discovers: only an issuer is given
// snippet.end

// snippet.extras
var configuration = ClientConfiguration(clientID: "api-client", clientSecret: secret)
configuration.additionalParameters[.token] = ["audience": "https://api.example.com"]
configuration.additionalHeaders[.token] = [HTTPField.Name("X-Tenant")!: "acme"]
// snippet.end

// snippet.interceptor
// See or change every request before it leaves; observe every response.
struct RequestID: HTTPInterceptor {
    func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
        request.headerFields[HTTPField.Name("X-Request-ID")!] = UUID().uuidString
    }
}

// AsyncHTTPClient, trusting a private CA (or set SSL_CERT_FILE).
let tokens = try await AsyncHTTPClientTransport.withTransport(
    tls: .init(caBundlePath: "/etc/my-company/ca.pem")
) { transport in
    let client = try await OAuth2Client(
        server: .issuer(issuer),
        configuration: configuration,
        environment: HTTPEnvironment(transport: transport, interceptors: [RequestID()]))
    return try await client.clientCredentials()
}
// snippet.end
// snippet.limits
// A client whose API calls (TokenSession.perform) may read 16 MiB and take two minutes; the
// same limits then bound its token requests.
let reports = try await OAuth2Client(
    server: .issuer(issuer),
    configuration: configuration,
    environment: HTTPEnvironment(
        transport: URLSessionTransport(options: TransportOptions(maximumResponseSize: 16 << 20)),
        requestDeadline: .seconds(120)))
// snippet.end
// snippet.hide
_ = (legacy, keycloak, fromFile, tokens, reports)
