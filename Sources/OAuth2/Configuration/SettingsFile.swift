import Foundation

/// A client's settings as a file holds them — JSON or a property list — in one of three
/// formats: the library's own, p2/OAuth2's settings dictionary, or OktaOidc's `Okta.plist`.
///
/// Settings give a ``ClientConfiguration`` and an ``AuthorizationServer`` (endpoints, or an
/// issuer to discover), plus what some formats carry besides (a post-logout redirect URI,
/// p2's `token_assume_unexpired`). ``OAuth2Client/init(server:configuration:environment:)``
/// builds a client from them.
///
/// ```swift
/// let settings = try SettingsFile(contentsOf: URL(fileURLWithPath: "Okta.plist"))
/// let client = try await OAuth2Client(server: settings.server, configuration: settings.configuration)
/// ```
///
/// ## The library's format
///
/// Keys are the registered names of the RFCs: client metadata from RFC 7591, server
/// metadata from RFC 8414 and OpenID Connect Discovery. Nothing else is accepted.
///
/// ```json
/// {
///   "client_id": "my-cli",
///   "client_secret": "…",
///   "token_endpoint_auth_method": "client_secret_post",
///   "redirect_uris": ["http://127.0.0.1:53682/callback"],
///   "post_logout_redirect_uris": ["http://127.0.0.1:53682/signed-out"],
///   "scope": "openid profile offline_access",
///   "issuer": "https://accounts.example.com"
/// }
/// ```
///
/// - Client: `client_id` (required), `client_secret`, `token_endpoint_auth_method`,
///   `redirect_uris` (the first is used), `post_logout_redirect_uris`, `scope` (a
///   space-separated string or an array), `client_name`.
/// - Server: `issuer` alone is discovered; any server metadata member
///   (`authorization_endpoint`, `token_endpoint`, `revocation_endpoint`,
///   `device_authorization_endpoint`, `token_endpoint_auth_methods_supported`…) makes the
///   settings carry the metadata as given, with `issuer` as its issuer. Instead of a
///   server, `provider` names a ``ProviderPreset``: `"github"`, or an object with the
///   preset's arguments — `{"name": "microsoft", "tenant": "…"}`,
///   `{"name": "keycloak", "base_url": "…", "realm": "…"}` (see ``ProviderPreset/knownNames``).
/// - Library: `additional_parameters` and `additional_headers` (objects keyed by
///   ``RequestKind`` raw value: `{"token": {"audience": "…"}}`), `quirks` (an array of
///   ``ServerQuirks`` names).
///
/// ## p2/OAuth2's format
///
/// `client_id`, `client_secret`, `authorize_uri`, `token_uri` (p2 falls back to
/// `authorize_uri`), `refresh_uri` (only when equal to `token_uri`), `registration_uri`,
/// `device_authorize_uri`, `redirect_uris`, `scope`, `client_name`, `secret_in_body`
/// (`client_secret_post`; else `client_secret_basic` with a secret, `none` without, and
/// p2's `"client_secret": ""` is Basic with an empty password),
/// `parameters` (added to authorization, token and device requests, as p2 does), `headers`
/// (added to token and device requests), `token_assume_unexpired`, `device_id` (Reddit's
/// installed-client grant; added to token requests). p2's Apple-only keys (`keychain…`,
/// `verbose`, `title`, `logo_uri`) and `use_pkce` (PKCE is always on here) are accepted
/// and listed in ``ignoredKeys``.
///
/// ## OktaOidc's format
///
/// `issuer`, `clientId`, `redirectUri`, `scopes` (required, as OktaOidc requires them),
/// `logoutRedirectUri`; every other key is an extra authorization parameter
/// (`login_hint`, `idp`…), as OktaOidc passes them — except a key that names a secret or a
/// password, which is refused rather than put in a URL. All values are strings.
///
/// In the library's and p2's formats an unknown key is an error that names it.
public struct SettingsFile: Sendable, Decodable, CustomStringConvertible {
    /// The three formats settings can be written in.
    public enum Format: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// The library's own: the RFCs' registered names.
        case swiftOAuth2 = "swift-oauth2"
        /// p2/OAuth2's settings dictionary.
        case p2 = "p2"
        /// OktaOidc's `Okta.plist`.
        case oktaOIDC = "okta-oidc"

        /// A readable name of the format.
        public var description: String {
            switch self {
            case .swiftOAuth2: return "swift-oauth2"
            case .p2: return "p2/OAuth2"
            case .oktaOIDC: return "OktaOidc"
            }
        }
    }

    /// The format the settings were read in.
    public var format: Format
    /// The client's configuration.
    public var configuration: ClientConfiguration
    /// The authorization server: an issuer to discover, or the endpoints the settings give.
    public var server: AuthorizationServer
    /// Every redirect URI the settings name; ``ClientConfiguration/redirectURI`` is the
    /// first.
    public var redirectURIs: [URL]
    /// Where the provider sends the browser after a logout (OktaOidc's
    /// `logoutRedirectUri`, the first of `post_logout_redirect_uris`).
    public var postLogoutRedirectURI: URL?
    /// The client's human-readable name (`client_name`).
    public var clientName: String?
    /// Whether a stored access token without an expiry may be used as if it were valid
    /// (p2's `token_assume_unexpired`, `true` by default as in p2). Read from the file and
    /// kept for your own code: no ``TokenSession`` reads it. A session always uses a token
    /// without an expiry (and not a JWT with `exp`) until the server refuses it, then
    /// renews it once (``TokenSession/perform(_:body:)``).
    public var assumesTokensWithoutExpiryAreValid: Bool
    /// The ``ProviderPreset/name`` of the provider the settings named, if any.
    public var provider: String?
    /// Keys the format defines that have no effect here (p2's keychain settings…), sorted.
    public var ignoredKeys: [String]

    /// Creates settings from their parts.
    public init(
        format: Format = .swiftOAuth2,
        configuration: ClientConfiguration,
        server: AuthorizationServer,
        redirectURIs: [URL] = [],
        postLogoutRedirectURI: URL? = nil,
        clientName: String? = nil,
        assumesTokensWithoutExpiryAreValid: Bool = true,
        provider: String? = nil,
        ignoredKeys: [String] = []
    ) {
        self.format = format
        self.configuration = configuration
        self.server = server
        self.redirectURIs = redirectURIs
        self.postLogoutRedirectURI = postLogoutRedirectURI
        self.clientName = clientName
        self.assumesTokensWithoutExpiryAreValid = assumesTokensWithoutExpiryAreValid
        self.provider = provider
        self.ignoredKeys = ignoredKeys
    }

    /// Reads settings from a JSON or property-list file (told apart by content).
    ///
    /// - Parameters:
    ///   - url: the file to read.
    ///   - format: the format, or `nil` to tell it from the keys (OktaOidc's
    ///     camel-case keys; p2's `authorize_uri`, `token_uri`, `secret_in_body`…; the RFCs'
    ///     `issuer`, `token_endpoint`…).
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the file cannot be read or
    ///   parsed, has an unknown key (naming it), lacks a required one, or holds a value of
    ///   the wrong type; ``OAuth2Error/Code/insecureEndpoint`` for an endpoint that is
    ///   neither HTTPS nor on a loopback host. No message contains a value from the file.
    public init(contentsOf url: URL, format: Format? = nil) throws(OAuth2Error) {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw OAuth2Error(
                .invalidConfiguration, source: .client,
                message: "The settings file \(url.isFileURL ? url.path : Redactor.url(url)) cannot be read.",
                underlyingError: error)
        }
        try self.init(data: data, format: format)
    }

    /// Reads settings from JSON or property-list data (told apart by content).
    ///
    /// - Throws: what ``init(contentsOf:format:)`` throws.
    public init(data: Data, format: Format? = nil) throws(OAuth2Error) {
        try self.init(values: try Self.parse(data), format: format)
    }

    /// Reads settings from their values, as decoded from a file.
    ///
    /// - Throws: what ``init(contentsOf:format:)`` throws.
    public init(values: [String: JSONValue], format: Format? = nil) throws(OAuth2Error) {
        let detected: Format
        if let format { detected = format } else { detected = try Self.detectFormat(of: values) }
        let reader = SettingsReader(values: values.filter { $0.value != .null }, format: detected)
        switch detected {
        case .swiftOAuth2: self = try Self.readOwnFormat(reader)
        case .p2: self = try Self.readP2(reader)
        case .oktaOIDC: self = try Self.readOkta(reader)
        }
        try configuration.validate()
    }

    /// The `userInfo` key a decoder can carry to name the ``Format`` (a ``Format`` value);
    /// without it the format is told from the keys.
    public static let formatUserInfoKey = CodingUserInfoKey(rawValue: "swift-oauth2.settings-format")!

    /// Decodes settings with any decoder (`JSONDecoder`, `PropertyListDecoder`).
    ///
    /// - Throws: the ``OAuth2Error`` that ``init(values:format:)`` throws, or the decoder's
    ///   error when the value is not a dictionary of JSON-like values.
    public init(from decoder: any Decoder) throws {
        let values = try [String: JSONValue](from: decoder)
        try self.init(values: values, format: decoder.userInfo[Self.formatUserInfoKey] as? Format)
    }

    /// The format `values` are written in: OktaOidc's when a key is one of its camel-case
    /// ones, p2's when a key is one only p2 uses, else the library's.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the keys mix OktaOidc's
    ///   format with another.
    public static func detectFormat(of values: [String: JSONValue]) throws(OAuth2Error) -> Format {
        let keys = Set(values.keys)
        let okta = keys.intersection(["clientId", "redirectUri", "logoutRedirectUri", "scopes"])
        if let oktaKey = okta.sorted().first {
            if let other = keys.intersection(p2OnlyKeys.union(ownOnlyKeys).union(["client_id"])).sorted().first {
                throw invalid("The settings mix OktaOidc's key \(quoted(oktaKey)) with \(quoted(other)), which OktaOidc does not use.")
            }
            return .oktaOIDC
        }
        if !keys.isDisjoint(with: p2OnlyKeys) { return .p2 }
        return .swiftOAuth2
    }

    /// The format, the configuration (without its secret) and the server.
    public var description: String {
        "SettingsFile(\(format): \(configuration), server: \(server))"
    }

    // MARK: - Parsing

    static func parse(_ data: Data) throws(OAuth2Error) -> [String: JSONValue] {
        var bytes = data[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let first = bytes.first(where: { !" \t\r\n".utf8.contains($0) })
        if first == UInt8(ascii: "{") {
            do {
                return try JSONDecoder().decode([String: JSONValue].self, from: Data(bytes))
            } catch {
                throw invalid("The settings are not valid JSON\(location(of: error)).")
            }
        }
        if first == UInt8(ascii: "<") || bytes.starts(with: Array("bplist".utf8)) {
            do {
                return try PropertyListDecoder().decode([String: JSONValue].self, from: Data(bytes))
            } catch let error as DecodingError {
                if case .typeMismatch(_, let context) = error, !context.codingPath.isEmpty {
                    throw invalid(
                        "The property list has a value settings do not use (a date or data) at \(quoted(path(context.codingPath))).")
                }
                throw invalid("The settings are not a property list with a dictionary at its root.")
            } catch {
                throw invalid("The settings are not a property list with a dictionary at its root.")
            }
        }
        throw invalid("The settings are neither a JSON object nor a property list.")
    }

    private static func location(of error: any Error) -> String {
        guard let error = error as? DecodingError else { return "" }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "" : " (at \(quoted(path(context.codingPath))))"
        @unknown default:
            return ""
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    // MARK: - Errors

    static func invalid(_ message: String) -> OAuth2Error {
        OAuth2Error(.invalidConfiguration, source: .client, message: message)
    }

    /// A key from a file, quoted for a message (control characters removed, length bounded).
    static func quoted(_ key: String) -> String {
        "“\(Redactor.sanitizeServerText(key, limit: 80))”"
    }
}

/// Typed reading of settings values: every error names the key and never shows a value.
struct SettingsReader {
    let values: [String: JSONValue]
    let format: SettingsFile.Format
    /// Put before every key in messages (`provider.` for a nested object).
    var prefix = ""

    init(values: [String: JSONValue], format: SettingsFile.Format, prefix: String = "") {
        self.values = values
        self.format = format
        self.prefix = prefix
    }

    /// The key as messages show it.
    func display(_ key: String) -> String { SettingsFile.quoted(prefix + key) }

    var keys: Set<String> { Set(values.keys) }

    func has(_ key: String) -> Bool { values[key] != nil }

    func string(_ key: String) throws(OAuth2Error) -> String? {
        guard let value = values[key] else { return nil }
        guard let text = value.stringValue else { throw typeError(key, "a string") }
        return text
    }

    func requiredString(_ key: String) throws(OAuth2Error) -> String {
        guard let text = try string(key), !text.isEmpty else {
            throw SettingsFile.invalid("\(format) settings need \(display(key)).")
        }
        return text
    }

    func bool(_ key: String) throws(OAuth2Error) -> Bool? {
        guard let value = values[key] else { return nil }
        guard let flag = value.boolValue else { throw typeError(key, "a boolean") }
        return flag
    }

    func strings(_ key: String) throws(OAuth2Error) -> [String]? {
        guard let value = values[key] else { return nil }
        guard let array = value.arrayValue else { throw typeError(key, "an array of strings") }
        var result: [String] = []
        for element in array {
            guard let text = element.stringValue else { throw typeError(key, "an array of strings") }
            result.append(text)
        }
        return result
    }

    /// A space-separated string, or (when `allowArray`) an array of strings.
    func scopes(_ key: String, allowArray: Bool) throws(OAuth2Error) -> [String]? {
        guard let value = values[key] else { return nil }
        if let text = value.stringValue { return text.split(separator: " ").map(String.init) }
        if allowArray, value.arrayValue != nil { return try strings(key) }
        throw typeError(key, allowArray ? "a space-separated string or an array of strings" : "a space-separated string")
    }

    func stringMap(_ key: String) throws(OAuth2Error) -> [String: String]? {
        guard let value = values[key] else { return nil }
        guard let object = value.objectValue else { throw typeError(key, "a dictionary of strings") }
        var result: [String: String] = [:]
        for (name, element) in object {
            guard let text = element.stringValue else {
                throw typeError("\(key).\(name)", "a string")
            }
            result[name] = text
        }
        return result
    }

    /// An absolute URL. An endpoint must also obey ``EndpointPolicy``.
    func url(_ key: String, endpoint: Bool) throws(OAuth2Error) -> URL? {
        guard let text = try string(key) else { return nil }
        return try Self.url(text, key: key, shownAs: display(key), endpoint: endpoint)
    }

    func urls(_ key: String) throws(OAuth2Error) -> [URL]? {
        guard let texts = try strings(key) else { return nil }
        var result: [URL] = []
        for (index, text) in texts.enumerated() {
            result.append(try Self.url(text, key: key, shownAs: display("\(key)[\(index)]"), endpoint: false))
        }
        return result
    }

    static func url(_ text: String, key: String, shownAs: String? = nil, endpoint: Bool) throws(OAuth2Error) -> URL {
        guard let url = URL(string: text), url.scheme != nil, !endpoint || url.host != nil else {
            throw SettingsFile.invalid("\(shownAs ?? SettingsFile.quoted(key)) is not an absolute URL.")
        }
        if endpoint { try EndpointPolicy.validate(url, name: key) }
        return url
    }

    /// Throws for the first key of the settings that is not in `known`, naming it.
    func rejectUnknownKeys(known: Set<String>, hint: (String) -> String? = { _ in nil }) throws(OAuth2Error) {
        guard let unknown = keys.subtracting(known).sorted().first else { return }
        var message = "\(display(unknown)) is not a key of \(format) settings."
        if let hint = hint(unknown) { message += " " + hint }
        throw SettingsFile.invalid(message)
    }

    func typeError(_ key: String, _ type: String) -> OAuth2Error {
        SettingsFile.invalid("\(display(key)) must be \(type).")
    }
}
