import Foundation
@_spi(Tooling) import OAuth2

/// What a profile saves (README: "What a profile saves"): how to reach the server and who
/// the client is — never a token, a client secret or a password.
struct Profile: Codable, Equatable {
    /// The issuer, when the server has discovery.
    var issuer: String?
    /// The endpoints, for servers without discovery.
    var authorizationEndpoint: String?
    var tokenEndpoint: String?
    /// The device authorization endpoint, when discovery does not name it (DOT).
    var deviceAuthorizationEndpoint: String?
    /// A provider preset (`github`, `google`, `facebook`, `reddit`, `linkedin`, `gitlab`):
    /// its endpoints and quirks.
    var provider: String?
    var clientID: String
    var authMethod: String?
    var scopes: [String]
    var redirectURI: String?
    /// A file holding the client secret (the secret itself goes into the token store).
    var clientSecretFile: String?
    /// How the tokens were obtained: `authorization_code`, `device`, ``cibaGrant``,
    /// `client_credentials`, `password`, or the legacy ``implicitGrant`` / ``implicitIDTokenGrant``.
    var grant: String
    /// Extra authorization parameters (`--param`), prompt and login hint.
    var parameters: [String: String]
    var prompt: String?
    var loginHint: String?
    /// The store chosen at login.
    var store: StoreKind
    /// Options of later features, kept as given (DPoP, PAR, private key file…).
    var options: [String: String]

    /// `grant` of an `oauth2 login --ciba` profile (OpenID Connect CIBA, poll mode).
    static let cibaGrant = "ciba"
    /// `grant` of an `oauth2 login --implicit` profile (response_type=token).
    static let implicitGrant = "implicit"
    /// `grant` of an `oauth2 login --implicit-id-token` profile (response_type=id_token token).
    static let implicitIDTokenGrant = "implicit_id_token"

    /// `true` for a profile signed in with the implicit grant (no refresh token).
    var isImplicit: Bool { grant == Self.implicitGrant || grant == Self.implicitIDTokenGrant }

    init(
        issuer: String?, authorizationEndpoint: String? = nil, tokenEndpoint: String? = nil,
        deviceAuthorizationEndpoint: String? = nil, provider: String? = nil, clientID: String,
        authMethod: String? = nil, scopes: [String], redirectURI: String? = nil, clientSecretFile: String? = nil,
        grant: String, parameters: [String: String] = [:], prompt: String? = nil, loginHint: String? = nil,
        store: StoreKind, options: [String: String] = [:]
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.provider = provider
        self.clientID = clientID
        self.authMethod = authMethod
        self.scopes = scopes
        self.redirectURI = redirectURI
        self.clientSecretFile = clientSecretFile
        self.grant = grant
        self.parameters = parameters
        self.prompt = prompt
        self.loginHint = loginHint
        self.store = store
        self.options = options
    }
}

/// Profiles as JSON files in `<config-dir>/profiles/<name>.json` (directory 0700, files 0600).
struct ProfileStore {
    let directory: URL

    init(configDirectory: URL) {
        directory = configDirectory.appendingPathComponent("profiles")
    }

    static func validate(name: String) throws {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "._-"))
        guard !name.isEmpty, name.count <= 64, !name.hasPrefix("."), name.unicodeScalars.allSatisfy(allowed.contains) else {
            throw CLIError.usage("A profile name is letters, digits, '.', '_' and '-' (got \"\(name)\").")
        }
    }

    func url(for name: String) -> URL { directory.appendingPathComponent(name + ".json") }

    func load(_ name: String) throws -> Profile? {
        try Self.validate(name: name)
        let url = url(for: name)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            return try JSONDecoder().decode(Profile.self, from: Data(contentsOf: url))
        } catch {
            throw CLIError(.refused, "The profile file \(url.path) cannot be read: \(ErrorReport.reason(error))", hint: "fix it, or remove it and sign in again")
        }
    }

    func save(_ profile: Profile, as name: String) throws {
        try Self.validate(name: name)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Created private (0600, in a 0700 directory), never widened then narrowed.
        try PrivateFile.write(try encoder.encode(profile), to: url(for: name))
    }

    func remove(_ name: String) throws {
        try Self.validate(name: name)
        try? FileManager.default.removeItem(at: url(for: name))
    }

    func names() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }
}
