import ArgumentParser
import Foundation
import OAuth2
import OAuth2Internals
import OAuth2JOSE

/// The root command.
struct OAuth2Command: AsyncParsableCommand {
    /// The tool's version, printed by `oauth2 --version`. Bump it here (and only here) when
    /// a release is tagged.
    static let version = "1.0.0"

    static let configuration = CommandConfiguration(
        commandName: "oauth2",
        abstract: "An OAuth 2.0 and OpenID Connect client: sign in, get tokens, call APIs.",
        discussion: """
            Global options (--profile, --config-dir, --store, --json, -v, --http-timeout) go before or after the command.

            Exit codes: 0 success, 1 refused, 2 usage, 3 transient failure, 4 cancelled or timed out, 5 sign in again.

            Shell completions: `oauth2 --generate-completion-script bash` (or zsh, fish).
            """,
        version: "oauth2 \(version)",
        subcommands: [
            DiscoverCommand.self, LoginCommand.self, TokenCommand.self, UserInfoCommand.self, RequestCommand.self,
            IntrospectCommand.self, RevokeCommand.self, ExchangeCommand.self, LogoutCommand.self, StatusCommand.self, DecodeCommand.self,
            DemoCommand.self, RegisterCommand.self, ExecCommand.self, GitCredentialCommand.self, KubectlCredentialCommand.self,
            AgentCommand.self,
        ]
    )
}

/// Runs the tool: parses, runs the command under a Ctrl-C handler, maps every outcome to
/// an exit status and prints errors on stderr.
enum CLI {
    static func run(_ arguments: [String]) async -> ExitStatus {
        let command: any ParsableCommand
        do {
            command = try OAuth2Command.parseAsRoot(arguments)
        } catch {
            let code = OAuth2Command.exitCode(for: error)
            let message = OAuth2Command.fullMessage(for: error)
            if code == .success {
                print(message)
                return .success
            }
            Output.error(message)
            return .usage
        }
        guard var asyncCommand = command as? any AsyncParsableCommand else {
            // ArgumentParser answers `--help` and `help COMMAND` with its own (synchronous)
            // help command, whose run throws the help "error": print it, exit 0.
            var command = command
            do {
                try command.run()
            } catch where OAuth2Command.exitCode(for: error) == .success {
                print(OAuth2Command.fullMessage(for: error))
            } catch {
                return report(error, Reporting())
            }
            return .success
        }
        // The command's options are read inside the task, which owns the command.
        let reporting = Locked(Reporting())
        let task = Task { () async throws -> Void in
            let global = (asyncCommand as? any TakesGlobalOptions)?.global
            reporting.withLock { $0 = Reporting(global) }
            // --http-timeout bounds every exchange of the command (Context.environment).
            try global?.validateHTTPTimeout()
            try await asyncCommand.run()
        }
        let interrupt = Interrupt.onSIGINT { task.cancel() }
        defer { interrupt.cancel() }
        do {
            try await task.value
            return .success
        } catch {
            return report(error, reporting.withLock { $0 })
        }
    }

    /// What the error report needs of the global options.
    struct Reporting: Sendable {
        var profile: String?
        var httpTimeout: Int?
        var verbose = false

        init(_ global: GlobalOptions? = nil) {
            profile = global?.profileName
            httpTimeout = global?.httpTimeout
            verbose = (global?.verbosity ?? 0) > 0
        }
    }

    /// Prints the error as a sentence and a hint (``ErrorReport``; with -v, its details
    /// below) and returns its status. Never a secret: errors carry none.
    static func report(_ error: any Error, _ reporting: Reporting) -> ExitStatus {
        let status = ExitStatus(error)
        if let exit = error as? ExitCode {
            return ExitStatus(rawValue: exit.rawValue) ?? .refused
        }
        let situation = ErrorReport.Situation(
            host: HostRecordingTransport.lastHost.withLock { $0 }, profile: reporting.profile, httpTimeout: reporting.httpTimeout)
        for line in ErrorReport(error, situation).lines(verbose: reporting.verbose) { Output.error(line) }
        return status
    }
}

/// A command with the global options (all of them).
protocol TakesGlobalOptions {
    var global: GlobalOptions { get }
}

extension AgentCommand: TakesGlobalOptions {}
extension DecodeCommand: TakesGlobalOptions {}
extension DemoCommand: TakesGlobalOptions {}
extension DiscoverCommand: TakesGlobalOptions {}
extension ExchangeCommand: TakesGlobalOptions {}
extension ExecCommand: TakesGlobalOptions {}
extension IntrospectCommand: TakesGlobalOptions {}
extension LoginCommand: TakesGlobalOptions {}
extension LogoutCommand: TakesGlobalOptions {}
extension RegisterCommand: TakesGlobalOptions {}
extension RequestCommand: TakesGlobalOptions {}
extension RevokeCommand: TakesGlobalOptions {}
extension StatusCommand: TakesGlobalOptions {}
extension TokenCommand: TakesGlobalOptions {}
extension UserInfoCommand: TakesGlobalOptions {}

/// Cancels work on Ctrl-C.
final class Interrupt: @unchecked Sendable {
    private let source: any DispatchSourceSignal

    private init(_ handler: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler(handler: handler)
        source.resume()
    }

    static func onSIGINT(_ handler: @escaping @Sendable () -> Void) -> Interrupt { Interrupt(handler) }

    func cancel() {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
