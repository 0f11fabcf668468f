import Foundation

/// The metadata a client registers with (RFC 7591 §2), sent as a JSON object to the
/// registration endpoint and, in full, to the client configuration endpoint on update
/// (RFC 7592 §2.2).
///
/// ```swift
/// var metadata = RegistrationMetadata(redirectURIs: [URL(string: "http://127.0.0.1:8400/callback")!])
/// metadata.clientName = "my tool"
/// metadata.grantTypes = ["authorization_code", "refresh_token"]
/// metadata.tokenEndpointAuthMethod = .clientSecretBasic
/// metadata.scopes = ["openid", "profile"]
/// ```
///
/// Empty lists and `nil` members are not sent. Members the library does not model
/// (`application_type`, `software_id`, a server's own) go in ``additionalMembers``; a
/// member the type models wins over an additional member of the same name.
public struct RegistrationMetadata: Sendable, Hashable {
    /// `redirect_uris`
    public var redirectURIs: [URL]
    /// `grant_types` (`authorization_code`, `refresh_token`, `client_credentials`…); the
    /// server's default (`authorization_code`) when empty.
    public var grantTypes: [String]
    /// `response_types` (`code`…); the server's default (`code`) when empty.
    public var responseTypes: [String]
    /// `token_endpoint_auth_method`; the server's default (`client_secret_basic`) when `nil`.
    public var tokenEndpointAuthMethod: ClientAuthenticationMethod?
    /// `client_name`
    public var clientName: String?
    /// `scope`, as a list (sent space-separated).
    public var scopes: [String]
    /// `jwks`: the client's public keys, by value (a JWK set object).
    public var jwks: [String: JSONValue]?
    /// `jwks_uri`: where the client's public keys are published. Not together with ``jwks``.
    public var jwksURI: URL?
    /// `contacts`
    public var contacts: [String]
    /// `logo_uri`
    public var logoURI: URL?
    /// `client_uri`
    public var clientURI: URL?
    /// `policy_uri`
    public var policyURI: URL?
    /// `tos_uri`
    public var termsOfServiceURI: URL?
    /// `software_id`
    public var softwareID: String?
    /// `software_version`
    public var softwareVersion: String?
    /// `software_statement`: a signed JWT vouching for the software (RFC 7591 §2.3). Never
    /// logged.
    public var softwareStatement: String?
    /// Any other member, sent as given.
    public var additionalMembers: [String: JSONValue]

    /// Creates metadata.
    public init(
        redirectURIs: [URL] = [],
        grantTypes: [String] = [],
        responseTypes: [String] = [],
        tokenEndpointAuthMethod: ClientAuthenticationMethod? = nil,
        clientName: String? = nil,
        scopes: [String] = [],
        jwks: [String: JSONValue]? = nil,
        jwksURI: URL? = nil,
        contacts: [String] = [],
        logoURI: URL? = nil,
        softwareStatement: String? = nil,
        additionalMembers: [String: JSONValue] = [:]
    ) {
        self.redirectURIs = redirectURIs
        self.grantTypes = grantTypes
        self.responseTypes = responseTypes
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.clientName = clientName
        self.scopes = scopes
        self.jwks = jwks
        self.jwksURI = jwksURI
        self.contacts = contacts
        self.logoURI = logoURI
        self.softwareStatement = softwareStatement
        self.additionalMembers = additionalMembers
    }

    /// The member names this type models.
    static let modelled: Set<String> = [
        "redirect_uris", "grant_types", "response_types", "token_endpoint_auth_method", "client_name", "scope",
        "jwks", "jwks_uri", "contacts", "logo_uri", "client_uri", "policy_uri", "tos_uri", "software_id",
        "software_version", "software_statement",
    ]

    /// Members of a registration response that are credentials or bookkeeping, not metadata.
    static let responseOnly: Set<String> = [
        "client_id", "client_secret", "client_id_issued_at", "client_secret_expires_at",
        "registration_access_token", "registration_client_uri",
    ]

    /// The JSON object sent to the server.
    public var members: [String: JSONValue] {
        var object = additionalMembers
        func set(_ name: String, _ value: JSONValue?) { if let value { object[name] = value } }
        func list(_ values: [String]) -> JSONValue? { values.isEmpty ? nil : .array(values.map(JSONValue.string)) }
        set("redirect_uris", list(redirectURIs.map(\.absoluteString)))
        set("grant_types", list(grantTypes))
        set("response_types", list(responseTypes))
        set("token_endpoint_auth_method", tokenEndpointAuthMethod.map { .string($0.rawValue) })
        set("client_name", clientName.map(JSONValue.string))
        set("scope", scopes.isEmpty ? nil : .string(scopes.joined(separator: " ")))
        set("jwks", jwks.map(JSONValue.object))
        set("jwks_uri", jwksURI.map { .string($0.absoluteString) })
        set("contacts", list(contacts))
        set("logo_uri", logoURI.map { .string($0.absoluteString) })
        set("client_uri", clientURI.map { .string($0.absoluteString) })
        set("policy_uri", policyURI.map { .string($0.absoluteString) })
        set("tos_uri", termsOfServiceURI.map { .string($0.absoluteString) })
        set("software_id", softwareID.map(JSONValue.string))
        set("software_version", softwareVersion.map(JSONValue.string))
        set("software_statement", softwareStatement.map(JSONValue.string))
        return object
    }

    /// Checks what can be checked before sending: absolute redirect URIs without a fragment
    /// (RFC 6749 §3.1.2), not both `jwks` and `jwks_uri` (RFC 7591 §2), no credential
    /// members (`client_id`, `client_secret`, `registration_access_token`…) among
    /// ``additionalMembers``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidClientMetadata`` or
    ///   ``OAuth2Error/Code/invalidRedirectURI`` (source ``OAuth2Error/Source/client``).
    public func validate() throws(OAuth2Error) {
        for uri in redirectURIs where uri.scheme == nil || uri.fragment != nil {
            throw .client(.invalidRedirectURI, "A redirect URI must be absolute and have no fragment.")
        }
        if jwks != nil, jwksURI != nil {
            throw .client(.invalidClientMetadata, "jwks and jwks_uri cannot both be registered (RFC 7591 §2).")
        }
        if let name = additionalMembers.keys.sorted().first(where: Self.responseOnly.contains) {
            throw .client(.invalidClientMetadata, "\(name) is not client metadata: the server issues it.")
        }
    }

    /// Reads metadata from a registration response's members: modelled members of the
    /// expected type; everything else but the credentials in ``additionalMembers``.
    ///
    /// Lenient where a real server deviates: Glewlwyd 2.7.5 answers a read (RFC 7592 §2.1)
    /// with `token_endpoint_auth_method` as an array of one method, which is read as that
    /// method. A modelled member of another type is an ``OAuth2Error/Code/invalidResponse``.
    static func parse(_ members: [String: JSONValue]) throws(OAuth2Error) -> RegistrationMetadata {
        let reader = Reader(members: members)
        var metadata = RegistrationMetadata()
        metadata.redirectURIs = try reader.urls("redirect_uris")
        metadata.grantTypes = try reader.strings("grant_types")
        metadata.responseTypes = try reader.strings("response_types")
        switch members["token_endpoint_auth_method"] {
        case .array(let values)? where values.count == 1 && values[0].stringValue != nil:
            metadata.tokenEndpointAuthMethod = values[0].stringValue.map(ClientAuthenticationMethod.init(rawValue:))
        default:
            metadata.tokenEndpointAuthMethod = try reader.string("token_endpoint_auth_method").map(ClientAuthenticationMethod.init(rawValue:))
        }
        metadata.clientName = try reader.string("client_name")
        metadata.scopes = try reader.string("scope").map { $0.split(separator: " ").map(String.init) } ?? []
        switch members["jwks"] {
        case nil, .null?: break
        case .object(let object)?: metadata.jwks = object
        default: throw .invalidResponse("The registration's jwks is not an object.")
        }
        metadata.jwksURI = try reader.url("jwks_uri")
        metadata.contacts = try reader.strings("contacts")
        metadata.logoURI = try reader.url("logo_uri")
        metadata.clientURI = try reader.url("client_uri")
        metadata.policyURI = try reader.url("policy_uri")
        metadata.termsOfServiceURI = try reader.url("tos_uri")
        metadata.softwareID = try reader.string("software_id")
        metadata.softwareVersion = try reader.string("software_version")
        metadata.softwareStatement = try reader.string("software_statement")
        metadata.additionalMembers = members.filter { !modelled.contains($0.key) && !responseOnly.contains($0.key) }
        return metadata
    }

    /// Typed access to a response's members; a `null` member counts as absent.
    struct Reader {
        let members: [String: JSONValue]

        func string(_ name: String) throws(OAuth2Error) -> String? {
            switch members[name] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw .invalidResponse("The registration's \(name) is not a string.")
            }
        }

        func strings(_ name: String) throws(OAuth2Error) -> [String] {
            switch members[name] {
            case nil, .null?: return []
            case .array(let values)?:
                var strings: [String] = []
                for value in values {
                    guard let string = value.stringValue else { throw .invalidResponse("The registration's \(name) holds a non-string.") }
                    strings.append(string)
                }
                return strings
            default: throw .invalidResponse("The registration's \(name) is not an array.")
            }
        }

        func url(_ name: String) throws(OAuth2Error) -> URL? {
            guard let text = try string(name), !text.isEmpty else { return nil }
            guard let url = URL(string: text), url.scheme != nil else { throw .invalidResponse("The registration's \(name) is not a URL.") }
            return url
        }

        func urls(_ name: String) throws(OAuth2Error) -> [URL] {
            var urls: [URL] = []
            for text in try strings(name) {
                guard let url = URL(string: text), url.scheme != nil else { throw .invalidResponse("The registration's \(name) holds a non-URL.") }
                urls.append(url)
            }
            return urls
        }

        /// A date in seconds since 1970, as a number or a numeric string.
        func date(_ name: String) throws(OAuth2Error) -> Date? {
            guard let value = members[name], value != .null else { return nil }
            guard let seconds = ResponseParsing.number(value), seconds >= 0, seconds < 1e11 else {
                throw .invalidResponse("The registration's \(name) is not a time in seconds.")
            }
            return Date(timeIntervalSince1970: seconds)
        }
    }
}
