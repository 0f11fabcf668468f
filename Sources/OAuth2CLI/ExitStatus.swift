import ArgumentParser
import Foundation
import OAuth2

#if Postgres
import OAuth2Postgres
#endif

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
        #if Postgres
        case let error as PostgresTokenStoreError:
            self = error.code == .invalidConfiguration ? .usage : error.isTransient ? .transient : .refused
        #endif
        default: self = .refused
        }
    }

    /// A one-line description of an error for stderr: a sentence and a hint
    /// (``ErrorReport``), never a type name.
    static func describe(_ error: any Error) -> String { ErrorReport(error).line }
}
