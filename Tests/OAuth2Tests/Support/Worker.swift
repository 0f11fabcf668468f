import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `OAuth2TestWorker` executable, built beside the test bundle (`.build/<config>/`);
/// `OAUTH2_TEST_WORKER` names another.
enum Worker {
    static var url: URL {
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
    /// output goes to the returned pipe.
    static func start(_ arguments: [String], environment: [String: String]? = nil, executable: URL? = nil) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = executable ?? url
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        try? output.fileHandleForWriting.close()
        return (process, output)
    }

    /// Runs the worker to its end; returns its exit status and standard output.
    static func run(
        _ arguments: [String], environment: [String: String]? = nil, executable: URL? = nil
    ) async throws -> (status: Int32, output: String) {
        try await onThread {
            let (process, output) = try start(arguments, environment: environment, executable: executable)
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}

/// Runs blocking test code (waiting for processes, sleeping) on its own thread, not on the
/// cooperative pool that the other tests share.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}
