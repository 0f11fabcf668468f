import ArgumentParser
import Foundation
import OAuth2
import OAuth2InteractiveSignIn

/// The options of a sign-in to a protected resource known by its URL alone (`oauth2 request
/// URL` without a profile; `oauth2 login --resource URL` has its own of the same names).
struct ResourceSignInOptions: ParsableArguments {
    @Option(name: .customLong("client-id"), help: "A client id held for the resource's authorization server (default: a client id metadata document, else dynamic registration).")
    var clientID: String?
    @Option(name: .customLong("client-metadata-url"), help: ArgumentHelp("The HTTPS URL of this client's Client ID Metadata Document, used as client_id where the server takes one.", valueName: "url"))
    var clientMetadataURL: String?
    @Option(name: .customLong("authorization-server"), help: ArgumentHelp("Which of the resource's authorization servers to use (default: the first listed).", valueName: "issuer"))
    var authorizationServer: String?
    @Option(help: "Space-separated scopes (default: the resource's challenge's, else its metadata's scopes_supported).") var scope: String?
    @Option(name: .customLong("redirect-uri"), help: "http://127.0.0.1:PORT/PATH (default: an ephemeral port, /callback).") var redirectURI: String?
    @Flag(name: .customLong("no-browser"), help: "Print the URL; do not open a browser (a step-up's too).") var noBrowser = false
    @Option(help: "Seconds to wait for the sign-in (a step-up's too).") var timeout = 300

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be positive.") }
        if let redirectURI { _ = try LoginCommand.loopback(redirectURI) }
        _ = try ResourceSignIn.url(clientMetadataURL, option: "--client-metadata-url")
        _ = try ResourceSignIn.url(authorizationServer, option: "--authorization-server")
    }

    /// The sign-in these options describe.
    func signIn() throws -> ResourceSignIn {
        ResourceSignIn(
            clientID: clientID, clientMetadataURL: try ResourceSignIn.url(clientMetadataURL, option: "--client-metadata-url"),
            authorizationServer: try ResourceSignIn.url(authorizationServer, option: "--authorization-server"),
            scopes: scope.map { $0.split(separator: " ").map(String.init) }, redirectURI: redirectURI, noBrowser: noBrowser,
            timeout: timeout)
    }
}

/// A sign-in to a protected resource from its URL alone (RFC 9728, the MCP authorization
/// specification), with the library's steps — nothing of discovery is done here:
/// ``ProtectedResourceDiscovery`` finds and checks the resource's metadata and
/// authorization server; ``DiscoveredResource/clientIdentity(configuredClientID:metadataDocument:)``
/// picks the client's identity (a held client id, else a Client ID Metadata Document, else
/// dynamic registration as a `native` client); the sign-in is the loopback code flow with
/// PKCE and the resource indicator on the authorization and token requests; the result is
/// a profile of its own (``ResourceProfile``).
struct ResourceSignIn {
    var clientID: String?
    var clientMetadataURL: URL?
    var authorizationServer: URL?
    var scopes: [String]?
    var redirectURI: String?
    var noBrowser = false
    var timeout = 300

    /// An absolute URL option, or `nil`.
    static func url(_ text: String?, option: String) throws -> URL? {
        guard let text else { return nil }
        guard let url = URL(string: text), url.scheme != nil, url.host != nil else { throw ValidationError("\(option) takes an absolute URL (got \"\(text)\").") }
        return url
    }

    /// Discovers `resource` (its unauthorized answer, its metadata, its authorization
    /// server), signs in, and saves the result as the profile `name` — by default the one
    /// named after the resource (``ResourceProfile/name(for:)``).
    ///
    /// - Returns: the context of the saved profile.
    /// - Throws: ``CLIError`` when the name belongs to another profile; what discovery, the
    ///   registration and the sign-in throw (``OAuth2Error``: `resource_mismatch`,
    ///   `metadata_origin_mismatch`, `issuer_mismatch`…).
    func run(_ context: Context, resource: URL, profile explicitName: String?) async throws -> Context {
        // Named before anything is sent: discovery checks that the metadata's resource is
        // this URL's, so the name stands for the resource found too.
        let name = try explicitName ?? ResourceProfile.name(for: resource)
        let profiles = context.profiles
        try ResourceProfile.ensureFree(name, for: resource.absoluteString, profiles: profiles)
        let found = try await ProtectedResourceDiscovery(environment: context.environment)
            .discover(resource: resource, issuer: authorizationServer)
        Output.step("Discovered \(found.resource.absoluteString): authorization server \(found.issuer.absoluteString) (metadata at \(found.metadataURL.absoluteString)).")
        // The discovered (and checked) metadata serves the profile's next commands.
        MetadataFileCache(configDirectory: context.global.configDirectory).save(found.authorizationServer, for: found.issuer)

        var global = context.global
        global.profile = name
        let profileContext = Context(global, transport: context.transport)
        let existing = try profiles.load(name)
        // The profile's own client, signing in again: the id it was given for this resource.
        let held = clientID ?? (existing?.issuer == found.issuer.absoluteString ? existing?.clientID : nil)
        let identity = try found.clientIdentity(configuredClientID: held, metadataDocument: clientMetadataURL)
        let scopes = scopes ?? found.scopes
        let base = found.boundToResource(ClientConfiguration(clientID: "", scopes: scopes))
        let kind = await context.storeKind(for: existing)
        let store = try context.tokenStore(kind)
        let (port, path) = try redirectURI.map(LoginCommand.loopback) ?? existing?.redirectURI.map(LoginCommand.loopback) ?? (0, "/callback")
        let signIn = LoopbackSignIn(port: port, callbackPath: path, timeout: .seconds(timeout), browser: noBrowser ? .none : .system)
        let options = AuthorizationOptions(scopes: scopes)

        let client: OAuth2Client
        let tokens: TokenSet
        var secret: String?
        var registeredRedirect = redirectURI ?? existing?.redirectURI
        let registration: String
        do {
            switch identity {
            case .configured(let id):
                var configuration = base
                configuration.clientID = id
                client = try await OAuth2Client(server: found.server, configuration: configuration, environment: context.environment)
                Output.step(clientID == nil ? "Client: the profile's client \(id)." : "Client: the configured client id \(id).")
                tokens = try await signIn.signIn(client: client, options: options)
                registration = existing?.options[ProfileOption.registration] ?? "configured"
                if let existing, existing.clientID == id { secret = try await profileContext.clientSecret(for: existing, store: store) }
            case .metadataDocument(let document):
                var configuration = base
                configuration.clientID = document.absoluteString
                client = try await OAuth2Client(server: found.server, configuration: configuration, environment: context.environment)
                Output.step("Client: the client id metadata document \(document.absoluteString).")
                tokens = try await signIn.signIn(client: client, options: options)
                registration = "metadata_document"
            case .dynamicRegistration:
                let registrar = try await ClientRegistrar(server: found.server, environment: context.environment)
                var wanted = found.registrationMetadata(
                    redirectURI: URL(string: "http://127.0.0.1/callback")!, clientName: "oauth2 CLI (\(name))")
                wanted.redirectURIs = []  // the listener's, once it has its port
                let result = try await signIn.signIn(registrar: registrar, configuration: base, registering: wanted, store: store, options: options)
                guard let made = result.registration else { throw CLIError(.refused, "No client was registered.") }
                Output.step("Client: registered client \(made.clientID) at \(found.issuer.absoluteString) for this resource alone.")
                client = result.client
                tokens = result.tokens
                secret = made.clientSecret
                registeredRedirect = result.client.configuration.redirectURI?.absoluteString
                registration = "dynamic"
            }
        } catch let error as OAuth2Error where error.code == .timeout && error.source == .client {
            throw CLIError(.cancelled, "The sign-in did not complete within \(timeout) s", hint: "run the command again (--timeout SECONDS waits longer)")
        }
        let profile = Profile(
            issuer: found.issuer.absoluteString, clientID: client.configuration.clientID, scopes: scopes, redirectURI: registeredRedirect,
            grant: "authorization_code", store: kind,
            options: [ProfileOption.resource: found.resource.absoluteString, ProfileOption.registration: registration])
        try await profileContext.saveSignIn(profile: profile, client: client, tokens: tokens, secret: secret)
        Output.step("Signed in; profile \"\(name)\" saved for \(found.resource.absoluteString) (\(kind.rawValue) store).")
        return profileContext
    }

    /// The step-up sign-in of a resource profile (``TokenSession/Options/stepUp``): the
    /// loopback code flow again, at the profile's redirect URI when it has one, for the
    /// scopes the session asks for.
    static func stepUp(for profile: Profile, noBrowser: Bool, timeout: Int) throws -> TokenSession.Options.StepUp {
        let (port, path) = try profile.redirectURI.map(LoginCommand.loopback) ?? (0, "/callback")
        let signIn = LoopbackSignIn(port: port, callbackPath: path, timeout: .seconds(timeout), browser: noBrowser ? .none : .system)
        return { client, scopes in
            Output.step("The resource asks for more scope: signing in again for \(scopes.joined(separator: " ")).")
            return try await signIn.signIn(client: client, options: AuthorizationOptions(scopes: scopes))
        }
    }
}
