import Foundation
import OAuth2TestSupport
import Testing
@testable import OAuth2

/// A full disk during a write: the save fails with a typed error naming ENOSPC, the
/// previous record stays whole, no temporary file is left. On a real small file system: a
/// 96 KB tmpfs mounted in a mount namespace of the child's own (`unshare -m`, as root —
/// CI runs as root; where mounting is refused this test fails rather than pretend).
@Suite struct FileTokenStoreFullDiskTests {
    @Test func aFullDiskRefusesTheWriteAndKeepsThePreviousRecord() async throws {
        try await withTemporaryDirectory { directory in
            let script = "mount -t tmpfs -o size=96k tmpfs \"$1\" && exec \"$2\" full-disk \"$1\""
            let (status, output) = try await Worker.run(
                ["-m", "sh", "-c", script, "full-disk", directory.path, Worker.url.path], executable: URL(fileURLWithPath: "/usr/bin/unshare"))
            #expect(status == 0, "\(output)")
            let lines = output.split(separator: "\n").map(String.init)
            #expect(lines.contains("refused io errno \(ENOSPC)"), "\(output)")
            #expect(lines.contains("kept before-the-disk-filled"), "\(output)")
            #expect(lines.contains("leftovers 0"), "\(output)")
        }
    }
}
