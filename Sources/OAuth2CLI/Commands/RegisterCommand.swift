import ArgumentParser
import Foundation
import OAuth2
import OAuth2InteractiveSignIn

struct RegisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register a client with the server (RFC 7591) and save it as a profile; show or delete it (RFC 7592).",
        discussion: """
            The profile gets the new client id, redirect URI, scopes and auth method; the client secret and the \
            registration access token go to the token store (never to the profile file). `oauth2 login` with the \
            profile then signs in with the new client. Without --redirect-uri, a free loopback port is chosen now and \
            http://127.0.0.1:PORT/callback registered (login listens on it).

            Prints the new client id; with --json, the registration as JSON (client_id, registration_client_uri, \
            client_id_issued_at, client_secret_expires_at, the registered metadata, the profile and its store), \
            never the client secret or the registration access token.

            --show reads the registration at the server; --delete deletes it there, then forgets the profile, its \
            tokens and its credentials.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "The issuer (discovery must name a registration_endpoint).") var issuer: String?
    @Option(name: .customLong("redirect-uri"), help: "A redirect URI to register (repeatable; the first is login's).") var redirectURIs: [String] = []
    @Option(help: "The client's name (client_name).") var name: String?
    @Option(name: .customLong("auth-method"), help: "token_endpoint_auth_method: client_secret_basic, client_secret_post or none.") var authMethod: String?
    @Option(help: "Space-separated scopes (default: openid profile).") var scope = "openid profile"
    @Option(name: .customLong("grant-type"), help: "A grant type (repeatable; default: authorization_code, refresh_token).") var grantTypes: [String] = []
    @Option(name: .customLong("initial-access-token-file"), help: "A file holding the server's initial access token.") var initialAccessTokenFile: String?
    @Flag(help: "Read the profile's registration at the server and print it (no secrets).") var show = false
    @Flag(help: "Delete the profile's registration at the server, then the profile, its tokens and credentials.") var delete = false

    func validate() throws {
        if show && delete { throw ValidationError("Give --show or --delete, not both.") }
        if show || delete {
            guard issuer == nil, redirectURIs.isEmpty, name == nil, authMethod == nil, grantTypes.isEmpty, initialAccessTokenFile == nil else {
                throw ValidationError("--show and --delete act on the profile's registration: they take no registration options.")
            }
            return
        }
        guard issuer != nil else { throw ValidationError("register needs --issuer.") }
        for uri in redirectURIs {
            guard let url = URL(string: uri), url.scheme != nil, url.host != nil, url.fragment == nil else {
                throw ValidationError("--redirect-uri must be an absolute URL without a fragment (got \"\(uri)\").")
            }
        }
        if let first = redirectURIs.first { _ = try LoginCommand.loopback(first) }
    }

    func run() async throws {
        let context = Context(global)
        if show || delete { return try await manage(context) }
        guard let issuer, let issuerURL = URL(string: issuer) else { throw CLIError.usage("The issuer is not a URL.") }
        let registrar = try await ClientRegistrar(server: .issuer(issuerURL), environment: context.environment)
        let scopes = scope.split(separator: " ").map(String.init)
        var redirects = redirectURIs
        if redirects.isEmpty { redirects = [try await Self.freeLoopbackRedirect()] }
        var metadata = RegistrationMetadata(
            redirectURIs: redirects.compactMap(URL.init(string:)),
            grantTypes: grantTypes.isEmpty ? ["authorization_code", "refresh_token"] : grantTypes,
            responseTypes: ["code"],
            tokenEndpointAuthMethod: authMethod.map(ClientAuthenticationMethod.init(rawValue:)),
            clientName: name ?? "oauth2 CLI (\(context.profileName))",
            scopes: scopes)
        if !metadata.grantTypes.contains("authorization_code") { metadata.responseTypes = [] }
        let initialAccessToken = try initialAccessTokenFile.map { try SecretInput.read(file: $0, what: "The initial access token file") }
        let registration = try await registrar.register(metadata, initialAccessToken: initialAccessToken)
        let kind = await context.storeKind(for: nil)
        let store = try context.tokenStore(kind)
        try await store.saveRegistration(registration, issuer: issuer)
        let grant = metadata.grantTypes.contains("authorization_code") ? "authorization_code" : (metadata.grantTypes.first ?? "authorization_code")
        let profile = Profile(
            issuer: issuer, clientID: registration.clientID,
            authMethod: registration.metadata.tokenEndpointAuthMethod?.rawValue ?? authMethod,
            scopes: scopes, redirectURI: redirects.first, grant: grant, store: kind,
            options: ["registration": "dynamic"])
        try context.profiles.save(profile, as: context.profileName)
        Output.step("Registered client \(registration.clientID) at \(issuer); profile \"\(context.profileName)\" saved (\(kind.rawValue) store). Sign in with `oauth2 login --profile \(context.profileName)`.")
        guard global.json else {
            Output.result(registration.clientID)
            return
        }
        // The registration as `--show` prints it (never its client secret or registration
        // access token: they stay in the token store), with where it was saved.
        var members = Self.members(of: registration)
        members["profile"] = .string(context.profileName)
        members["issuer"] = .string(issuer)
        members["store"] = .string(kind.rawValue)
        Output.json(.object(members))
    }

    /// A registration's RFC 7591 members without its secrets: the client secret and the
    /// registration access token are left out, a software statement is redacted.
    static func members(of registration: ClientRegistration) -> [String: JSONValue] {
        var members = registration.metadata.members
        members["client_id"] = .string(registration.clientID)
        members["registration_client_uri"] = registration.registrationClientURI.map { .string($0.absoluteString) }
        members["client_id_issued_at"] = registration.clientIDIssuedAt.map { .integer(Int64($0.timeIntervalSince1970)) }
        members["client_secret_expires_at"] = registration.clientSecretExpiresAt.map { .integer(Int64($0.timeIntervalSince1970)) }
        members["software_statement"] = registration.metadata.softwareStatement.map { _ in .string(Redactor.placeholder) }
        members["client_secret"] = nil
        members["registration_access_token"] = nil
        return members
    }

    /// `--show` and `--delete`.
    private func manage(_ context: Context) async throws {
        let profile = try context.requireProfile()
        guard let issuer = profile.issuer, let issuerURL = URL(string: issuer) else {
            throw CLIError.usage("Profile \"\(context.profileName)\" has no issuer.")
        }
        let store = try context.tokenStore(await context.storeKind(for: profile))
        guard let registration = try await store.loadRegistration(issuer: issuer, clientID: profile.clientID) else {
            throw CLIError(.refused, "Profile \"\(context.profileName)\" has no stored registration (it was not made by `oauth2 register`).")
        }
        let registrar = try await ClientRegistrar(server: .issuer(issuerURL), environment: context.environment)
        if show {
            let current = try await registrar.read(registration)
            // The server may have rotated a credential in its answer: keep the newest.
            if current != registration { try await store.saveRegistration(current, issuer: issuer) }
            Output.json(.object(Self.members(of: current)))
            return
        }
        try await registrar.delete(registration)
        try await store.removeRegistration(issuer: issuer, clientID: profile.clientID)
        try await store.remove(context.sessionKey(for: profile))
        try context.profiles.remove(context.profileName)
        Output.step("Deleted client \(profile.clientID) at \(issuer); profile \"\(context.profileName)\" removed.")
    }

    /// `http://127.0.0.1:PORT/callback` with a port that is free now (the listener binds
    /// port 0 and is closed again).
    static func freeLoopbackRedirect() async throws -> String {
        let listener = try await LoopbackRedirectListener.start(host: .ipv4, port: 0, callbackPath: "/callback", pages: LoopbackPages())
        let uri = listener.redirectURI.absoluteString
        await listener.close()
        return uri
    }
}
