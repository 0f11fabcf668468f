import Foundation
import HTTPTypes

// The library's own settings format: RFC 7591 client metadata names, RFC 8414 / OpenID
// Connect Discovery server metadata names, and four keys of the library's.

extension ClientSettings {
    static let ownClientKeys: Set<String> = [
        "client_id", "client_secret", "token_endpoint_auth_method", "redirect_uris", "post_logout_redirect_uris",
        "scope", "client_name",
    ]
    static let ownServerKeys: Set<String> = Set(ServerMetadata.knownFields.keys)
    static let ownLibraryKeys: Set<String> = ["additional_parameters", "additional_headers", "quirks", "provider"]

    /// Every key of the library's format.
    static let ownKeys: Set<String> = ownClientKeys.union(ownServerKeys).union(ownLibraryKeys)

    /// Keys of the library's format that neither p2 nor OktaOidc uses.
    static let ownOnlyKeys: Set<String> = ownServerKeys.union(ownLibraryKeys)
        .union(["token_endpoint_auth_method", "post_logout_redirect_uris"]).subtracting(["issuer"])

    static func readOwnFormat(_ reader: SettingsReader) throws(OAuth2Error) -> ClientSettings {
        try reader.rejectUnknownKeys(known: ownKeys) { key in
            oktaKeys.contains(key) ? "It is a key of OktaOidc's format, which cannot be mixed with others." : nil
        }
        let redirectURIs = try reader.urls("redirect_uris") ?? []
        var configuration = ClientConfiguration(
            clientID: try reader.requiredString("client_id"),
            clientSecret: try reader.string("client_secret"),
            authenticationMethod: try reader.string("token_endpoint_auth_method").map(ClientAuthenticationMethod.init(rawValue:)),
            redirectURI: redirectURIs.first,
            scopes: try reader.scopes("scope", allowArray: true) ?? []
        )
        configuration.additionalParameters = try perKind(reader, "additional_parameters") { values, _ in values }
        configuration.additionalHeaders = try perKind(reader, "additional_headers") { values, key throws(OAuth2Error) in
            var fields = HTTPFields()
            for (name, value) in values.sorted(by: { $0.key < $1.key }) {
                guard let fieldName = HTTPField.Name(name) else {
                    throw invalid("\(quoted("\(key).\(name)")) is not a valid header name.")
                }
                fields[fieldName] = value
            }
            return fields
        }
        for name in try reader.strings("quirks") ?? [] {
            guard let quirk = ServerQuirks(name: name) else {
                throw invalid(
                    "\(quoted(name)) in \(quoted("quirks")) is not a quirk; known: \(ServerQuirks.named.map(\.name).joined(separator: ", ")).")
            }
            configuration.quirks.insert(quirk)
        }

        let serverKeys = reader.keys.intersection(ownServerKeys)
        let server: AuthorizationServer
        var provider: String?
        if let value = reader.values["provider"] {
            if let key = serverKeys.sorted().first {
                throw invalid("\(quoted(key)) cannot be given with \(quoted("provider")), which names the server already.")
            }
            let preset = try Self.preset(from: value)
            configuration = preset.applied(to: configuration)
            server = preset.server
            provider = preset.name
        } else {
            server = try Self.server(reader, keys: serverKeys)
        }
        return ClientSettings(
            format: .swiftOAuth2,
            configuration: configuration,
            server: server,
            redirectURIs: redirectURIs,
            postLogoutRedirectURI: try reader.urls("post_logout_redirect_uris")?.first,
            clientName: try reader.string("client_name"),
            provider: provider
        )
    }

    /// `issuer` alone: discovery. Any other metadata member: the metadata as given.
    private static func server(_ reader: SettingsReader, keys: Set<String>) throws(OAuth2Error) -> AuthorizationServer {
        guard !keys.isEmpty else {
            throw invalid(
                "swift-oauth2 settings need a server: \(quoted("issuer")), endpoints such as \(quoted("token_endpoint")), or \(quoted("provider")).")
        }
        if keys == ["issuer"] {
            return .issuer(try requiredURL(reader, "issuer", endpoint: true))
        }
        var fields: [String: JSONValue] = [:]
        for key in keys {
            if ServerMetadata.knownFields[key] == .url { _ = try reader.url(key, endpoint: true) }
            fields[key] = reader.values[key]
        }
        do {
            return .metadata(try ServerMetadata(fields: fields))
        } catch {
            throw invalid(error.message ?? "The server metadata in the settings is not valid.")
        }
    }

    /// An object keyed by ``RequestKind`` raw value whose values are string dictionaries.
    private static func perKind<Value>(
        _ reader: SettingsReader,
        _ key: String,
        _ transform: ([String: String], String) throws(OAuth2Error) -> Value
    ) throws(OAuth2Error) -> [RequestKind: Value] {
        guard let value = reader.values[key] else { return [:] }
        guard let object = value.objectValue else {
            throw reader.typeError(key, "an object keyed by request kind (authorization, token…)")
        }
        let nested = SettingsReader(values: object, format: reader.format, prefix: key + ".")
        var result: [RequestKind: Value] = [:]
        for name in object.keys.sorted() {
            guard let kind = RequestKind(rawValue: name) else {
                throw invalid(
                    "\(quoted("\(key).\(name)")) is not a request kind; known: \(RequestKind.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            result[kind] = try transform(try nested.stringMap(name) ?? [:], "\(key).\(name)")
        }
        return result
    }

    /// A ``ProviderPreset`` from `"github"` or `{"name": "keycloak", "base_url": …, "realm": …}`.
    static func preset(from value: JSONValue) throws(OAuth2Error) -> ProviderPreset {
        let object: [String: JSONValue]
        if let name = value.stringValue {
            object = ["name": .string(name)]
        } else if let members = value.objectValue {
            object = members
        } else {
            throw invalid("\(quoted("provider")) must be a provider name or an object with a \(quoted("name")).")
        }
        let reader = SettingsReader(values: object, format: .swiftOAuth2, prefix: "provider.")
        let name = try reader.requiredString("name")
        func arguments(_ known: Set<String>) throws(OAuth2Error) {
            try reader.rejectUnknownKeys(known: known.union(["name"])) { _ in "The \(name) provider takes: \(known.isEmpty ? "no arguments" : known.sorted().joined(separator: ", "))." }
        }
        switch name {
        case "github":
            try arguments(["enterprise_server"])
            guard let server = try reader.url("enterprise_server", endpoint: true) else { return .github }
            return try .github(enterpriseServer: server)
        case "google":
            try arguments([])
            return .google
        case "microsoft":
            try arguments(["tenant", "authority"])
            let authority = try reader.url("authority", endpoint: true) ?? URL(string: "https://login.microsoftonline.com")!
            return try .microsoft(tenant: try reader.requiredString("tenant"), authority: authority)
        case "okta":
            try arguments(["domain", "authorization_server_id"])
            // Absent: the "default" custom authorization server; null: the org server.
            var serverID: String? = "default"
            if object["authorization_server_id"] == .null {
                serverID = nil
            } else if let id = try reader.string("authorization_server_id") {
                serverID = id
            }
            return try .okta(domain: try reader.requiredString("domain"), authorizationServerID: serverID)
        case "auth0":
            try arguments(["domain", "audience"])
            return try .auth0(domain: try reader.requiredString("domain"), audience: try reader.string("audience"))
        case "keycloak":
            try arguments(["base_url", "realm"])
            guard let base = try reader.url("base_url", endpoint: true) else {
                throw invalid("The keycloak provider needs \(quoted("provider.base_url")).")
            }
            return try .keycloak(baseURL: base, realm: try reader.requiredString("realm"))
        case "gitlab":
            try arguments(["base_url"])
            guard let base = try reader.url("base_url", endpoint: true) else { return try .gitlab() }
            return try .gitlab(baseURL: base)
        case "facebook":
            try arguments(["graph_api_version"])
            guard let version = try reader.string("graph_api_version") else { return .facebook }
            return try .facebook(graphAPIVersion: version)
        case "reddit":
            try arguments([])
            return .reddit
        case "linkedin":
            try arguments([])
            return .linkedIn
        default:
            throw invalid(
                "\(quoted(name)) is not a known provider; known: \(ProviderPreset.knownNames.joined(separator: ", ")).")
        }
    }
}
