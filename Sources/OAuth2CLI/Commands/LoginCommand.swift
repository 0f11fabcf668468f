import ArgumentParser
import Foundation
import OAuth2
import OAuth2InteractiveSignIn

struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign in (code + PKCE through a loopback redirect, the device flow, or CIBA) and save the profile.",
        discussion: """
            The authorization URL is printed on stderr and opened in $BROWSER (else xdg-open). With --device the \
            verification URL, the user code and a QR code go to stderr and the browser is not opened unless \
            --open-browser. With --ciba (OpenID Connect CIBA) the server asks the user named by --login-hint to \
            approve on their own device: the binding message (--binding-message, else a random one) goes to stderr, \
            and login waits with a countdown. Everything the library validates is validated (state, iss, ID token).

            Without --client-id, login signs in with the client of the existing profile (one made by \
            `oauth2 register`, say); with no profile either, it registers a client at the issuer's \
            registration endpoint first (RFC 7591; its credentials go to the token store) and saves it in the profile.

            --resource URL signs in to a protected resource (an MCP server, say) known by its URL alone, as \
            `oauth2 request URL` does without a profile: its metadata (RFC 9728) and authorization server are \
            discovered and checked (--issuer picks one of those it lists), the client is --client-id, else \
            --client-metadata-url where the server takes client id metadata documents, else registered for this \
            resource alone; the profile is named after the resource (https://mcp.example.com/mcp: \
            mcp.example.com_mcp) unless --profile names it.

            --implicit and --implicit-id-token use the legacy implicit grant (response_type=token, or id_token token), \
            for servers that offer nothing else: deprecated (RFC 9700), no refresh token, sign in again when it expires.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "The issuer (discovery); with --resource, which of the resource's authorization servers to use.") var issuer: String?
    @Option(help: ArgumentHelp("Sign in to the protected resource at this URL (RFC 9728 discovery; MCP servers).", valueName: "url"))
    var resource: String?
    @Option(name: .customLong("client-metadata-url"), help: ArgumentHelp("With --resource: the HTTPS URL of this client's Client ID Metadata Document, used as client_id where the server takes one.", valueName: "url"))
    var clientMetadataURL: String?
    @Option(help: "A provider preset instead of --issuer: github, google, gitlab, facebook, reddit, linkedin.") var provider: String?
    @Option(name: .customLong("client-id"), help: "The client id (default: the profile's; none: register one).") var clientID: String?
    @OptionGroup var clientSecret: ClientSecretOptions
    @OptionGroup var auth: ClientAuthOptions
    @Option(help: "Space-separated scopes (default: the profile's, else the --provider preset's, else openid profile).") var scope: String?
    @Option(name: .customLong("redirect-uri"), help: "http://127.0.0.1:PORT/PATH (default: an ephemeral port, /callback).") var redirectURI: String?
    @Flag(help: "Use the device flow (RFC 8628).") var device = false
    @Flag(help: "Use CIBA (OpenID Connect Client-Initiated Backchannel Authentication): the user named by --login-hint approves on their own device.")
    var ciba = false
    @Option(name: .customLong("binding-message"), help: "With --ciba, the text shown on both devices (default: six random characters).")
    var bindingMessage: String?
    @Flag(help: "Deprecated: the legacy implicit grant, response_type=token (no refresh token).") var implicit = false
    @Flag(name: .customLong("implicit-id-token"), help: "Deprecated: the implicit grant with response_type=id_token token (needs openid).")
    var implicitIDToken = false
    @Flag(name: .customLong("no-browser"), help: "Print the URL; do not open a browser.") var noBrowser = false
    @Flag(name: .customLong("open-browser"), help: "With --device, open the verification URL too.") var openBrowser = false
    @Option(help: "prompt (login, consent, select_account, none).") var prompt: String?
    @Option(name: .customLong("login-hint"), help: "login_hint; with --ciba, the user to ask (Glewlwyd wants {\"username\":\"alice\"}).") var loginHint: String?
    @Option(name: .customLong("param"), help: "An extra authorization parameter k=v (repeatable).") var params: [String] = []
    @Option(
        name: .customLong("authorization-details"),
        help: ArgumentHelp("Rich authorization requests (RFC 9396): a JSON file (- for standard input) holding an array of objects with a type.", valueName: "file"))
    var authorizationDetailsFile: String?
    @Option(help: "Seconds to wait for the sign-in (default 300).") var timeout = 300
    @Option(name: .customLong("authorization-endpoint"), help: "For servers without discovery.") var authorizationEndpoint: String?
    @Option(name: .customLong("token-endpoint"), help: "For servers without discovery.") var tokenEndpoint: String?
    @Option(name: .customLong("device-authorization-endpoint"), help: "When discovery does not name it.") var deviceAuthorizationEndpoint: String?
    @Option(help: DPoPArgument.help) var dpop: String?
    @Flag(help: "Push the authorization request first (PAR, RFC 9126); done anyway when the server requires it.") var par = false

    func validate() throws {
        if resource != nil { return try validateResource() }
        if clientMetadataURL != nil { throw ValidationError("--client-metadata-url goes with --resource.") }
        guard issuer != nil || tokenEndpoint != nil || provider != nil || clientID == nil else {
            throw ValidationError("login needs --issuer, --provider, or --token-endpoint for servers without discovery.")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive.") }
        if let redirectURI { _ = try Self.loopback(redirectURI) }
        for param in params where !param.contains("=") { throw ValidationError("--param takes k=v (got \"\(param)\").") }
        if device, redirectURI != nil { throw ValidationError("--redirect-uri does not go with --device.") }
        if device, par { throw ValidationError("--par does not go with --device.") }
        if ciba {
            let others: [(String, Bool)] = [
                ("--device", device), ("--redirect-uri", redirectURI != nil), ("--par", par),
                ("--implicit", implicit || implicitIDToken), ("--prompt", prompt != nil),
            ]
            if let (name, _) = others.first(where: { $0.1 }) { throw ValidationError("\(name) does not go with --ciba.") }
        } else if bindingMessage != nil {
            throw ValidationError("--binding-message goes with --ciba.")
        }
        try DPoPArgument.validate(dpop)
        if auth.authMethod == "client_secret_jwt", !clientSecret.isGiven {
            throw ValidationError("--auth-method client_secret_jwt needs --client-secret-file, --client-secret-stdin or --client-secret.")
        }
        if implicit, implicitIDToken { throw ValidationError("Give --implicit or --implicit-id-token, not both.") }
        if implicitResponseType != nil {
            if device { throw ValidationError("--implicit does not go with --device.") }
            if par { throw ValidationError("--implicit does not go with --par.") }
            if dpop != nil { throw ValidationError("--implicit does not go with --dpop (its tokens cannot be sender-constrained).") }
        }
        if implicitIDToken, let scope, !scope.split(separator: " ").contains("openid") {
            throw ValidationError("--implicit-id-token needs the openid scope.")
        }
    }

    /// The options that go with `--resource`: the resource's URL, the client and the sign-in's.
    private func validateResource() throws {
        guard let resource else { return }
        _ = try ResourceSignIn.url(resource, option: "--resource")
        _ = try ResourceSignIn.url(clientMetadataURL, option: "--client-metadata-url")
        _ = try ResourceSignIn.url(issuer, option: "--issuer")
        guard timeout > 0 else { throw ValidationError("--timeout must be positive.") }
        if let redirectURI { _ = try Self.loopback(redirectURI) }
        let others: [(String, Bool)] = [
            ("--provider", provider != nil), ("--token-endpoint", tokenEndpoint != nil), ("--authorization-endpoint", authorizationEndpoint != nil),
            ("--device-authorization-endpoint", deviceAuthorizationEndpoint != nil), ("--device", device), ("--ciba", ciba),
            ("--implicit", implicit || implicitIDToken), ("--dpop", dpop != nil), ("--par", par), ("--auth-method", auth.authMethod != nil),
            ("--client-secret…", clientSecret.isGiven),
        ]
        if let (name, _) = others.first(where: { $0.1 }) { throw ValidationError("\(name) does not go with --resource.") }
    }

    /// The resource sign-in `--resource` asks for.
    var resourceSignIn: ResourceSignIn {
        get throws {
            ResourceSignIn(
                clientID: clientID, clientMetadataURL: try ResourceSignIn.url(clientMetadataURL, option: "--client-metadata-url"),
                authorizationServer: try ResourceSignIn.url(issuer, option: "--issuer"),
                scopes: scope.map { $0.split(separator: " ").map(String.init) }, redirectURI: redirectURI, noBrowser: noBrowser, timeout: timeout)
        }
    }

    /// The implicit grant's response type, when asked for.
    var implicitResponseType: ImplicitResponseType? {
        implicitIDToken ? .idTokenToken : implicit ? .token : nil
    }

    /// The profile's `grant` for the way of signing in.
    var grantName: String {
        switch implicitResponseType {
        case .token?: return Profile.implicitGrant
        case .idTokenToken?: return Profile.implicitIDTokenGrant
        case nil: return device ? "device" : ciba ? Profile.cibaGrant : "authorization_code"
        }
    }

    /// The scopes of a new profile: `--scope`, else the scopes of the `--provider` preset
    /// (`read:user` for GitHub, `identity` for Reddit…), else `openid profile`.
    static func scopes(_ scope: String?, provider: String?) throws -> [String] {
        if let scope { return scope.split(separator: " ").map(String.init) }
        if let provider { return try Context.preset(named: provider).scopes }
        return ["openid", "profile"]
    }

    /// The warning for a sign-in that brought an expiring access token and no refresh token
    /// (`nil` otherwise): `token` will exit 5 once it expires. It says what usually brings
    /// one: for Google (whose preset already sends `access_type=offline`), a new consent;
    /// elsewhere, the `offline_access` scope.
    static func missingRefreshTokenWarning(_ tokens: TokenSet, provider: String?, scopes: [String]) -> String? {
        guard tokens.refreshToken == nil, tokens.expiresAt != nil else { return nil }
        var text = "warning: the server issued no refresh token, so `oauth2 token` will exit 5 (sign in again) once this access token expires"
        if provider?.lowercased() == "google" {
            text += "; Google issues one only when the user consents: sign in again with --prompt consent"
        } else if provider == nil, !scopes.contains("offline_access") {
            text += "; many servers issue one only for the offline_access scope: sign in again with it in --scope"
        }
        return text + "."
    }

    /// The port and path of a loopback redirect URI.
    static func loopback(_ text: String) throws -> (port: Int, path: String) {
        guard let url = URL(string: text), url.scheme == "http", let host = url.host,
            ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
        else { throw ValidationError("--redirect-uri must be http://127.0.0.1:PORT/PATH (RFC 8252 loopback).") }
        return (url.port ?? 0, url.path.isEmpty ? "/" : url.path)
    }

    func run() async throws {
        let context = Context(global)
        if let resource, let url = try ResourceSignIn.url(resource, option: "--resource") {
            let named = global.profile ?? ProcessInfo.processInfo.environment["OAUTH2_PROFILE"].flatMap { $0.isEmpty ? nil : $0 }
            _ = try await resourceSignIn.run(context, resource: url, profile: named)
            return
        }
        if clientID == nil {
            if let existing = try context.profiles.load(context.profileName) { return try await run(context, profile: existing) }
            return try await register(context)
        }
        let scopes = try Self.scopes(scope, provider: provider)
        var parameters: [String: String] = [:]
        for param in params {
            let parts = param.split(separator: "=", maxSplits: 1)
            parameters[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        let (secret, secretFile) = try clientSecret.resolve()
        var profile = Profile(
            issuer: issuer, authorizationEndpoint: authorizationEndpoint, tokenEndpoint: tokenEndpoint,
            deviceAuthorizationEndpoint: deviceAuthorizationEndpoint, provider: provider, clientID: clientID ?? "", authMethod: auth.method,
            scopes: scopes, redirectURI: redirectURI,
            clientSecretFile: secretFile,
            grant: grantName, parameters: parameters, prompt: prompt, loginHint: loginHint,
            store: await context.storeKind(for: nil))
        var options = auth.profileOptions
        if par { options[ProfileOption.par] = "true" }
        profile.options = options
        try await run(context, profile: profile, secret: secret)
    }

    /// Signs in with the client of an existing profile; the options given on the command
    /// line replace the profile's.
    private func run(_ context: Context, profile existing: Profile) async throws {
        var profile = existing
        if let issuer { profile.issuer = issuer }
        if let method = auth.method { profile.authMethod = method }
        for (name, value) in auth.profileOptions { profile.options[name] = value }
        if par { profile.options[ProfileOption.par] = "true" }
        if let scope { profile.scopes = scope.split(separator: " ").map(String.init) }
        if let redirectURI { profile.redirectURI = redirectURI }
        if device || ciba || implicitResponseType != nil {
            profile.grant = grantName
        } else if profile.grant != "device", profile.grant != Profile.cibaGrant, !profile.isImplicit {
            profile.grant = "authorization_code"
        }
        if !params.isEmpty { profile.parameters = parameters }
        if let prompt { profile.prompt = prompt }
        if let loginHint { profile.loginHint = loginHint }
        if let store = global.store { profile.store = store }
        let given = try clientSecret.resolve()
        // A secret given now replaces the profile's: a regular file is remembered, any
        // other is kept with the tokens.
        if given.secret != nil { profile.clientSecretFile = given.rememberedFile }
        var secret = given.secret
        if secret == nil { secret = try await context.clientSecret(for: profile, store: try context.tokenStore(profile.store)) }
        try await run(context, profile: profile, secret: secret)
    }

    private var parameters: [String: String] {
        var parameters: [String: String] = [:]
        for param in params {
            let parts = param.split(separator: "=", maxSplits: 1)
            parameters[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return parameters
    }

    /// No client id and no profile: registers a client at the issuer's registration
    /// endpoint with the listener's redirect URI (RFC 7591), then signs in with it.
    private func register(_ context: Context) async throws {
        guard let issuer, let issuerURL = URL(string: issuer), provider == nil, tokenEndpoint == nil else {
            throw CLIError.usage("login needs --client-id, an existing profile, or --issuer of a server with a registration endpoint.")
        }
        guard implicitResponseType == nil else { throw CLIError.usage("--implicit needs --client-id (or an existing profile).") }
        guard !ciba else { throw CLIError.usage("--ciba needs --client-id (or an existing profile): CIBA clients are registered for it.") }
        guard !device else { throw CLIError.usage("--device needs --client-id (or a profile made by `oauth2 register --grant-type urn:ietf:params:oauth:grant-type:device_code`).") }
        let scopes = (scope ?? "openid profile").split(separator: " ").map(String.init)
        let registrar = try await ClientRegistrar(server: .issuer(issuerURL), environment: context.environment)
        guard registrar.metadata.registrationEndpoint != nil else {
            throw CLIError.usage("The issuer has no registration endpoint: give --client-id.")
        }
        let kind = await context.storeKind(for: nil)
        let store = try context.tokenStore(kind)
        var configuration = ClientConfiguration(clientID: "", scopes: scopes)
        configuration.additionalParameters[.authorization] = parameters.isEmpty ? nil : parameters
        let metadata = RegistrationMetadata(
            tokenEndpointAuthMethod: auth.method.map(ClientAuthenticationMethod.init(rawValue:)), clientName: "oauth2 CLI (\(context.profileName))")
        let (port, path) = try redirectURI.map(Self.loopback) ?? (0, "/callback")
        let signIn = LoopbackSignIn(port: port, callbackPath: path, timeout: .seconds(timeout), browser: noBrowser ? .none : .system)
        let result: (client: OAuth2Client, registration: ClientRegistration?, tokens: TokenSet)
        do {
            result = try await signIn.signIn(
                registrar: registrar, configuration: configuration, registering: metadata, store: store,
                options: AuthorizationOptions(
                    scopes: scopes, prompt: prompt.map { [$0] } ?? [], loginHint: loginHint,
                    authorizationDetails: try authorizationDetailsFile.map(AuthorizationDetailsArgument.load) ?? [], additionalParameters: parameters))
        } catch let error as OAuth2Error where error.code == .timeout && error.source == .client {
            throw CLIError(.cancelled, "The sign-in did not complete within \(timeout) s", hint: "run the command again (--timeout SECONDS waits longer)")
        }
        guard let registration = result.registration else { throw CLIError(.refused, "No client was registered.") }
        Output.step("Registered client \(registration.clientID) at \(issuer).")
        let profile = Profile(
            issuer: issuer, clientID: registration.clientID, authMethod: registration.metadata.tokenEndpointAuthMethod?.rawValue,
            scopes: scopes, redirectURI: result.client.configuration.redirectURI?.absoluteString, grant: "authorization_code",
            parameters: parameters, prompt: prompt, loginHint: loginHint, store: kind, options: ["registration": "dynamic"])
        try await context.saveSignIn(profile: profile, client: result.client, tokens: result.tokens, secret: registration.clientSecret)
        let who = result.tokens.idTokenClaims.map { " as \($0.subject)" } ?? ""
        Output.step("Signed in\(who); profile \"\(context.profileName)\" saved (\(kind.rawValue) store).")
    }

    private func run(_ context: Context, profile original: Profile, secret: String?) async throws {
        var profile = original
        let scopes = profile.scopes
        let parameters = profile.parameters
        let prompt = profile.prompt
        let loginHint = profile.loginHint
        let device = profile.grant == "device"
        let redirectURI = profile.redirectURI
        var client = try await context.client(for: profile, secret: secret)
        if let dpop {
            let key = try DPoPArgument.key(dpop, metadata: client.metadata)
            client = client.withDPoP(DPoPOptions(key: key))
            profile.options[ProfileOption.dpop] = key.algorithm.rawValue
        }
        let details = try authorizationDetailsFile.map(AuthorizationDetailsArgument.load) ?? []
        let tokens: TokenSet
        let implicitType: ImplicitResponseType? =
            profile.grant == Profile.implicitGrant ? .token : profile.grant == Profile.implicitIDTokenGrant ? .idTokenToken : nil
        do {
            if let implicitType {
                Output.error(
                    "warning: the implicit grant is deprecated (RFC 9700 §2.1.2): the access token travels in the browser's address, "
                        + "and there is no refresh token (sign in again when it expires). Use it only if the server offers no code flow.")
                let (port, path) = try redirectURI.map(Self.loopback) ?? (0, "/callback")
                let signIn = LoopbackSignIn(port: port, callbackPath: path, timeout: .seconds(timeout), browser: noBrowser ? .none : .system)
                tokens = try await (signIn as any ImplicitSigningIn).implicitSignIn(
                    client: client, responseType: implicitType,
                    options: AuthorizationOptions(scopes: scopes, prompt: prompt.map { [$0] } ?? [], loginHint: loginHint, additionalParameters: parameters))
            } else if profile.grant == Profile.cibaGrant {
                guard let loginHint, !loginHint.isEmpty else {
                    throw CLIError.usage("--ciba needs --login-hint: the user the server asks to approve.")
                }
                let request = BackchannelAuthenticationRequest(
                    hint: .loginHint(loginHint), scopes: scopes, bindingMessage: bindingMessage ?? BackchannelSignIn.randomBindingMessage(),
                    additionalParameters: parameters)
                tokens = try await BackchannelSignIn(timeout: .seconds(timeout)).signIn(client: client, request: request)
            } else if device {
                let signIn = DeviceSignIn(browser: openBrowser ? .system : .none, timeout: .seconds(timeout))
                var deviceParameters = parameters
                if !details.isEmpty { deviceParameters["authorization_details"] = try AuthorizationDetail.parameter(details) }
                tokens = try await signIn.signIn(client: client, scopes: scopes, additionalParameters: deviceParameters)
            } else {
                let (port, path) = try redirectURI.map(Self.loopback) ?? (0, "/callback")
                let signIn = LoopbackSignIn(port: port, callbackPath: path, timeout: .seconds(timeout), browser: noBrowser ? .none : .system)
                tokens = try await signIn.signIn(client: client, options: AuthorizationOptions(
                    scopes: scopes, prompt: prompt.map { [$0] } ?? [], loginHint: loginHint, authorizationDetails: details,
                    additionalParameters: parameters))
            }
        } catch let error as OAuth2Error where error.code == .timeout && error.source == .client {
            throw CLIError(.cancelled, "The sign-in did not complete within \(timeout) s", hint: "run the command again (--timeout SECONDS waits longer)")
        }
        try await context.saveSignIn(profile: profile, client: client, tokens: tokens, secret: secret)
        let who = tokens.idTokenClaims.map { " as \($0.subject)" } ?? ""
        Output.step("Signed in\(who); profile \"\(context.profileName)\" saved (\(profile.store.rawValue) store).")
        if implicitType == nil, let warning = Self.missingRefreshTokenWarning(tokens, provider: profile.provider, scopes: scopes) {
            Output.error(warning)
        }
    }
}

/// The library's implicit sign-in, which is deprecated so that no program uses it by
/// accident. `login` calls it through this protocol only on the user's explicit
/// `--implicit` (after printing the warning), so the build stays free of warnings.
private protocol ImplicitSigningIn {
    func implicitSignIn(client: OAuth2Client, responseType: ImplicitResponseType, options: AuthorizationOptions) async throws -> TokenSet
}

extension LoopbackSignIn: ImplicitSigningIn {}
