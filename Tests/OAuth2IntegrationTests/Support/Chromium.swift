import Foundation
@_spi(Tooling) import OAuth2
import OAuth2Internals
import OAuth2TestSupport
import Testing

/// Headless Chromium as the person at the browser: `Tests/Support/browser/oauth2-browser`
/// opens a URL, signs in (or confirms a logout) on the provider's real page, and returns
/// once Chromium has sent the redirect to the loopback listener; or it walks a journey
/// through a web app (``journey(_:name:user:)``). One value is one browser profile: its
/// cookies carry the provider's session (and the app's) from one run to the next.
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

    /// A step of a person's journey through a web app (`oauth2-browser --journey`).
    enum JourneyStep: Sendable {
        /// Navigate to the URL; the provider's pages on the way are done (signed in,
        /// consented, logout confirmed) until the browser is back on the app and the page loaded.
        case open(URL)
        /// Click the first shown element the CSS selector matches, then the same.
        case click(String)
        /// Navigate to a page that is not the app's (the provider's logout page): its
        /// questions are answered (a logout confirmed), and the browser stays there until the
        /// page and every frame in it (front-channel logout frames) have loaded.
        case visit(URL)
        /// Keep the page's rendered text as `<name>.txt` (``text(_:)`` reads it) and a screenshot.
        case text(String)
        /// Run JavaScript in the page, as the body of an async function (it may `await`, and
        /// must not navigate); what it answered is in ``Walk/evals``, in order.
        case eval(String)
        /// Keep every response of the app's origin the page has received so far, with its
        /// body as Chromium kept it, as `<name>.json` (``responses(_:)`` reads it).
        case bodies(String)

        var json: [String: String] {
            switch self {
            case .open(let url): ["open": url.absoluteString]
            case .click(let selector): ["click": selector]
            case .visit(let url): ["visit": url.absoluteString]
            case .text(let name): ["text": name]
            case .eval(let script): ["eval": script]
            case .bodies(let name): ["bodies": name]
            }
        }

        var navigates: Bool {
            switch self {
            case .open, .click, .visit: true
            case .text, .eval, .bodies: false
            }
        }
    }

    /// Where a journey went: where each `open`, `click` and `visit` settled, and the frames
    /// the visits' pages loaded.
    struct Walk: Sendable {
        /// Where each `open`, `click` and `visit` settled, in order.
        var at: [URL]
        /// Each document a visited page's frames loaded, in order.
        var frames: [Frame]
        /// What each `eval` step answered, in order, as JSON: `{"ok": result}` or `{"error": message}`.
        var evals: [String] = []

        /// The result of the `index`th eval; `nil` when it threw (its message is in ``evals``).
        func evalResult(_ index: Int) -> Any? {
            guard index < evals.count, let answer = try? JSONSerialization.jsonObject(with: Data(evals[index].utf8), options: .fragmentsAllowed) as? [String: Any] else { return nil }
            return answer["ok"]
        }
    }

    /// A document a frame loaded, with its HTTP status (`nil`: no answer came).
    struct Frame: Sendable {
        var url: URL
        var status: Int?
    }

    /// Runs `steps` in this browser profile (its cookies: read before, written after) as the
    /// user `user` (default the test user); `name` names the journey's file and log lines.
    /// Returns where each `open`, `click` and `visit` settled, or `nil` (with the issue
    /// recorded) when the journey failed.
    func journey(_ steps: [JourneyStep], name: String, user: (name: String, password: String)? = nil) async -> [URL]? {
        await walk(steps, name: name, user: user)?.at
    }

    /// ``journey(_:name:user:)`` with the frames its visits loaded.
    func walk(_ steps: [JourneyStep], name: String, user: (name: String, password: String)? = nil) async -> Walk? {
        let journeyFile = file("\(name).json")
        var environment = ProcessInfo.processInfo.environment
        environment["OAUTH2_BROWSER_USER"] = user?.name ?? Server.username
        environment["OAUTH2_BROWSER_PASSWORD"] = user?.password ?? Server.password
        environment["OAUTH2_BROWSER_COOKIES"] = file("cookies.json").path
        environment["OAUTH2_BROWSER_LOG"] = file("browser.log").path
        environment["OAUTH2_BROWSER_ARTIFACTS"] = directory.path
        do {
            try JSONSerialization.data(withJSONObject: steps.map(\.json), options: [.prettyPrinted, .withoutEscapingSlashes]).write(to: journeyFile)
            let driver = try RunningWorker.start(["--journey", journeyFile.path], environment: environment, executable: Self.driver)
            // A watchdog only: the driver bounds each navigation itself (30 s by default).
            let status = try await driver.waitForExit(timeout: .seconds(60 * (steps.filter(\.navigates).count + 2)))
            guard status == 0 else {
                Issue.record("journey \(name) failed (oauth2-browser exited \(status)): \(driver.errorOutput)\n\(log)")
                return nil
            }
            IntegrationLog.record("browser")
            let at = driver.lines.filter { $0.hasPrefix("at ") }.compactMap { URL(string: String($0.dropFirst(3))) }
            // "frame STATUS URL", STATUS "-" when no answer came.
            let frames = driver.lines.filter { $0.hasPrefix("frame ") }.compactMap { line -> Frame? in
                let parts = line.split(separator: " ", maxSplits: 2)
                guard parts.count == 3, let url = URL(string: String(parts[2])) else { return nil }
                return Frame(url: url, status: Int(parts[1]))
            }
            let evals = driver.lines.filter { $0.hasPrefix("eval ") }.map { String($0.dropFirst(5)) }
            return Walk(at: at, frames: frames, evals: evals)
        } catch {
            Issue.record("journey \(name): \(error)\n\(log)")
            return nil
        }
    }

    /// The rendered text a journey's `.text(name)` step kept (for a JSON document, the JSON).
    func text(_ name: String) throws -> String {
        try String(contentsOf: file("\(name).txt"), encoding: .utf8)
    }

    /// The responses a journey's `.bodies(name)` step kept: URL, status, resource type and
    /// body (`nil` when Chromium no longer had it).
    func responses(_ name: String) throws -> [(url: String, status: Int?, type: String?, body: String?)] {
        let list = try JSONSerialization.jsonObject(with: Data(contentsOf: file("\(name).json"))) as? [[String: Any]] ?? []
        return list.map { ($0["url"] as? String ?? "", $0["status"] as? Int, $0["type"] as? String, $0["body"] as? String) }
    }

    /// The value of the cookie `name` in this profile's jar (as the last run left it).
    func cookie(_ name: String) throws -> String? {
        let jar = try JSONSerialization.jsonObject(with: Data(contentsOf: file("cookies.json"))) as? [[String: Any]] ?? []
        return jar.first { $0["name"] as? String == name }?["value"] as? String
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
