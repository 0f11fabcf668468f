#if Hummingbird && Postgres
import Foundation
import HTTPTypes
@testable import HummingbirdWebApp
import OAuth2Postgres
import OAuth2TestSupport
import OAuth2Testing
import PostgresNIO
import Testing

/// The example app as a fleet: two replicas behind one public address, on the PostgreSQL of
/// scripts/test-servers (OAUTH2_TEST_POSTGRES_URL; without it the test fails), in a schema of
/// the test's own, dropped at its end. Neither replica knows the other: what one sees of the
/// other's sign-ins comes from PostgreSQL.
@Suite("Hummingbird example on PostgreSQL", .timeLimit(.minutes(3)))
struct FleetOnPostgresTests {
    @Test("a sign-in at one replica is a session at the other; signing out at the other ends it at both")
    func twoReplicasShareSessions() async throws {
        IntegrationLog.append("postgres", test: Test.current?.id.description ?? "FleetOnPostgresTests")
        guard let url = ProcessInfo.processInfo.environment["OAUTH2_TEST_POSTGRES_URL"], !url.isEmpty else {
            Issue.record("OAUTH2_TEST_POSTGRES_URL is not set: start scripts/test-servers/up.sh (or postgres.sh) and source its env")
            return
        }
        let schema = "t_example_" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        var key = [UInt8](repeating: 0, count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        var settings = ExampleSettings()
        settings.port = 0
        // The load balancer's address, which browsers see; the test talks to each replica's port.
        settings.publicURL = URL(string: "http://app.example")!
        settings.clientSecret = ExampleServer.randomSecret()  // the fleet's one client
        settings.postgresURL = url
        settings.encryptionKeys = "k1:" + Data(key).base64EncodedString()
        settings.postgresSchema = schema
        do {
            try await Self.signInAtOneSignOutAtTheOther(settings: settings)
        } catch {
            await Self.drop(schema: schema, url: url)
            throw error
        }
        await Self.drop(schema: schema, url: url)
    }

    static func signInAtOneSignOutAtTheOther(settings: ExampleSettings) async throws {
        try await TestProvider.withProvider(configuration: .demo) { provider in
            try await Self.withReplicas(2, settings: settings, provider: provider) { replicas in
                let (a, b) = (replicas[0], replicas[1])
                var browser = Browser()
                // Sign in at A: the callback the provider sends to the public address reaches A.
                let (start, _) = try await browser.get(a.at("/profile"))
                #expect(start.status == .seeOther)
                let authorization = try #require(start.headerFields[.location].flatMap(URL.init(string:)))
                let callback = try await provider.followRedirect(from: authorization)
                #expect(callback.absoluteString.hasPrefix("http://app.example/auth/callback?"))
                let (signedIn, _) = try await browser.get(Self.at(a, callback))
                #expect(signedIn.status == .seeOther)

                // B knows the session (from PostgreSQL), with the user's tokens.
                let (profile, page) = try await browser.get(b.at("/profile"))
                #expect(profile.status == .ok)
                #expect(page.text.contains(TestProvider.Demo.subject))
                let (info, _) = try await browser.get(b.at("/api/userinfo"))
                #expect(info.status == .ok, "B refreshes or uses the tokens A stored")

                // Sign out at B; A no longer knows the browser.
                let csrf = try #require(csrfToken(in: page.text))
                let (signedOut, _) = try await browser.send(.post, b.at("/auth/logout"), form: [("csrf", csrf)], headers: [.origin: "http://app.example"])
                #expect(signedOut.status == .seeOther)
                let (after, _) = try await browser.get(a.at("/profile"))
                #expect(after.status == .seeOther, "A sends the browser to sign in again")
            }
        }
    }

    /// `url`'s path and query at `replica`.
    static func at(_ replica: URL, _ url: URL) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        let base = URLComponents(url: replica, resolvingAgainstBaseURL: false)!
        components.scheme = base.scheme
        components.host = base.host
        components.port = base.port
        return components.url!
    }

    /// Runs `count` replicas of the example with `settings` on `provider`, then `body` with
    /// each one's own address; stops them afterwards.
    static func withReplicas(
        _ count: Int, settings: ExampleSettings, provider: TestProvider, _ body: ([URL]) async throws -> Void
    ) async throws {
        let (listening, continuation) = AsyncStream.makeStream(of: URL.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await ExampleServer.run(settings: settings, embeddedProvider: provider, logger: WebAppFixture.logger, handlesSignals: false) {
                        _, port in continuation.yield(URL(string: "http://127.0.0.1:\(port)")!)
                    }
                }
            }
            defer { group.cancelAll() }
            var replicas: [URL] = []
            for await url in listening {
                replicas.append(url)
                if replicas.count == count { break }
            }
            try await body(replicas)
        }
    }

    /// Drops the test's schema (best effort: a schema a failed drop leaves harms no other test).
    static func drop(schema: String, url: String) async {
        guard let configuration = try? PostgresTokenStore.clientConfiguration(url: url) else { return }
        let client = PostgresClient(configuration: configuration)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            _ = try? await client.query("DROP SCHEMA IF EXISTS \(unescaped: schema) CASCADE")
            group.cancelAll()
        }
    }
}
#endif
