import Foundation

/// Where the tool reads a secret given to it — a client secret, a token to exchange, a JWT
/// to decode: from a file, from stdin, or from the command line.
///
/// A file is read through a `FileHandle` until its end, so any readable path works: a
/// regular file, a FIFO, `/dev/stdin`, or a pipe made by the shell (`<(pass show app)`).
/// The command-line form still works but warns once on stderr, since `ps` shows the
/// arguments of every process to every user, and shells keep them in their history.
enum SecretInput {
    /// The most read from one source: far above any real secret or token.
    static let limit = 1 << 20

    /// The trimmed contents of `path`; `what` names it in errors ("the client secret file").
    static func read(file path: String, what: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIError.usage("\(what) \(path) cannot be opened for reading.")
        }
        defer { try? handle.close() }
        return try text(of: handle, what: "\(what) \(path)")
    }

    /// The trimmed contents of stdin; `option` names what reads it in errors.
    static func readStandardInput(for option: String) throws -> String {
        try text(of: FileHandle.standardInput, what: "\(option) (stdin)")
    }

    /// A secret option's value: `-` reads stdin, anything else is the secret itself, given
    /// on the command line (which warns).
    static func value(_ argument: String, option: String, instead: String) throws -> String {
        if argument == "-" { return try readStandardInput(for: option) }
        warnOnCommandLine(option, instead: instead)
        return argument
    }

    /// Prints the one-line warning for a secret given on the command line.
    static func warnOnCommandLine(_ option: String, instead: String) {
        Output.error("oauth2: warning: \(option) on the command line is visible to other users (ps) and kept in shell history; use \(instead).")
    }

    /// `true` when `path` is a regular file, which can be read again later (a pipe cannot).
    static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }

    private static func text(of handle: FileHandle, what: String) throws -> String {
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw CLIError.usage("\(what) cannot be read (\(ErrorReport.reason(error))).")
        }
        guard data.count <= limit else { throw CLIError.usage("\(what) is longer than \(limit) bytes.") }
        guard let text = String(data: data, encoding: .utf8) else { throw CLIError.usage("\(what) is not UTF-8 text.") }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw CLIError.usage("\(what) is empty.") }
        return trimmed
    }
}
