import Foundation
@_spi(Tooling) import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    @_spi(Tooling) public static func start(_ arguments: [String], environment: [String: String]? = nil, executable: URL? = nil) throws -> ChildProcess {
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
