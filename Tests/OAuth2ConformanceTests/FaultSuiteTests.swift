import Foundation
import HTTPTypes
@testable import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

/// The fault suite (docs/fault-suite.md): every ``FaultScenario`` over real sockets, against
/// the token endpoint (a session's refresh, its tokens in a file store) and the UserInfo
/// endpoint, through both transports. For each: the typed error the scenario promises,
/// the stored tokens byte-identical afterwards, and no secret in the trace log. The DNS case
/// needs a process in a network namespace: the CLI's fault checks (Tests/CLI/e2e.sh) run it.
@Suite struct FaultSuiteTests {
    enum Endpoint: String, CaseIterable, Sendable { case token, userInfo }

    struct Case: Sendable, CustomTestStringConvertible {
        var scenario: FaultScenario
        var transport: String
        var endpoint: Endpoint
        var testDescription: String { "\(scenario.rawValue) \(transport) \(endpoint.rawValue)" }
    }

    static let cases: [Case] = FaultScenario.allCases.filter { $0 != .dnsFailure }.flatMap { scenario in
        ["urlSession", "asyncHTTPClient"].flatMap { transport in
            Endpoint.allCases.map { Case(scenario: scenario, transport: transport, endpoint: $0) }
        }
    }

    static let refreshToken = "rt-fault-suite-0123456789"
    static let accessToken = "at-fault-suite-0123456789"
    static let clientSecret = "cs-fault-suite-0123456789"

    static func transport(_ name: String) -> any HTTPTransport {
        name == "urlSession" ? URLSessionTransport() : FaultServers.asyncHTTPClient
    }

    /// A client of the fault server at `base`, logging to `log`. The deadline is 5 s where
    /// the scenario's outcome is a timeout, and far beyond any wait otherwise: a fault that
    /// is seen at once must be reported as itself however busy the machine is.
    static func client(
        _ base: URL, transport: any HTTPTransport, log: CapturedLog, expectsTimeout: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> OAuth2Client {
        let configuration = ClientConfiguration(clientID: "fault-client", clientSecret: clientSecret)
        let metadata = ServerMetadata(
            issuer: base, tokenEndpoint: base.appendingPathComponent("token"), userInfoEndpoint: base.appendingPathComponent("userinfo"))
        let environment = HTTPEnvironment(
            transport: transport, requestDeadline: expectsTimeout ? .seconds(5) : .seconds(300),
            logger: log.logger(level: .trace), userAgent: "fault-suite")
        let pipeline = environment.pipeline()
        return try OAuth2Client(metadata: metadata, configuration: configuration, pipeline: pipeline.configured(by: configuration), now: now)
    }

    static func expiredTokens() -> TokenSet {
        TokenSet(accessToken: accessToken, refreshToken: refreshToken, expiresAt: Date().addingTimeInterval(-60), issuedAt: Date().addingTimeInterval(-3660))
    }

    static func check(_ error: any Error, _ scenario: FaultScenario, at endpoint: Endpoint, _ label: String) {
        guard let error = error as? OAuth2Error else {
            Issue.record("\(label): not an OAuth2Error: \(error)")
            return
        }
        let outcome = scenario.outcome
        #expect(error.code.rawValue == outcome.code(at: endpoint.rawValue), "\(label): \(error)")
        #expect(error.isTransient == outcome.isTransient, "\(label): \(error)")
        #expect(error.retryAfter == outcome.retryAfter, "\(label): \(error)")
        #expect(!error.description.contains(refreshToken) && !error.description.contains(accessToken) && !error.description.contains(clientSecret))
    }

    @Test(arguments: cases)
    func aFaultGivesItsTypedErrorAndLosesNothing(_ test: Case) async throws {
        try await FaultServers.with(test.scenario) { base in
            let log = CapturedLog()
            let client = try Self.client(
                base, transport: Self.transport(test.transport), log: log,
                expectsTimeout: test.scenario.outcome.code(at: test.endpoint.rawValue) == "timeout")
            let label = test.testDescription
            switch test.endpoint {
            case .token:
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fault-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: directory) }
                let store = try FileTokenStore(directory: directory)
                let session = try await TokenSession(client: client, tokens: Self.expiredTokens(), store: store)
                let file = store.fileURL(for: session.key)
                let before = try Data(contentsOf: file)
                do {
                    let token = try await session.freshAccessToken()
                    Issue.record("\(label): a refresh succeeded (\(token.count) characters)")
                } catch {
                    Self.check(error, test.scenario, at: test.endpoint, label)
                }
                #expect(try Data(contentsOf: file) == before, "\(label): the stored tokens changed")
            case .userInfo:
                do {
                    _ = try await client.userInfo(accessToken: Self.accessToken, expectedSubject: nil)
                    Issue.record("\(label): UserInfo succeeded")
                } catch {
                    Self.check(error, test.scenario, at: test.endpoint, label)
                }
            }
            for secret in [Self.refreshToken, Self.accessToken, Self.clientSecret] {
                #expect(!log.text.contains(secret), "\(label): a secret in the trace log")
            }
        }
    }

    @Test func theTLSControlSucceeds() async throws {
        // The TLS cases fail for their defect, not for a trust problem of the suite's own.
        let server = try await LocalHTTPServer(tls: TestTLS.context(.valid)) { _ in FaultScenario.tokenReply }
        defer { Task { await server.shutdown() } }
        let client = try Self.client(server.baseURL, transport: FaultServers.asyncHTTPClient, log: CapturedLog())
        #expect(try await client.clientCredentials().accessToken == "at-over-tls")
    }

    /// Transient faults that a session meets with a thousand callers waiting on one refresh.
    static let transient = FaultScenario.allCases.filter {
        $0.outcome.isTransient && $0 != .dnsFailure && $0 != .connectionRefused && $0 != .tlsHandshakeHangs
    }

    @Test(arguments: transient)
    func aThousandCallersGetTheTypedErrorAndTheNextCallRefreshesOnce(_ scenario: FaultScenario) async throws {
        let failing = Flag(true)
        let refreshes = Counter()
        let fault: LocalHTTPServer.Reply
        guard case .http(let reply) = scenario.setup else { return }
        fault = reply
        let server = try await LocalHTTPServer { request in
            guard !failing.value else { return fault }
            _ = refreshes.next()
            return .json(200, #"{"access_token":"at-after-the-fault","token_type":"Bearer","expires_in":3600}"#)
        }
        defer { Task { await server.shutdown() } }
        let clock = ManualDate()
        let client = try Self.client(
            server.baseURL, transport: FaultServers.asyncHTTPClient, log: CapturedLog(),
            expectsTimeout: scenario.outcome.code(at: "token") == "timeout", now: { clock.now })
        let session = try await TokenSession(client: client, tokens: Self.expiredTokens(), store: MemoryTokenStore())
        let outcomes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<1000 {
                group.addTask {
                    do {
                        _ = try await session.freshAccessToken()
                        return "token"
                    } catch let error as OAuth2Error {
                        return error.code.rawValue
                    } catch {
                        return "\(type(of: error))"
                    }
                }
            }
            return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(outcomes == [scenario.outcome.code: 1000], "\(scenario.rawValue): \(outcomes)")
        failing.value = false
        clock.advance(by: 121)  // past any Retry-After
        #expect(try await session.freshAccessToken() == "at-after-the-fault")
        #expect(refreshes.current == 1)
    }
}

/// Starts the server of a scenario; the AsyncHTTPClient transport that trusts the suite's CA.
enum FaultServers {
    static let asyncHTTPClient = AsyncHTTPClientTransport(tls: .init(caBundlePath: TestTLS.caBundlePath), proxies: ProxyEnvironment())

    static func with(_ scenario: FaultScenario, _ body: (URL) async throws -> Void) async throws {
        switch scenario.setup {
        case .http(let reply):
            try await LocalHTTPServer.with(handler: { _ in reply }) { try await body($0.baseURL) }
        case .tls(let certificate):
            try await LocalHTTPServer.with(tls: try TestTLS.context(certificate), handler: { _ in FaultScenario.tokenReply }) {
                try await body($0.baseURL)
            }
        case .refused:
            try await body(URL(string: "http://127.0.0.1:\(try refusedPort())")!)
        case .silentTLS:
            let listener = try await SilentListener()
            do {
                try await body(URL(string: "https://127.0.0.1:\(listener.port)")!)
            } catch {
                await listener.shutdown()
                throw error
            }
            await listener.shutdown()
        case .unresolvable:
            try await body(URL(string: "https://unresolvable.invalid")!)
        }
    }
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var state: Bool
    init(_ value: Bool) { state = value }
    var value: Bool {
        get { lock.withLock { state } }
        set { lock.withLock { state = newValue } }
    }
}

/// docs/fault-suite.md lists every scenario with the outcome the suite checks.
@Suite struct FaultSuiteDocumentTests {
    @Test func theTableListsEveryScenarioWithItsOutcome() throws {
        let document = TestTLS.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/fault-suite.md")
        let rows = try String(contentsOf: document, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("| ") }
        for scenario in FaultScenario.allCases {
            let row = try #require(rows.first { $0.hasPrefix("| \(scenario.rawValue) |") }, "\(scenario.rawValue) is missing")
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let outcome = scenario.outcome
            #expect(cells[1] == scenario.summary)
            #expect(cells[2].hasPrefix("`\(outcome.code)`"))
            if let userInfo = outcome.userInfoCode { #expect(cells[2].contains("UserInfo: `\(userInfo)`")) }
            #expect(cells[3] == (outcome.isTransient ? "yes" : "no"))
            #expect(cells[4] == (outcome.retryAfter.map { String(Int($0)) } ?? "—"))
            #expect(cells[5] == String(outcome.exitStatus))
        }
        #expect(rows.count == FaultScenario.allCases.count + 1, "the header and one row per scenario")
    }
}
