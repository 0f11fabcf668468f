#if Hummingbird
import Foundation
@testable import HummingbirdWebApp
import Testing

/// The example app's settings: the environment contract the browser tests and README rely on.
@Suite struct ExampleSettingsTests {
    @Test("Without settings: the embedded provider, 127.0.0.1:8080, openid profile email")
    func defaults() throws {
        let settings = try ExampleSettings(environment: ["OAUTH2_EXAMPLE_PORT": "", "PATH": "/bin"])
        #expect(settings.issuer == nil)
        #expect(settings.host == "127.0.0.1")
        #expect(settings.port == 8080)
        #expect(settings.publicURL == nil)
        #expect(settings.scopes == ["openid", "profile", "email"])
        #expect(settings.caFile == nil)
        #expect(settings.postgresURL == nil)
        #expect(settings.defaultPublicURL(port: 41234).absoluteString == "http://127.0.0.1:41234")
    }

    @Test("Every variable is read; an IPv6 host is bracketed in the public URL")
    func everyVariable() throws {
        let settings = try ExampleSettings(environment: [
            "OAUTH2_EXAMPLE_ISSUER": "https://id.example.com/realms/demo", "OAUTH2_EXAMPLE_CLIENT_ID": "web",
            "OAUTH2_EXAMPLE_CLIENT_SECRET": "s3cret", "OAUTH2_EXAMPLE_HOST": "::1", "OAUTH2_EXAMPLE_PORT": "0",
            "OAUTH2_EXAMPLE_PUBLIC_URL": "https://app.example.com", "OAUTH2_EXAMPLE_SCOPES": "openid  orders:read",
            "OAUTH2_EXAMPLE_CA_FILE": "/etc/ca.pem", "OAUTH2_EXAMPLE_POSTGRES_URL": "postgres://app@db.internal/app",
            "OAUTH2_EXAMPLE_POSTGRES_KEYS": "k1:AAAA", "OAUTH2_EXAMPLE_POSTGRES_SCHEMA": "web",
        ])
        #expect(settings.issuer?.absoluteString == "https://id.example.com/realms/demo")
        #expect(settings.clientID == "web")
        #expect(settings.clientSecret == "s3cret")
        #expect(settings.port == 0)
        #expect(settings.publicURL?.absoluteString == "https://app.example.com")
        #expect(settings.scopes == ["openid", "orders:read"])
        #expect(settings.caFile == "/etc/ca.pem")
        #expect(settings.defaultPublicURL(port: 8080).absoluteString == "http://[::1]:8080")
        #expect(settings.postgresURL == "postgres://app@db.internal/app")
        #expect(settings.encryptionKeys == "k1:AAAA")
        #expect(settings.postgresSchema == "web")
    }

    @Test("An issuer without a client id, a port out of range, a public URL that is not http(s), PostgreSQL without keys: refused")
    func refused() {
        for environment in [
            ["OAUTH2_EXAMPLE_ISSUER": "https://id.example.com"], ["OAUTH2_EXAMPLE_PORT": "65536"], ["OAUTH2_EXAMPLE_PORT": "http"],
            ["OAUTH2_EXAMPLE_PUBLIC_URL": "ftp://app.example.com"], ["OAUTH2_EXAMPLE_ISSUER": "not a url", "OAUTH2_EXAMPLE_CLIENT_ID": "x"],
            ["OAUTH2_EXAMPLE_POSTGRES_URL": "postgres://app@db.internal/app"],
        ] {
            #expect(throws: SettingsError.self, "\(environment)") { try ExampleSettings(environment: environment) }
        }
    }
}
#endif
