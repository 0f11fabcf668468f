import Foundation
import OAuth2Internals
import OAuth2JOSE

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where sign-in front ends write what the user reads: instructions, the URL, the QR
/// code, the countdown.
///
/// Only user-facing text goes here — a URL to open, a user code to type — never a token,
/// an authorization code or a device code.
public protocol TerminalOutput: Sendable {
    /// Writes `text` as it is (add the newlines you want).
    func write(_ text: String)
    /// `true` when the text goes to a terminal, where a status line can be redrawn in
    /// place and a QR code makes sense.
    var isTerminal: Bool { get }
}

/// Standard error: where a command-line tool talks to its user while standard output
/// carries its result.
public struct StandardErrorOutput: TerminalOutput {
    /// Creates the output.
    public init() {}

    /// Writes to file descriptor 2.
    public func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// `true` when standard error is a terminal (and `TERM` is not `dumb`).
    public var isTerminal: Bool {
        isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }
}

/// A line at the bottom of a terminal that is redrawn in place (a countdown), with
/// messages printed above it; on anything else, only the messages are written.
final class StatusLine: Sendable {
    private let output: any TerminalOutput
    /// The status line's text and whether it is finished.
    private struct State {
        var line = ""
        var finished = false
    }

    private let state = Locked(State())

    init(output: any TerminalOutput) { self.output = output }

    /// Replaces the status line (terminals only; nothing once finished).
    func update(_ text: String) {
        guard output.isTerminal else { return }
        state.withLock { state in
            guard !state.finished else { return }
            state.line = text
            output.write("\r\u{1B}[2K" + text)
        }
    }

    /// Prints a message on its own line, then redraws the status line below it.
    func message(_ text: String) {
        state.withLock { state in
            if output.isTerminal, !state.line.isEmpty {
                output.write("\r\u{1B}[2K" + text + "\n" + state.line)
            } else {
                output.write(text + "\n")
            }
        }
    }

    /// Removes the status line for good: later updates are ignored.
    func finish() {
        state.withLock { state in
            if output.isTerminal, !state.line.isEmpty { output.write("\r\u{1B}[2K") }
            state.line = ""
            state.finished = true
        }
    }
}
