import Foundation

/// The list of integration tests that ran against each real server: `scripts/test` sets
/// `$OAUTH2_INTEGRATION_LOG`, counts the tests per server from it (the `integration:` line),
/// and fails when a server's count is zero.
public enum IntegrationLog {
    private static let lock = NSLock()

    /// Appends `<server> <test>` (the test's id without white space); does nothing without
    /// `$OAUTH2_INTEGRATION_LOG`.
    public static func append(_ server: String, test: String) {
        guard let path = ProcessInfo.processInfo.environment["OAUTH2_INTEGRATION_LOG"], !path.isEmpty else { return }
        let line = "\(server) \(test.filter { !$0.isWhitespace })\n"
        lock.withLock {
            if let handle = FileHandle(forWritingAtPath: path) {
                handle.seekToEndOfFile()
                handle.write(Data(line.utf8))
                try? handle.close()
            } else {
                _ = FileManager.default.createFile(atPath: path, contents: Data(line.utf8))
            }
        }
    }
}
