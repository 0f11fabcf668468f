import ArgumentParser
import Foundation
import OAuth2

/// The tool's exit codes (README: "Exit codes").
enum ExitStatus: Int32 {
    /// Success.
    case success = 0
    /// The server refused (an OAuth error), a validation failed, or `request` ended with a 4xx.
    case refused = 1
    /// A usage error.
    case usage = 2
    /// Network failure, timeout, HTTP 5xx or 429.
    case transient = 3
    /// Ctrl-C, or the sign-in wait ran out.
    case cancelled = 4
    /// No stored sign-in, or the refresh token was refused.
    case signInAgain = 5

    init(_ error: any Error) {
        switch error {
        case let error as CLIError: self = error.status
        case let error as OAuth2Error:
            if error.code == .signInRequired {
                self = .signInAgain
            } else if error.code == .cancelled || (error.code == .timeout && error.source == .client) {
                // Ctrl-C, or a wait for the user (browser, device approval) that ran out.
                self = .cancelled
            } else if error.isTransient || error.source == .transport {
                self = .transient
            } else {
                self = .refused
            }
        case is CancellationError: self = .cancelled
        case is ValidationError: self = .usage
        default: self = .refused
        }
    }

    /// A one-line description of an error for stderr: a sentence and a hint
    /// (``ErrorReport``), never a type name.
    static func describe(_ error: any Error) -> String { ErrorReport(error).line }
}

/// An error of the tool itself, with its exit status: what happened, and what to do.
struct CLIError: Error, CustomStringConvertible {
    var status: ExitStatus
    var message: String
    var hint: String?

    init(_ status: ExitStatus, _ message: String, hint: String? = nil) {
        self.status = status
        self.message = message
        self.hint = hint
    }

    var description: String { hint.map { "\(message); \($0)" } ?? message }

    static func usage(_ message: String, hint: String? = nil) -> CLIError { CLIError(.usage, message, hint: hint) }
    static func signInAgain(_ message: String, hint: String? = nil) -> CLIError { CLIError(.signInAgain, message, hint: hint) }
}

/// Where output goes: results on stdout, everything else on stderr.
enum Output {
    /// A result line on stdout.
    static func result(_ text: String) {
        FileHandle.standardOutput.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
    }

    /// Raw bytes on stdout (a response body).
    static func raw(_ data: Data) { FileHandle.standardOutput.write(data) }

    /// Progress, steps and prompts on stderr.
    static func step(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

    /// An error on stderr.
    static func error(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }

    /// A JSON document on stdout, keys sorted.
    static func json(_ value: JSONValue) { result(pretty(value)) }

    static func pretty(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? value.description
    }
}
