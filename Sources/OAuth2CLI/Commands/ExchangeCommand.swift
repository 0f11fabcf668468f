import ArgumentParser
import Foundation
import OAuth2

struct ExchangeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exchange",
        abstract: "Exchange a token for another (RFC 8693 token exchange) and print the issued token.",
        discussion: """
            The profile's client makes the request. The subject is --subject-token-file, or --subject-token (\"-\" reads it from stdin), \
            or, without it, the profile's current access token (refreshed first when needed). Token types take \
            a URI or a short name: access_token, refresh_token, id_token, jwt, saml1, saml2 (or another name \
            after urn:ietf:params:oauth:token-type:).

            Prints the issued token; with --json, the issued token type, token type, expiry and scopes too. \
            Nothing is stored: the issued token is for another audience, and the profile keeps its own tokens.

              oauth2 exchange --audience https://backend.example.com
              oauth2 exchange --subject-token-file token.jwt --subject-token-type jwt \\
                  --requested-token-type access_token
              printf %s "$TOKEN" | oauth2 exchange --subject-token - \\
                  --subject-token-type jwt
            """)

    @OptionGroup var global: GlobalOptions
    @Option(name: .customLong("subject-token"), help: "The subject token, or - to read it from stdin (default: the profile's access token). Prefer - or --subject-token-file: a token on the command line shows in ps and shell history.")
    var subjectToken: String?
    @Option(name: .customLong("subject-token-file"), help: ArgumentHelp("A file holding the subject token (any readable path, a pipe included).", valueName: "file"))
    var subjectTokenFile: String?
    @Option(name: .customLong("subject-token-type"), help: "The subject token's type (default: access_token).")
    var subjectTokenType: String?
    @Option(name: .customLong("actor-token"), help: "An actor token (delegation), or - to read it from stdin. Prefer - or --actor-token-file.")
    var actorToken: String?
    @Option(name: .customLong("actor-token-file"), help: ArgumentHelp("A file holding the actor token (any readable path, a pipe included).", valueName: "file"))
    var actorTokenFile: String?
    @Option(name: .customLong("actor-token-type"), help: "The actor token's type (required with --actor-token).")
    var actorTokenType: String?
    @Option(help: "A logical name of the target service (repeatable).") var audience: [String] = []
    @Option(help: "An absolute URI of the target service (repeatable).") var resource: [String] = []
    @Option(name: .customLong("requested-token-type"), help: "The type of token wanted.") var requestedTokenType: String?
    @Option(help: "Space-separated scopes.") var scope: String?

    func validate() throws {
        if subjectToken == "-", actorToken == "-" { throw ValidationError("Only one of --subject-token and --actor-token can read stdin.") }
        if subjectToken != nil, subjectTokenFile != nil { throw ValidationError("Give --subject-token or --subject-token-file, not both.") }
        if actorToken != nil, actorTokenFile != nil { throw ValidationError("Give --actor-token or --actor-token-file, not both.") }
        if (actorToken == nil && actorTokenFile == nil) != (actorTokenType == nil) {
            throw ValidationError("--actor-token (or --actor-token-file) and --actor-token-type go together.")
        }
        if subjectToken == nil, subjectTokenFile == nil, subjectTokenType != nil, Self.type(subjectTokenType!) != .accessToken {
            throw ValidationError("Without --subject-token the subject is the profile's access token: --subject-token-type must be access_token.")
        }
        for (name, value) in [("--subject-token-type", subjectTokenType), ("--actor-token-type", actorTokenType), ("--requested-token-type", requestedTokenType)] {
            if let value, Self.type(value) == nil { throw ValidationError("\(name) \(value) is neither a token type URI nor a short name.") }
        }
        for value in resource {
            guard let url = URL(string: value), url.scheme != nil, url.fragment == nil else {
                throw ValidationError("--resource \(value) is not an absolute URI without a fragment.")
            }
        }
        if audience.contains("") { throw ValidationError("--audience must not be empty.") }
    }

    static func type(_ name: String) -> TokenTypeURI? { TokenTypeURI(name: name) }

    func run() async throws {
        let (_, session) = try await Context(global).session()
        let subject: TokenExchangeRequest.Token
        if let given = try Self.token(subjectToken, file: subjectTokenFile, option: "--subject-token") {
            subject = .init(given, type: Self.type(subjectTokenType ?? "access_token")!)
        } else {
            subject = .init(try await session.freshAccessToken(), type: .accessToken)
        }
        let actor = try Self.token(actorToken, file: actorTokenFile, option: "--actor-token").map {
            TokenExchangeRequest.Token($0, type: Self.type(actorTokenType!)!)
        }
        let request = TokenExchangeRequest(
            subject: subject, actor: actor, resources: resource.compactMap(URL.init(string:)), audiences: audience,
            scopes: scope.map { $0.split(separator: " ").map(String.init) } ?? [],
            requestedTokenType: requestedTokenType.flatMap(Self.type))
        let answer = try await session.client.exchangeToken(request)
        guard global.json else {
            Output.result(answer.issuedToken)
            return
        }
        var object: [String: JSONValue] = [
            "access_token": .string(answer.issuedToken), "issued_token_type": .string(answer.issuedTokenType.rawValue),
        ]
        if let tokenType = answer.tokenType { object["token_type"] = .string(tokenType) }
        if let expiresAt = answer.expiresAt {
            object["expires_at"] = .string(ISO8601DateFormatter().string(from: expiresAt))
            object["expires_in"] = .integer(Int64(max(0, expiresAt.timeIntervalSinceNow).rounded()))
        }
        if let scopes = answer.scopes { object["scope"] = .string(scopes.joined(separator: " ")) }
        if answer.refreshToken != nil { object["refresh_token"] = .string(answer.refreshToken!) }
        Output.json(.object(object))
    }

    /// A token from its options: the file's, stdin's for `-`, or the value itself (warned).
    static func token(_ value: String?, file: String?, option: String) throws -> String? {
        if let file { return try SecretInput.read(file: file, what: "The \(option)-file") }
        return try value.map { try SecretInput.value($0, option: option, instead: "\(option) - or \(option)-file FILE") }
    }
}
