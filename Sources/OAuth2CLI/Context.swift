import Foundation
import Logging
import OAuth2
import OAuth2SecretService

/// What the tool needs of a store: sessions, and the registrations `oauth2 register` makes.
typealias CLIStore = TokenStore & RegistrationStore

/// What a command needs: the profile, its store, a client and a session.
struct Context {
    let global: GlobalOptions
    let logger: Logger
    /// How requests are sent: ``transport`` (tests of the agent pass one that holds requests
    /// at a gate).
    let transport: any HTTPTransport

    init(_ global: GlobalOptions, transport: any HTTPTransport = Context.transport) {
        self.global = global
        self.transport = transport
        logger = global.logger
    }

    var profileName: String { global.profileName }
    /// How the tool talks HTTP: ``transport``, `--http-timeout` and the `-v` logger.
    var environment: HTTPEnvironment {
        HTTPEnvironment(transport: transport, requestDeadline: global.requestDeadline, logger: logger)
    }
    var profiles: ProfileStore { ProfileStore(configDirectory: global.configDirectory) }

    /// The profile; a missing one means "sign in first" (exit 5).
    func requireProfile() throws -> Profile {
        guard let profile = try profiles.load(profileName) else {
            throw CLIError.signInAgain(
                "No stored sign-in for profile \"\(profileName)\"", hint: "sign in with `oauth2 login` (or make a machine profile with `oauth2 token --grant …`)")
        }
        return profile
    }

    /// The store to use: `--store`, else the profile's, else the keyring when a Secret
    /// Service answers, else the file store.
    func storeKind(for profile: Profile?) async -> StoreKind {
        if let kind = global.store { return kind }
        if let profile { return profile.store }
        return await SecretServiceTokenStore.isAvailable() ? .keyring : .file
    }

    /// Opens a store (of sessions and of registrations: every kind keeps both).
    func tokenStore(_ kind: StoreKind) throws -> any CLIStore {
        switch kind {
        case .keyring: return SecretServiceTokenStore()
        case .file: return try FileTokenStore(directory: global.configDirectory.appendingPathComponent("tokens"))
        case .memory: return Self.memory
        case .postgres: return try PostgresStore.shared(logger: logger)
        }
    }

    private static let memory = MemoryTokenStore()

    /// The key the profile's tokens are stored under (the same as ``TokenSession/key(for:account:)``).
    func sessionKey(for profile: Profile) -> TokenSessionKey {
        TokenSessionKey(issuer: profile.issuer ?? profile.tokenEndpoint ?? "", clientID: profile.clientID, account: profileName)
    }


    /// The client secret: from the profile's secret file, else from the store.
    func clientSecret(for profile: Profile, store: any CLIStore) async throws -> String? {
        if let file = profile.clientSecretFile { return try SecretInput.read(file: file, what: "The client secret file") }
        if let secret = try await store.load(sessionKey(for: profile))?.clientSecret { return secret }
        // A client made by `oauth2 register`: its secret is kept with its registration.
        guard let issuer = profile.issuer else { return nil }
        return try await store.loadRegistration(issuer: issuer, clientID: profile.clientID)?.clientSecret
    }

    /// How the profile's requests are sent: ``environment``, through a transport presenting
    /// the profile's client certificate when it has one (mutual TLS).
    func environment(for profile: Profile) throws -> HTTPEnvironment {
        guard let certificate = profile.options[ProfileOption.clientCertificate] else { return environment }
        guard let key = profile.options[ProfileOption.clientKey] else {
            throw CLIError.usage("The profile has a client certificate without its key", hint: "sign in again with --client-certificate and --client-key")
        }
        let transport = try HostRecordingTransport.presenting(certificatePath: certificate, keyPath: key)
        return HTTPEnvironment(transport: transport, requestDeadline: global.requestDeadline, logger: logger)
    }

    /// A client for the profile's server.
    func client(for profile: Profile, secret: String?) async throws -> OAuth2Client {
        let environment = try self.environment(for: profile)
        var configuration = ClientConfiguration(
            clientID: profile.clientID, clientSecret: secret,
            authenticationMethod: profile.authMethod.map(ClientAuthenticationMethod.init(rawValue:)),
            redirectURI: profile.redirectURI.flatMap(URL.init(string:)), scopes: profile.scopes)
        if !profile.parameters.isEmpty { configuration.additionalParameters[.authorization] = profile.parameters }
        try Self.apply(profile.options, to: &configuration)
        // Only a profile made by `login --implicit` turns the legacy implicit grant on.
        configuration.allowsImplicitGrant = profile.isImplicit
        // Endpoints given by hand complete (or replace) discovery.
        let given = ServerMetadata(
            authorizationEndpoint: profile.authorizationEndpoint.flatMap(URL.init(string:)),
            tokenEndpoint: profile.tokenEndpoint.flatMap(URL.init(string:)),
            deviceAuthorizationEndpoint: profile.deviceAuthorizationEndpoint.flatMap(URL.init(string:)))
        if let name = profile.provider {
            let client = try await OAuth2Client(server: .preset(try Self.preset(named: name)), configuration: configuration, environment: environment)
            guard !given.fields.isEmpty else { return client }
            return try await OAuth2Client(
                server: .metadata(client.metadata.filling(from: given)), configuration: client.configuration, environment: environment)
        }
        guard let issuer = profile.issuer else {
            return try await OAuth2Client(server: .metadata(given), configuration: configuration, environment: environment)
        }
        guard let url = URL(string: issuer) else { throw CLIError.usage("The issuer \(issuer) is not a URL", hint: "check the profile's issuer") }
        let metadata = try await discoveredMetadata(issuer: url, configuration: configuration, environment: environment)
        return try await OAuth2Client(server: .metadata(metadata.filling(from: given)), configuration: configuration, environment: environment)
    }

    /// The issuer's metadata: from the discovery cache on disk when fetched within the hour,
    /// else discovered now (and kept there).
    private func discoveredMetadata(issuer: URL, configuration: ClientConfiguration, environment: HTTPEnvironment) async throws -> ServerMetadata {
        let cache = MetadataFileCache(configDirectory: global.configDirectory)
        if let metadata = cache.metadata(for: issuer) { return metadata }
        let client = try await OAuth2Client(server: .issuer(issuer), configuration: configuration, environment: environment)
        cache.save(client.metadata, for: issuer)
        return client.metadata
    }

    /// Applies a profile's options of JWT client authentication and pushed requests: the
    /// `private_key_jwt` key is read from its file here, each time (the profile keeps only
    /// its path).
    static func apply(_ options: [String: String], to configuration: inout ClientConfiguration) throws {
        if let path = options[ProfileOption.privateKey] {
            do {
                configuration.privateKey = try JWSSigningKey(contentsOf: URL(fileURLWithPath: path), keyID: options[ProfileOption.keyID])
            } catch {
                throw CLIError.usage("The private key file \(path) is not usable: \(ErrorReport.reason(error))")
            }
        }
        if let name = options[ProfileOption.assertionAudience] {
            guard let audience = ClientAuthOptions.Audience(rawValue: name) else {
                throw CLIError.usage("The profile's assertion audience \"\(name)\" is not one of issuer, token-endpoint, endpoint.")
            }
            configuration.clientAssertion.audience = audience.library
        }
        configuration.usePushedAuthorizationRequests = options[ProfileOption.par] == "true"
        // A client certificate: requests go to the mtls_endpoint_aliases (RFC 8705 §5).
        configuration.mutualTLS = options[ProfileOption.clientCertificate] != nil
        // A resource profile's tokens are for its resource alone (RFC 8707), refreshes too.
        if let resource = options[ProfileOption.resource] {
            for kind in [RequestKind.authorization, .token, .deviceAuthorization] {
                configuration.additionalParameters[kind, default: [:]]["resource"] = resource
            }
        }
    }

    /// The preset `--provider` names (the library's one mapping; only providers that need
    /// no argument can be named this way — the others by a settings file).
    static func preset(named name: String) throws -> ProviderPreset {
        do {
            return try ProviderPreset.named(name.lowercased())
        } catch {
            throw CLIError.usage(error.message ?? "Unknown provider \"\(name)\".")
        }
    }

    /// The profile with the issuer (or token endpoint) the client resolved, so that its
    /// tokens are stored under the key the session uses.
    static func resolved(_ profile: Profile, client: OAuth2Client) -> Profile {
        var profile = profile
        if profile.issuer == nil, profile.tokenEndpoint == nil {
            profile.issuer = client.metadata.issuer
            if profile.issuer == nil { profile.tokenEndpoint = client.metadata.tokenEndpoint?.absoluteString }
        }
        return profile
    }

    /// TokenSession options for the profile's grant: client-credentials profiles re-request a
    /// token instead of refreshing.
    static func sessionOptions(for profile: Profile) -> TokenSession.Options {
        profile.grant == "client_credentials"
            ? TokenSession.Options(renewal: .clientCredentials(scopes: profile.scopes)) : TokenSession.Options()
    }

    /// The signed-in session of the profile.
    ///
    /// - Parameter stepUp: the session's step-up sign-in (``TokenSession/Options/stepUp``), if any.
    func session(stepUp: TokenSession.Options.StepUp? = nil) async throws -> (Profile, TokenSession) {
        let profile = try requireProfile()
        let store = try tokenStore(await storeKind(for: profile))
        let client = try await client(for: profile, secret: try await clientSecret(for: profile, store: store))
        var options = Self.sessionOptions(for: profile)
        options.stepUp = stepUp
        guard let session = try await TokenSession.restore(client: client, store: store, account: profileName, options: options) else {
            throw CLIError.signInAgain("Profile \"\(profileName)\" has no stored tokens", hint: "sign in again with `oauth2 login`")
        }
        // DPoP-bound tokens need the key stored with them: without it every request would fail.
        if profile.options[ProfileOption.dpop] != nil, session.client.configuration.dpop == nil {
            throw CLIError.signInAgain(
                "Profile \"\(profileName)\" uses DPoP but its key is not in the token store", hint: "sign in again with `oauth2 login --dpop`")
        }
        return (profile, session)
    }

    /// Saves a sign-in: the tokens (through a session, so that the store's lock is taken),
    /// the client secret when it came from the command line, then the profile.
    func saveSignIn(profile: Profile, client: OAuth2Client, tokens: TokenSet, secret: String?) async throws {
        let profile = Self.resolved(profile, client: client)
        let store = try tokenStore(profile.store)
        _ = try await TokenSession(client: client, tokens: tokens, store: store, account: profileName, options: Self.sessionOptions(for: profile))
        let key = sessionKey(for: profile)
        if var record = try await store.load(key) {
            record.subject = tokens.idTokenClaims?.subject
            record.clientSecret = profile.clientSecretFile == nil ? secret : nil
            try await store.save(record)
        }
        try profiles.save(profile, as: profileName)
    }
}
