import ArgumentParser
import Foundation
import OAuth2

struct IntrospectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "introspect", abstract: "Ask the server whether a token is active (RFC 7662); prints JSON.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "access, refresh, - (a token read from stdin), or a token value (default: access; a value shows in ps: prefer -).") var token = "access"

    func run() async throws {
        let (_, session) = try await Context(global).session()
        let tokens = try await session.freshTokens()
        let value: String
        let hint: TokenTypeHint?
        switch token {
        case "access": (value, hint) = (tokens.accessToken, .accessToken)
        case "refresh":
            guard let refresh = tokens.refreshToken else { throw CLIError(.refused, "The profile has no refresh token.") }
            (value, hint) = (refresh, .refreshToken)
        default:
            (value, hint) = (try SecretInput.value(token, option: "--token", instead: "--token - (stdin)"), nil)
        }
        let response = try await session.client.introspect(value, hint: hint)
        Output.json(.object(response.fields))
    }
}
