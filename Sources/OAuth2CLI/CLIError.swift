import ArgumentParser
import Foundation
import OAuth2

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
