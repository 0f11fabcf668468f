import Foundation
import Testing

/// The compatibility suite's results, one JSON object a line, appended to
/// `$OAUTH2_COMPAT_LOG` (scripts/test sets it); `scripts/compat-table` turns the last run's
/// lines into docs/compatibility.md. A check writes `started` first and its verdict last,
/// so a check that failed (or crashed) leaves `started` as its last word: the table says
/// "fails".
enum CompatibilityLog {
    private static let lock = NSLock()

    enum Outcome: String {
        case started
        case tested
        case notOffered = "not offered"
        case serverBug = "server bug"
    }

    static func record(_ server: JourneyServer, _ feature: Feature, _ outcome: Outcome, evidence: String) {
        guard let path = ProcessInfo.processInfo.environment["OAUTH2_COMPAT_LOG"], !path.isEmpty else { return }
        let entry: [String: String] = [
            "server": server.rawValue, "feature": feature.rawValue, "outcome": outcome.rawValue, "evidence": evidence,
        ]
        guard var line = try? JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys]) else { return }
        line.append(0x0A)
        lock.withLock {
            if let handle = FileHandle(forWritingAtPath: path) {
                handle.seekToEndOfFile()
                handle.write(line)
                try? handle.close()
            } else {
                _ = FileManager.default.createFile(atPath: path, contents: line)
            }
        }
    }
}
