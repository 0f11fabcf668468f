import Foundation
@_spi(Tooling) import OAuth2
import OAuth2TestSupport
import Testing

/// Headless Chromium as the person at the browser: `Tests/Support/browser/oauth2-browser`
/// opens a URL, signs in (or confirms a logout) on the provider's real page, and returns
/// once Chromium has sent the redirect to the loopback listener. One value is one browser
/// profile: its cookies carry the provider's session from a sign-in to the sign-out.
/// `scripts/test-servers/chromium.sh install` provides Chromium and Selenium (up.sh runs it).
struct Chromium {
    /// Where the cookies, the page text, the screenshots and the log of this browser go:
    /// `$OAUTH2_TEST_BROWSER_ARTIFACTS/<name>` (scripts/test keeps them with the run's
    /// output), else a temporary directory.
    let directory: URL

    init(name: String) throws {
        let base = ProcessInfo.processInfo.environment["OAUTH2_TEST_BROWSER_ARTIFACTS"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-browser-\(UUID().uuidString)")
        directory = base.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    static var driver: URL {
        // Tests/OAuth2IntegrationTests/Support/ → Tests/Support/browser/oauth2-browser
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/browser/oauth2-browser")
    }

    private func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Opens `url` as a person would; `step` names the page text and screenshot files.
    /// `true` when Chromium was redirected to the listener.
    func open(_ url: URL, step: String) async -> Bool {
        var environment = ProcessInfo.processInfo.environment
        environment["OAUTH2_BROWSER_USER"] = Server.username
        environment["OAUTH2_BROWSER_PASSWORD"] = Server.password
        environment["OAUTH2_BROWSER_COOKIES"] = file("cookies.json").path
        environment["OAUTH2_BROWSER_LOG"] = file("browser.log").path
        environment["OAUTH2_BROWSER_PAGE_TEXT"] = file("\(step).txt").path
        environment["OAUTH2_BROWSER_SCREENSHOT"] = file("\(step).png").path
        do {
            let environment = environment
            let termination = try await onThread {
                let child = try ChildProcess.spawn(Self.driver.path, arguments: [url.absoluteString], environment: environment, standardOutput: .null)
                return child.waitUntilExit()
            }
            guard termination == .exited(0) else {
                Issue.record("oauth2-browser ended \(termination): \(log)")
                return false
            }
            IntegrationLog.record("browser")
            return true
        } catch {
            Issue.record("oauth2-browser did not start: \(error)")
            return false
        }
    }

    /// The text of the last page of `step` as Chromium rendered it (the listener's), written
    /// by the driver's worker shortly after it returned.
    func pageText(_ step: String) async throws -> String {
        let path = file("\(step).txt").path
        for _ in 0..<300 where !FileManager.default.fileExists(atPath: path) {
            try await Task.sleep(for: .milliseconds(100))
        }
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    /// The driver's log (each step, timed).
    var log: String { (try? String(contentsOf: file("browser.log"), encoding: .utf8)) ?? "" }
}
