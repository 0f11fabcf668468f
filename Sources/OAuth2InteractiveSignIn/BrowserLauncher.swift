import Foundation
import OAuth2Internals
import OAuth2JOSE
import OAuth2

/// Opens a URL in the user's browser: `$BROWSER` first, then `xdg-open`, then (on macOS)
/// `open`.
///
/// `$BROWSER` is a colon-separated list of commands, tried in order. A command is split
/// into words as a shell would (quotes and backslashes work; nothing else of the shell
/// does); `%s` in a word is replaced by the URL (`%%` is a `%`), and without any `%s` the
/// URL is appended as the last word. Commands run directly, never through a shell, with
/// standard input, output and error on `/dev/null`, so a URL can never become shell code
/// and a browser's chatter never reaches the terminal.
///
/// A command "works" when it exits with status 0 within the grace period, or is still
/// running when the period ends (a browser that stays in the foreground). A command that
/// is not found or fails is skipped for the next one.
///
/// ```swift
/// if await !BrowserLauncher().open(request.url) {
///     print("Open this URL in a browser: \(request.url)")
/// }
/// ```
public struct BrowserLauncher: Sendable {
    /// A command to run: an executable (a name looked up in `PATH`, or a path) and its
    /// arguments, the URL among them.
    public struct Command: Sendable, Hashable, CustomStringConvertible {
        /// The program, as named (`firefox`, `/usr/bin/xdg-open`).
        public var executable: String
        /// The arguments, the URL included.
        public var arguments: [String]

        /// Creates a command.
        public init(executable: String, arguments: [String]) {
            self.executable = executable
            self.arguments = arguments
        }

        /// The program and its arguments, space-separated.
        public var description: String { ([executable] + arguments).joined(separator: " ") }
    }

    /// The systems with a fallback opener of their own.
    public enum Platform: Sendable, Hashable {
        /// `xdg-open` after `$BROWSER`.
        case linux
        /// `xdg-open`, then `open`, after `$BROWSER`.
        case macOS
        /// Any other system: `xdg-open` after `$BROWSER`.
        case other

        /// The system this program runs on.
        public static var current: Platform {
            #if os(macOS)
            return .macOS
            #elseif os(Linux)
            return .linux
            #else
            return .other
            #endif
        }
    }

    /// The environment the commands are read from (`BROWSER`, `PATH`) and run with.
    public var environment: [String: String]
    /// The system, which decides the fallback openers.
    public var platform: Platform
    /// How long a command may run before it counts as working without having exited.
    public var gracePeriod: Duration

    /// Creates a launcher.
    ///
    /// - Parameters:
    ///   - environment: the environment to read `BROWSER` and `PATH` from and to run the
    ///     commands with; the process's own by default.
    ///   - platform: the system (``Platform/current`` by default).
    ///   - gracePeriod: how long to wait for a command's exit status (2 seconds by default).
    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        platform: Platform = .current,
        gracePeriod: Duration = .seconds(2)
    ) {
        self.environment = environment
        self.platform = platform
        self.gracePeriod = gracePeriod
    }

    /// The commands that would be tried for `url`, in order: `$BROWSER`'s, then the
    /// platform's openers. A pure function of its arguments.
    public static func commands(for url: URL, environment: [String: String], platform: Platform) -> [Command] {
        var commands: [Command] = []
        if let browser = environment["BROWSER"] {
            commands += browserCommands(browser, url: url.absoluteString)
        }
        commands.append(Command(executable: "xdg-open", arguments: [url.absoluteString]))
        if platform == .macOS { commands.append(Command(executable: "open", arguments: [url.absoluteString])) }
        return commands
    }

    /// The commands of a `$BROWSER` value for `url` (empty entries and unbalanced quotes
    /// are skipped).
    static func browserCommands(_ value: String, url: String) -> [Command] {
        value.split(separator: ":", omittingEmptySubsequences: true).compactMap { entry in
            guard let words = splitWords(String(entry)), let first = words.first else { return nil }
            var substituted = false
            var arguments = words.dropFirst().map { word -> String in
                let (result, replaced) = substitute(word, url: url)
                substituted = substituted || replaced
                return result
            }
            if !substituted { arguments.append(url) }
            return Command(executable: first, arguments: arguments)
        }
    }

    /// `%s` → the URL, `%%` → `%`; says whether a `%s` was there.
    private static func substitute(_ word: String, url: String) -> (String, Bool) {
        var result = ""
        var replaced = false
        var iterator = word.makeIterator()
        while let character = iterator.next() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            switch iterator.next() {
            case "s"?:
                result += url
                replaced = true
            case "%"?:
                result.append("%")
            case let other?:
                result.append("%")
                result.append(other)
            case nil:
                result.append("%")
            }
        }
        return (result, replaced)
    }

    /// Splits a command into words as a POSIX shell does for quotes and backslashes;
    /// `nil` for an unbalanced quote.
    static func splitWords(_ text: String) -> [String]? {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
                inWord = true
                continue
            }
            if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\" && open == "\"" {
                    escaped = true
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case "\\":
                escaped = true
                inWord = true
            case "\"", "'":
                quote = character
                inWord = true
            case " ", "\t", "\n":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            default:
                current.append(character)
                inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(current) }
        return words
    }

    /// Opens `url` with the first command that works, without waiting longer than the
    /// grace period for any one of them. Only `http` and `https` URLs are opened.
    ///
    /// - Returns: `true` when a command worked; `false` when none did (print the URL
    ///   instead), the URL is not http(s), or the task was cancelled.
    public func open(_ url: URL) async -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        for command in Self.commands(for: url, environment: environment, platform: platform) {
            if Task.isCancelled { return false }
            guard let executable = resolve(command.executable) else { continue }
            if await run(executable: executable, arguments: command.arguments) { return true }
        }
        return false
    }

    /// The path of `name`: itself when it has a slash, else the first executable of that
    /// name in `PATH`.
    func resolve(_ name: String) -> String? {
        let fileManager = FileManager.default
        if name.contains("/") { return fileManager.isExecutableFile(atPath: name) ? name : nil }
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            var isDirectory: ObjCBool = false
            if fileManager.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
                fileManager.isExecutableFile(atPath: candidate)
            {
                return candidate
            }
        }
        return nil
    }

    /// Runs a command; `true` when it exits 0 within the grace period or is still running
    /// then.
    private func run(executable: String, arguments: [String]) async -> Bool {
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                executable, arguments: arguments, environment: environment,
                standardInput: .null, standardOutput: .null, standardError: .null)
        } catch {
            return false
        }
        let outcome = Outcome()
        Thread { outcome.finish(child.waitUntilExit() == .exited(0)) }.start()
        let grace = gracePeriod
        let timer = Task {
            try? await Task.sleep(for: grace)
            outcome.finish(!Task.isCancelled)
        }
        let worked = await withTaskCancellationHandler {
            await outcome.value()
        } onCancel: {
            outcome.finish(false)
        }
        timer.cancel()
        return worked
    }
}

/// The first of several answers (exit status, grace period over, cancelled).
private final class Outcome: Sendable {
    private struct State {
        var result: Bool?
        var waiter: CheckedContinuation<Bool, Never>?
    }

    private let state = Locked(State())

    func finish(_ result: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: result)
    }

    func value() async -> Bool {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
