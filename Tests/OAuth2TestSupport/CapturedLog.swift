import Foundation
import Logging

/// A log destination for tests: keeps every line, formatted with its metadata as a log
/// handler would print it, so tests can assert what was (and was not) logged.
public final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []

    public init() {}

    /// Every line so far: `level message key=value…`.
    public var lines: [String] { lock.withLock { storage } }
    /// All lines, newline-separated.
    public var text: String { lines.joined(separator: "\n") }

    /// Adds a line (tests also use it as a thread-safe event list).
    public func append(_ line: String) { lock.withLock { storage.append(line) } }

    /// A logger writing here at `level`.
    public func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "test") { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let text = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.append("\(event.level) \(event.message) \(text)")
        }
    }
}
