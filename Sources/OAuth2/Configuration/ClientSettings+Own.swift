import Foundation
import HTTPTypes

// The library's own settings format: RFC 7591 client metadata names, RFC 8414 / OpenID
// Connect Discovery server metadata names, and four keys of the library's.

extension SettingsFile {
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

    static func readOwnFormat(_ reader: SettingsReader) throws(OAuth2Error) -> SettingsFile {
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
        return SettingsFile(
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
        guard let name = object["name"]?.stringValue else {
            throw invalid("\(quoted("provider.name")) is missing or not a string.")
        }
        var arguments: [String: String?] = [:]
        for (key, value) in object where key != "name" {
            switch value {
            case .null: arguments[key] = .some(nil)
            case .string(let text): arguments[key] = text
            default: throw invalid("\(quoted("provider.\(key)")) must be a string.")
            }
        }
        do {
            return try ProviderPreset.named(name, arguments: arguments)
        } catch {
            throw invalid(error.message ?? "The provider \(quoted(name)) is not usable.")
        }
    }
}
