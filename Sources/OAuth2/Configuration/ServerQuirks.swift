import Foundation

/// Deviations from the RFCs that some authorization servers need from their clients.
///
/// Every quirk is off by default, so a plain ``ClientConfiguration`` stays strict. The
/// ``ProviderPreset``s switch on the ones their provider needs, and a settings file can
/// name them (`"quirks": ["comma_separated_scopes"]`). Deviations that are harmless to
/// accept from any server — an error inside an HTTP 200, a form-encoded token response,
/// `token_type` in any case — are understood without a quirk.
///
/// ```swift
/// var configuration = ClientConfiguration(clientID: "installed-app")
/// configuration.authenticationMethod = .clientSecretBasic
/// configuration.quirks.insert(.basicAuthenticationWithEmptySecret)   // Reddit's installed apps
/// ```
public struct ServerQuirks: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits of the set.
    public let rawValue: UInt32

    /// Creates a set from its bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `client_secret_basic` with an empty password when the client has no secret:
    /// `Basic base64(client_id ":")`. Reddit asks this of installed apps, and p2/OAuth2's
    /// settings spell it `"client_secret": ""`. Without this quirk a missing secret with
    /// `client_secret_basic` is a configuration error.
    public static let basicAuthenticationWithEmptySecret = ServerQuirks(rawValue: 1 << 0)

    /// The `scope` of a token response is separated by commas, not spaces (GitHub's
    /// `"repo,gist"`, LinkedIn's `"email,openid,profile"`). With this quirk both commas and
    /// spaces separate scopes.
    public static let commaSeparatedScopes = ServerQuirks(rawValue: 1 << 1)

    /// A refresh that names no scopes sends the configuration's scopes
    /// (Microsoft Entra ID documents `scope` as required on a refresh request).
    public static let scopesOnRefresh = ServerQuirks(rawValue: 1 << 2)

    /// `client_secret_basic` with the client id and secret as they are, not form-encoded
    /// first as RFC 6749 §2.3.1 asks: for servers that do not decode them (LemonLDAP::NG
    /// 2.16, whose registered secrets may hold a `/`). A client id with a `:` cannot be sent
    /// this way and is a configuration error.
    public static let basicAuthenticationWithoutFormEncoding = ServerQuirks(rawValue: 1 << 3)

    /// Every quirk with its name in settings files.
    public static let named: [(name: String, quirk: ServerQuirks)] = [
        ("basic_authentication_with_empty_secret", .basicAuthenticationWithEmptySecret),
        ("comma_separated_scopes", .commaSeparatedScopes),
        ("scopes_on_refresh", .scopesOnRefresh),
        ("basic_authentication_without_form_encoding", .basicAuthenticationWithoutFormEncoding),
    ]

    /// The quirk a settings file names `name`, or `nil` for an unknown name.
    public init?(name: String) {
        guard let entry = Self.named.first(where: { $0.name == name }) else { return nil }
        self = entry.quirk
    }

    /// The names of the quirks in the set, in a stable order.
    public var names: [String] {
        Self.named.filter { contains($0.quirk) }.map(\.name)
    }

    /// The quirks' names, comma-separated; `none` for the empty set.
    public var description: String {
        names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}
