import Foundation
@_spi(Tooling) import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import OAuth2Internals

/// The `OAuth2TestWorker` executable, built beside the test bundle (`.build/<config>/`);
/// `OAUTH2_TEST_WORKER` names another.
public enum Worker {
    public static var url: URL {
        if let path = ProcessInfo.processInfo.environment["OAUTH2_TEST_WORKER"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        var directory = Bundle.main.bundleURL
        // Swift Testing on Linux runs `…/debug/swift-oauth2PackageTests.xctest`; on macOS a bundle inside `debug/`.
        while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("OAuth2TestWorker").path),
            directory.pathComponents.count > 1
        {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("OAuth2TestWorker")
    }

    /// Starts the worker (or `executable`, which starts it) with `arguments`; its standard
    /// output is the child's `standardOutput` pipe.
    package static func start(_ arguments: [String], environment: [String: String]? = nil, executable: URL? = nil) throws -> ChildProcess {
        try ChildProcess.spawn((executable ?? url).path, arguments: arguments, environment: environment, standardOutput: .pipe)
    }

    /// Runs the worker to its end; returns its exit status (128 + the signal when a signal
    /// ended it) and standard output (with standard error when `withErrors`).
    public static func run(
        _ arguments: [String], environment: [String: String]? = nil, executable: URL? = nil, withErrors: Bool = false
    ) async throws -> (status: Int32, output: String) {
        try await onThread {
            let child = try ChildProcess.spawn(
                (executable ?? url).path, arguments: arguments, environment: environment,
                standardOutput: .pipe, standardError: withErrors ? .output : .inherit)
            let data = child.standardOutput!.readDataToEndOfFile()
            switch child.waitUntilExit() {
            case .exited(let status): return (status, String(decoding: data, as: UTF8.self))
            case .signalled(let signal): return (128 + signal, String(decoding: data, as: UTF8.self))
            }
        }
    }
}

/// Runs blocking test code (waiting for processes, sleeping) on its own thread, not on the
/// cooperative pool that the other tests share.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// A running `OAuth2TestWorker` whose standard output is read line by line while it runs,
/// for tests that talk to it (wait for "ready", then release it). Its waits end with a
/// ``Failure`` (carrying the worker's standard error) rather than hang.
public final class RunningWorker: @unchecked Sendable {
    /// A worker that did not print what was awaited, or did not end, in time.
    public struct Failure: Error, CustomStringConvertible {
        /// What was awaited, and the worker's standard error.
        public var description: String
    }

    private let child: ChildProcess
    private let lock = NSLock()
    private var buffer = Data()
    private var errorBuffer = Data()
    private var ended: ChildProcess.Termination?

    private init(child: ChildProcess) { self.child = child }

    /// Starts the worker (or `executable`, another program read the same way) with
    /// `arguments` (and `environment`, default the test's).
    public static func start(_ arguments: [String], environment: [String: String]? = nil, executable: URL? = nil) throws -> RunningWorker {
        let child = try ChildProcess.spawn(
            (executable ?? Worker.url).path, arguments: arguments, environment: environment, standardOutput: .pipe, standardError: .pipe)
        let worker = RunningWorker(child: child)
        child.standardOutput!.readabilityHandler = { [weak worker] handle in
            let data = handle.availableData
            worker?.lock.withLock { worker?.buffer.append(data) }
        }
        child.standardError!.readabilityHandler = { [weak worker] handle in
            let data = handle.availableData
            worker?.lock.withLock { worker?.errorBuffer.append(data) }
        }
        Thread { [weak worker] in
            let termination = child.waitUntilExit()
            worker?.lock.withLock { worker?.ended = termination }
        }.start()
        return worker
    }

    private var isRunning: Bool { lock.withLock { ended == nil } }

    /// The complete lines printed so far.
    public var lines: [String] {
        lock.withLock { String(decoding: buffer, as: UTF8.self) }.split(separator: "\n").map(String.init)
    }

    /// What the worker printed on standard error so far.
    public var errorOutput: String { lock.withLock { String(decoding: errorBuffer, as: UTF8.self) } }

    /// Waits until the worker has printed `line`.
    public func waitForLine(_ line: String, timeout: Duration) async throws {
        _ = try await waitForLine(timeout: timeout, description: line) { $0 == line }
    }

    /// Waits until the worker has printed a line starting with `prefix`; returns the first.
    public func waitForLine(startingWith prefix: String, timeout: Duration) async throws -> String {
        try await waitForLine(timeout: timeout, description: "a line starting with \(prefix)") { $0.hasPrefix(prefix) }
    }

    private func waitForLine(timeout: Duration, description: String, _ matches: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let line = lines.first(where: matches) { return line }
            guard ContinuousClock.now < deadline, isRunning else {
                // One last look: the line may have come with the worker's end.
                try await Task.sleep(for: .milliseconds(20))
                if let line = lines.first(where: matches) { return line }
                throw Failure(description: "the worker did not print \(description): \(errorOutput)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits for the worker's end; returns its exit status (128 + the signal when a signal
    /// ended it).
    public func waitForExit(timeout: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else { throw Failure(description: "the worker did not finish: \(errorOutput)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(20))  // the last output
        switch lock.withLock({ ended }) {
        case .exited(let status): return status
        case .signalled(let signal): return 128 + signal
        case nil: return -1
        }
    }

    /// Sends `signal` (default SIGTERM) and stops reading its output.
    public func terminate(_ signal: Int32 = SIGTERM) {
        child.send(signal)
        child.standardOutput!.readabilityHandler = nil
        child.standardError!.readabilityHandler = nil
    }

    /// Sends `signal` and keeps reading (a test that kills a worker on purpose).
    public func send(_ signal: Int32) { child.send(signal) }
}
