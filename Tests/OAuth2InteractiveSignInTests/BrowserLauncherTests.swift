import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import OAuth2InteractiveSignIn

/// `$BROWSER` parsing, and launching real child processes.
@Suite struct BrowserLauncherTests {
    static let url = URL(string: "https://as.example.com/authorize?client_id=cli&state=a%20b&scope=openid+read")!

    static func commands(_ browser: String?, platform: BrowserLauncher.Platform = .linux) -> [String] {
        var environment = ["PATH": "/usr/bin"]
        environment["BROWSER"] = browser
        return BrowserLauncher.commands(for: url, environment: environment, platform: platform).map { ([$0.executable] + $0.arguments).joined(separator: "|") }
    }

    @Test func withoutBrowserItIsXdgOpenThenOpenOnMacOS() {
        let u = Self.url.absoluteString
        #expect(Self.commands(nil) == ["xdg-open|\(u)"])
        #expect(Self.commands(nil, platform: .macOS) == ["xdg-open|\(u)", "open|\(u)"])
        #expect(Self.commands("", platform: .other) == ["xdg-open|\(u)"])
    }

    @Test func browserIsAColonSeparatedListTriedFirst() {
        let u = Self.url.absoluteString
        #expect(Self.commands("firefox") == ["firefox|\(u)", "xdg-open|\(u)"], "no %s: the URL is appended")
        #expect(Self.commands("firefox --new-tab %s:chromium::w3m") == ["firefox|--new-tab|\(u)", "chromium|\(u)", "w3m|\(u)", "xdg-open|\(u)"])
        #expect(Self.commands("open -a Safari '%s'", platform: .macOS) == ["open|-a|Safari|\(u)", "xdg-open|\(u)", "open|\(u)"])
    }

    @Test func wordsAreSplitAsAShellWouldAndPercentSIsReplacedInsideWords() {
        let u = Self.url.absoluteString
        #expect(Self.commands(#"/opt/My\ Browser/bin/browser "--profile=work space" --url=%s"#)
            == ["/opt/My Browser/bin/browser|--profile=work space|--url=\(u)", "xdg-open|\(u)"])
        #expect(Self.commands("printf %%s") == ["printf|%s|\(u)", "xdg-open|\(u)"], "%% is a percent sign, so no %s here")
        #expect(Self.commands("echo 100%") == ["echo|100%|\(u)", "xdg-open|\(u)"])
        #expect(Self.commands("'unbalanced:firefox") == ["firefox|\(u)", "xdg-open|\(u)"], "an unparsable entry is skipped")
        #expect(BrowserLauncher.splitWords(#"a "b \"c\"" 'd\e'"#) == ["a", #"b "c""#, #"d\e"#])
        #expect(BrowserLauncher.splitWords("trailing\\") == nil)
    }

    // MARK: - Launching

    /// A directory holding scripts; `PATH` is set to it alone, so no real opener runs.
    final class Scripts: @unchecked Sendable {
        let directory: URL

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("browser-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        /// Writes an executable script `name` with `body` (after `#!/bin/sh`).
        @discardableResult
        func script(_ name: String, _ body: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            // O_CLOEXEC: a child another test forks meanwhile must not inherit the write
            // descriptor, or running the script fails with ETXTBSY.
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
            guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
            let bytes = Array(("#!/bin/sh\n" + body + "\n").utf8)
            let written = bytes.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            guard written == bytes.count else { throw CocoaError(.fileWriteUnknown) }
            return path
        }

        func file(_ name: String) -> String { directory.appendingPathComponent(name).path }

        func launcher(browser: String?, grace: Duration = .seconds(2)) -> BrowserLauncher {
            var environment = ["PATH": directory.path]
            environment["BROWSER"] = browser
            return BrowserLauncher(environment: environment, platform: .linux, gracePeriod: grace)
        }

        func read(_ name: String) -> String? { try? String(contentsOfFile: file(name), encoding: .utf8) }

        /// The path of a system tool (the scripts run with `PATH` set to their directory alone).
        static func tool(_ name: String) -> String {
            BrowserLauncher(environment: ProcessInfo.processInfo.environment).resolve(name) ?? "/bin/\(name)"
        }
    }

    @Test func theFirstCommandThatWorksOpensTheURLAsOneArgument() async throws {
        let scripts = try Scripts()
        try scripts.script("broken", "echo broken >> '\(scripts.file("log"))'; exit 3")
        try scripts.script("good", "printf '%s\\n' \"$@\" > '\(scripts.file("args"))'; echo good >> '\(scripts.file("log"))'")
        try scripts.script("never", "echo never >> '\(scripts.file("log"))'")
        let opened = await scripts.launcher(browser: "missing-browser:broken:good --flag %s:never", grace: .seconds(60)).open(Self.url)
        #expect(opened)
        #expect(scripts.read("log") == "broken\ngood\n", "a missing command is skipped, a failing one tried, the next never run")
        #expect(scripts.read("args") == "--flag\n\(Self.url.absoluteString)\n", "the URL arrives whole, not through a shell")
    }

    @Test func xdgOpenIsTheFallback() async throws {
        let scripts = try Scripts()
        try scripts.script("xdg-open", "printf '%s' \"$1\" > '\(scripts.file("xdg"))'")
        #expect(await scripts.launcher(browser: nil).open(Self.url))
        #expect(scripts.read("xdg") == Self.url.absoluteString)
    }

    @Test func noWorkingCommandIsFalse() async throws {
        let scripts = try Scripts()
        try scripts.script("xdg-open", "exit 4")
        try scripts.script("sulk", "exit 1")
        // A long grace period: both commands exit at once, and a loaded machine (the whole
        // suite runs in parallel) must not make a slow exit look like a browser still open.
        #expect(await scripts.launcher(browser: "sulk:nowhere", grace: .seconds(60)).open(Self.url) == false)
    }

    @Test func aBrowserThatKeepsRunningWorksAndDoesNotBlock() async throws {
        let scripts = try Scripts()
        let marker = scripts.file("started")
        let finished = scripts.file("finished")
        try scripts.script(
            "foreground",
            "\(Scripts.tool("touch")) '\(marker)'; \(Scripts.tool("sleep")) 60; \(Scripts.tool("touch")) '\(finished)'")
        #expect(await scripts.launcher(browser: "foreground", grace: .milliseconds(400)).open(Self.url))
        // open() came back while the browser was still running (it runs for a minute).
        #expect(!FileManager.default.fileExists(atPath: finished), "it waited for the browser to exit")
        #expect(FileManager.default.fileExists(atPath: marker))
    }

    @Test func onlyWebURLsAreOpened() async throws {
        let scripts = try Scripts()
        try scripts.script("xdg-open", "\(Scripts.tool("touch")) '\(scripts.file("ran"))'")
        for url in ["file:///etc/passwd", "javascript:alert(1)", "ftp://example.com/x"] {
            #expect(await scripts.launcher(browser: nil).open(URL(string: url)!) == false)
        }
        #expect(!FileManager.default.fileExists(atPath: scripts.file("ran")))
    }

    @Test func cancellationStopsWaitingForTheBrowser() async throws {
        let scripts = try Scripts()
        try scripts.script("slow", "exec \(Scripts.tool("sleep")) 300")
        let launcher = scripts.launcher(browser: "slow", grace: .seconds(240))
        let task = Task { await launcher.open(Self.url) }
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        task.cancel()
        #expect(await task.value == false)
        // Far below the 240 s grace period, with room for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(60), "it did not wait out the grace period")
    }
}
