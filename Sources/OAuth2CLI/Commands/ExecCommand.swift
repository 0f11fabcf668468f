import ArgumentParser
import Foundation
import OAuth2

/// `oauth2 exec -- COMMAND [ARGUMENTS…]`: the command replaces the tool, with a fresh
/// access token in an environment variable.
struct ExecCommand: AsyncParsableCommand, AnswersFromStore {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Run a command with a fresh access token in an environment variable (never on a command line).",
        discussion: """
            The token is renewed first when it needs to be (as `oauth2 token` does), then COMMAND replaces this \
            process: its exit status is the command's, and `ps` shows only the command and its own arguments. \
            The variable is OAUTH2_ACCESS_TOKEN unless --env-var names another:
              oauth2 exec -- sh -c 'curl -H "Authorization: Bearer $OAUTH2_ACCESS_TOKEN" …'
              oauth2 --profile gh exec --env-var GH_TOKEN -- gh api user

            Exit status: the command's; 127 when it is not found, 126 when it cannot be run; the tool's own \
            codes (2 usage, 3 transient, 5 sign in again…) when no token could be had.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(
        name: .customLong("env-var"),
        help: ArgumentHelp("The environment variable that holds the token.", valueName: "name"))
    var envVar = TokenOutput.defaultVariable
    /// Everything from the first argument that is not one of the tool's options: the
    /// command's own options stay the command's (`oauth2 exec gh api user --paginate`).
    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("The command and its arguments (after --, or the first argument that is not an option).", valueName: "command"))
    var captured: [String] = []

    /// The command and its arguments: ``captured`` without the `--` that may stand before it.
    var command: [String] { captured.first == "--" ? Array(captured.dropFirst()) : captured }

    func validate() throws {
        // Passthrough parsing hands over options it does not know, before the command too.
        if let first = captured.first, first != "--", first.hasPrefix("-") {
            if first == "--help" || first == "-h" { throw CleanExit.helpRequest(self) }
            throw ValidationError("Unknown option '\(first)'; the command goes after --.")
        }
        guard TokenOutput.isVariableName(envVar) else {
            throw ValidationError("--env-var takes a variable name: letters, digits and _, not starting with a digit (got \"\(envVar)\").")
        }
        guard let name = command.first, !name.isEmpty else {
            throw ValidationError("oauth2 exec needs a command after --: oauth2 exec [--env-var NAME] -- COMMAND [ARGUMENTS…]")
        }
    }

    func run() async throws {
        let tokens = try await Context(global).freshTokens()
        replace(with: tokens)
    }

    /// A valid token in the file store: the command starts at once, from the main thread.
    func answerFromStore() -> ExitStatus? {
        guard let tokens = Context(global).storedFreshTokens() else { return nil }
        replace(with: tokens)
    }

    /// Replaces the process with the command; exits 127 or 126 with a sentence on stderr
    /// when it cannot be started.
    private func replace(with tokens: TokenSet) -> Never {
        let failure = ProcessReplacement.exec(command, setting: envVar, to: tokens.accessToken)
        Output.error("oauth2: \(failure.message); check the command's name and PATH")
        Foundation.exit(failure.status)
    }
}
