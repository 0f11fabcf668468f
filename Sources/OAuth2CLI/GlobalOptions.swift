import ArgumentParser
import Foundation
import Logging
import OAuth2

/// Where tokens are kept.
enum StoreKind: String, ExpressibleByArgument, Codable, CaseIterable {
    case keyring, file, memory
    /// PostgreSQL (`OAUTH2_POSTGRES_URL`, `OAUTH2_POSTGRES_KEYS`), shared by every machine
    /// that reaches it; in a build with the Postgres trait.
    case postgres
}

/// Options every command takes, before or after its name.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The profile to use (env OAUTH2_PROFILE; default: default).")
    var profile: String?

    @Option(name: .customLong("config-dir"), help: "Profiles and the file store (env OAUTH2_CONFIG_DIR; default $XDG_CONFIG_HOME/oauth2 or ~/.config/oauth2).")
    var configDir: String?

    @Option(name: .long, help: "Where tokens are kept: keyring, file, memory or postgres (default: the profile's, else keyring when available, else file).")
    var store: StoreKind?

    @Flag(name: .long, help: "JSON output.")
    var json = false

    @Flag(name: .customShort("v"), help: "Log to stderr, tokens redacted (-vv: trace).")
    var verbosity: Int

    @Option(name: .customLong("http-timeout"), help: ArgumentHelp("The most seconds one exchange with a server may take, all of it (default 30).", valueName: "seconds"))
    var httpTimeout: Int?

    /// Options that take a value, and flags, that may stand before the command name.
    static let valued: Set<String> = ["--profile", "--config-dir", "--store", "--http-timeout"]
    static let flags: Set<String> = ["--json", "-v", "-vv", "-vvv"]

    /// Moves global options written before the command name after it, where every
    /// subcommand parses them (`oauth2 --profile work token` = `oauth2 token --profile work`).
    static func hoisted(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if valued.contains(name) {
                leading.append(argument)
                if !argument.contains("="), index + 1 < arguments.count {
                    leading.append(arguments[index + 1])
                    index += 1
                }
                index += 1
            } else if flags.contains(argument) {
                leading.append(argument)
                index += 1
            } else {
                break
            }
        }
        guard index < arguments.count, !leading.isEmpty else { return arguments }
        return [arguments[index]] + leading + arguments[(index + 1)...]
    }

    /// The deadline of each exchange: `--http-timeout`, else the library's (30 s).
    var requestDeadline: Duration {
        httpTimeout.map { .seconds($0) } ?? HTTPEnvironment.defaultRequestDeadline
    }

    /// Refuses an `--http-timeout` that is not a positive number of seconds.
    func validateHTTPTimeout() throws {
        if let httpTimeout, httpTimeout <= 0 { throw ValidationError("--http-timeout must be a positive number of seconds.") }
    }

    var profileName: String {
        profile ?? ProcessInfo.processInfo.environment["OAUTH2_PROFILE"] ?? "default"
    }

    var configDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        if let configDir { return URL(fileURLWithPath: configDir) }
        if let dir = environment["OAUTH2_CONFIG_DIR"], !dir.isEmpty { return URL(fileURLWithPath: dir) }
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("oauth2")
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config/oauth2")
    }

    /// A logger to stderr at the -v level; silent without -v. The library redacts tokens.
    var logger: Logger {
        var logger = Logger(label: "oauth2") { label in StreamLogHandler.standardError(label: label) }
        switch verbosity {
        case 0: logger.logLevel = .critical
        case 1: logger.logLevel = .debug
        default: logger.logLevel = .trace
        }
        return logger
    }
}
