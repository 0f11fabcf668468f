#if Hummingbird
import Foundation

/// The example app's settings, read from its environment (see HummingbirdWebApp.swift).
struct ExampleSettings: Sendable {
    /// The provider's issuer; `nil`: the embedded test provider.
    var issuer: URL?
    /// The client id at ``issuer``.
    var clientID: String?
    /// The client's secret at ``issuer``.
    var clientSecret: String?
    /// The address to listen on.
    var host = "127.0.0.1"
    /// The port to listen on; 0: any free port.
    var port = 8080
    /// The app's address as browsers reach it; `nil`: `http://host:port` with the real port.
    var publicURL: URL?
    /// The scopes of a sign-in.
    var scopes = ["openid", "profile", "email"]
    /// A PEM file of the certificate authorities to trust for the provider.
    var caFile: String?
    /// The audiences that name the bearer API: a token whose introspection answer has an
    /// `aud` must name one.
    var apiAudiences: Set<String> = []
    /// The clients the bearer API serves: a token whose introspection answer has no `aud`
    /// (django-oauth-toolkit's) must have been issued to one.
    var apiClientIDs: Set<String> = []
    /// A `postgres://` URL: browser sessions, pending sign-ins, tokens and logout tokens'
    /// `jti`s are kept there, shared by every replica of the app; `nil`: in memory.
    var postgresURL: String?
    /// The keys that encrypt the PostgreSQL rows (`PostgresTokenStore.EncryptionKeys(parsing:)`).
    var encryptionKeys: String?
    /// The PostgreSQL schema of the app's tables (several apps can share a database).
    var postgresSchema = "oauth2"

    /// Settings with every default: the embedded provider, 127.0.0.1:8080.
    init() {}

    /// The settings of `environment`'s `OAUTH2_EXAMPLE_*` variables; an empty one counts as unset.
    ///
    /// - Throws: ``SettingsError`` for a malformed value, or an issuer without a client id.
    init(environment: [String: String]) throws {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        if let text = value("OAUTH2_EXAMPLE_ISSUER") {
            guard let url = URL(string: text), url.scheme != nil else { throw SettingsError("OAUTH2_EXAMPLE_ISSUER is not a URL") }
            issuer = url
            guard let id = value("OAUTH2_EXAMPLE_CLIENT_ID") else { throw SettingsError("OAUTH2_EXAMPLE_ISSUER needs OAUTH2_EXAMPLE_CLIENT_ID") }
            clientID = id
            clientSecret = value("OAUTH2_EXAMPLE_CLIENT_SECRET")
        }
        if let text = value("OAUTH2_EXAMPLE_HOST") { host = text }
        if let text = value("OAUTH2_EXAMPLE_PORT") {
            guard let number = Int(text), (0...65535).contains(number) else { throw SettingsError("OAUTH2_EXAMPLE_PORT is not a port number") }
            port = number
        }
        if let text = value("OAUTH2_EXAMPLE_PUBLIC_URL") {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw SettingsError("OAUTH2_EXAMPLE_PUBLIC_URL is not an http(s) URL")
            }
            publicURL = url
        }
        if let text = value("OAUTH2_EXAMPLE_SCOPES") { scopes = text.split(separator: " ").map(String.init) }
        caFile = value("OAUTH2_EXAMPLE_CA_FILE")
        if let text = value("OAUTH2_EXAMPLE_API_AUDIENCES") { apiAudiences = Set(text.split(separator: " ").map(String.init)) }
        if let text = value("OAUTH2_EXAMPLE_API_CLIENT_IDS") { apiClientIDs = Set(text.split(separator: " ").map(String.init)) }
        postgresURL = value("OAUTH2_EXAMPLE_POSTGRES_URL")
        encryptionKeys = value("OAUTH2_EXAMPLE_POSTGRES_KEYS")
        if let text = value("OAUTH2_EXAMPLE_POSTGRES_SCHEMA") { postgresSchema = text }
        if postgresURL != nil, encryptionKeys == nil {
            throw SettingsError("OAUTH2_EXAMPLE_POSTGRES_URL needs OAUTH2_EXAMPLE_POSTGRES_KEYS (the keys that encrypt the rows)")
        }
    }

    /// `http://host:port`, the host in brackets when it is an IPv6 address.
    func defaultPublicURL(port: Int) -> URL {
        let shown = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return URL(string: "http://\(shown):\(port)")!
    }
}

/// A setting the app cannot run with.
struct SettingsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
