import ArgumentParser
import Foundation
import OAuth2

struct TokenCommand: AsyncParsableCommand, AnswersFromStore {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a valid access token (refreshing first when needed); safe to run from many processes at once.",
        discussion: """
            With --grant client_credentials, password or jwt-bearer, make and save a machine profile first:
              oauth2 token --grant client_credentials --issuer URL --client-id ID \\
                  --client-secret-file F [--scope S]
              oauth2 token --grant password --issuer URL --client-id ID \\
                  [--client-secret-file F] --username U --password-stdin
              oauth2 token --grant client_credentials --issuer URL --client-id ID \\
                  --private-key KEY.pem [--dpop]
              oauth2 token --grant jwt-bearer --issuer URL --client-id ID \\
                  [--client-secret-file F] --assertion FILE|-
              oauth2 token --grant jwt-bearer --issuer URL --client-id ID \\
                  [--client-secret-file F] --assertion-key KEY \\
                  --assertion-issuer ISS --assertion-subject SUB [--assertion-key-id KID]

            --format header prints `Authorization: Bearer …` (`DPoP …` for a DPoP-bound token), json an object \
            with access_token, token_type, expires_at (RFC 3339) and scope, env a shell-quoted line \
            OAUTH2_ACCESS_TOKEN='…' (--env-var names another variable). A valid token in the file store is \
            answered from it, starting nothing else.

            The JWT bearer grant (RFC 7523 §2.1) presents an assertion from a file (- reads stdin), or one signed \
            here with --assertion-key (PEM or JWK; aud is the issuer, valid 60 s). It gives no refresh token: run it \
            again when the token expires. (--private-key is the client's own key, for private_key_jwt.)
            """)

    enum MachineGrant: String, ExpressibleByArgument {
        case clientCredentials = "client_credentials", password, jwtBearer = "jwt-bearer"
    }

    @OptionGroup var global: GlobalOptions
    @Flag(name: .customLong("force-refresh"), help: "Refresh even if the token is still valid.") var forceRefresh = false
    @Option(help: "What to print: bare (the token; default), header, json or env.") var format: TokenOutput = .bare
    @Option(
        name: .customLong("env-var"),
        help: ArgumentHelp("The variable --format env sets (default \(TokenOutput.defaultVariable)).", valueName: "name"))
    var envVar: String?
    @Option(help: "Make a machine profile with this grant: client_credentials, password or jwt-bearer.") var grant: MachineGrant?
    @Option(help: "The issuer (with --grant).") var issuer: String?
    @Option(help: "A provider preset instead of --issuer (with --grant).") var provider: String?
    @Option(name: .customLong("token-endpoint"), help: "The token endpoint, for servers without discovery.") var tokenEndpoint: String?
    @Option(name: .customLong("client-id")) var clientID: String?
    @OptionGroup var clientSecret: ClientSecretOptions
    @OptionGroup var auth: ClientAuthOptions
    @Option(help: DPoPArgument.help) var dpop: String?
    @Option(help: "Space-separated scopes.") var scope: String?
    @Option(help: "The user name (--grant password).") var username: String?
    @Flag(name: .customLong("password-stdin"), help: "Read the password from stdin (--grant password).") var passwordStdin = false
    @Option(help: "A file holding the assertion, or - for stdin (--grant jwt-bearer).") var assertion: String?
    @Option(
        name: .customLong("assertion-key"),
        help: ArgumentHelp("A private key (PEM or JWK file) to sign the grant's assertion with (--grant jwt-bearer).", valueName: "file"))
    var assertionKey: String?
    @Option(
        name: .customLong("assertion-key-id"),
        help: ArgumentHelp("The kid of the signed assertion's header (default: the JWK's own).", valueName: "kid"))
    var assertionKeyID: String?
    @Option(name: .customLong("assertion-issuer"), help: "The signed assertion's iss (--assertion-key).") var assertionIssuer: String?
    @Option(name: .customLong("assertion-subject"), help: "The signed assertion's sub (--assertion-key).") var assertionSubject: String?

    func validate() throws {
        if let envVar {
            guard format == .env else { throw ValidationError("--env-var goes with --format env.") }
            guard TokenOutput.isVariableName(envVar) else {
                throw ValidationError("--env-var takes a variable name: letters, digits and _, not starting with a digit (got \"\(envVar)\").")
            }
        }
        if grant == nil {
            let machineOnly: [(String, Bool)] = [
                ("--issuer", issuer != nil), ("--client-id", clientID != nil), ("--client-secret…", clientSecret.isGiven),
                ("--username", username != nil), ("--password-stdin", passwordStdin), ("--token-endpoint", tokenEndpoint != nil),
                ("--auth-method", auth.authMethod != nil), ("--private-key", auth.privateKey != nil), ("--dpop", dpop != nil),
                ("--client-certificate", auth.clientCertificate != nil),
                ("--assertion", assertion != nil), ("--assertion-key", assertionKey != nil),
            ]
            if let (name, _) = machineOnly.first(where: \.1) { throw ValidationError("\(name) goes with --grant.") }
            return
        }
        guard issuer != nil || tokenEndpoint != nil || provider != nil else {
            throw ValidationError("--grant needs --issuer, --provider or --token-endpoint.")
        }
        guard clientID != nil else { throw ValidationError("--grant needs --client-id.") }
        if grant == .clientCredentials, auth.needsSecret, !clientSecret.isGiven {
            throw ValidationError("--grant client_credentials needs --client-secret-file, --client-secret-stdin, --client-secret or --private-key.")
        }
        if auth.authMethod == "client_secret_jwt", !clientSecret.isGiven {
            throw ValidationError("--auth-method client_secret_jwt needs --client-secret-file, --client-secret-stdin or --client-secret.")
        }
        if clientSecret.stdin, passwordStdin || assertion == "-" {
            throw ValidationError("Only one of --client-secret-stdin, --password-stdin and --assertion - can read stdin.")
        }
        try DPoPArgument.validate(dpop)
        if grant == .password, username == nil || !passwordStdin {
            throw ValidationError("--grant password needs --username and --password-stdin.")
        }
        if grant == .jwtBearer {
            guard (assertion == nil) != (assertionKey == nil) else {
                throw ValidationError("--grant jwt-bearer needs --assertion FILE|- or --assertion-key KEY (one of them).")
            }
            if assertionKey != nil, assertionIssuer == nil || assertionSubject == nil {
                throw ValidationError("--assertion-key needs --assertion-issuer and --assertion-subject.")
            }
        } else if assertion != nil || assertionKey != nil {
            throw ValidationError("--assertion and --assertion-key go with --grant jwt-bearer.")
        }
        if assertionKeyID != nil, assertionKey == nil { throw ValidationError("--assertion-key-id goes with --assertion-key.") }
    }

    func run() async throws {
        if grant == nil, let socket = AgentClient.configuredSocket {
            // OAUTH2_AGENT_SOCK: the agent answers; no store is opened here.
            if forceRefresh {
                throw CLIError.usage("--force-refresh does not go through the agent", hint: "unset \(AgentSocketPath.environmentVariable) to refresh from the store")
            }
            Output.result(try AgentClient.accessToken(profile: global.profileName, socket: socket).accessToken)
            return
        }
        let context = Context(global)
        if let grant {
            try await machineSignIn(grant, context: context)
            return
        }
        show(try await context.freshTokens(forceRefresh: forceRefresh))
    }

    /// A valid token in the file store, printed without a client, a session or a thread.
    func answerFromStore() -> ExitStatus? {
        guard grant == nil, !forceRefresh, let tokens = Context(global).storedFreshTokens() else { return nil }
        show(tokens)
        return .success
    }

    private func show(_ tokens: TokenSet) {
        Output.result(format.render(tokens, variable: envVar ?? TokenOutput.defaultVariable))
    }

    private func machineSignIn(_ grant: MachineGrant, context: Context) async throws {
        let (secret, secretFile) = try clientSecret.resolve()
        let scopes = scope.map { $0.split(separator: " ").map(String.init) } ?? []
        var profile = Profile(
            issuer: issuer, tokenEndpoint: tokenEndpoint, provider: provider, clientID: clientID!, authMethod: auth.method, scopes: scopes,
            clientSecretFile: secretFile,
            grant: grant.rawValue, store: await context.storeKind(for: nil), options: auth.profileOptions)
        // A store that cannot be opened (PostgreSQL without its settings) fails before any request.
        _ = try context.tokenStore(profile.store)
        var client = try await context.client(for: profile, secret: secret)
        if let dpop {
            let key = try DPoPArgument.key(dpop, metadata: client.metadata)
            client = client.withDPoP(DPoPOptions(key: key))
            profile.options[ProfileOption.dpop] = key.algorithm.rawValue
        }
        let tokens: TokenSet
        switch grant {
        case .clientCredentials:
            tokens = try await client.clientCredentials(scopes: scopes)
        case .password:
            let password = readLine(strippingNewline: true) ?? ""
            guard !password.isEmpty else { throw CLIError.usage("--password-stdin read an empty password.") }
            tokens = try await client.password(username: username!, password: password, scopes: scopes)
        case .jwtBearer:
            if let assertion {
                let text: String
                if assertion == "-" {
                    text = try SecretInput.readStandardInput(for: "--assertion -")
                } else {
                    text = try SecretInput.read(file: assertion, what: "The assertion file")
                }
                tokens = try await client.jwtBearer(assertion: text, scopes: scopes)
            } else {
                let key: JWSSigningKey
                do {
                    key = try JWSSigningKey(contentsOf: URL(fileURLWithPath: assertionKey!), keyID: assertionKeyID)
                } catch {
                    throw CLIError.usage("--assertion-key is not usable: \(ErrorReport.reason(error))")
                }
                let claims = client.jwtBearerAssertion(issuer: assertionIssuer!, subject: assertionSubject!)
                tokens = try await client.jwtBearer(signing: claims, with: key, scopes: scopes)
            }
        }
        try await context.saveSignIn(profile: profile, client: client, tokens: tokens, secret: secret)
        show(tokens)
    }
}
