import CoreMetrics
import Foundation
import HTTPTypes
import InMemoryTracing
import MetricsTestKit
import OAuth2Internals
import Testing
import Tracing
@testable import OAuth2

/// Marks a test's spans (the tracer is global to the test process; tests run in parallel).
private enum TestRun: ServiceContextKey { typealias Value = String }

/// The test process's tracer, bootstrapped once.
private let tracer: InMemoryTracer = {
    let tracer = InMemoryTracer()
    InstrumentationSystem.bootstrap(tracer)
    return tracer
}()

@Suite("Telemetry: metrics and spans of exchanges and renewals")
struct TelemetryTests {
    static let secret = "s3cr3t-never-reported"

    /// Runs `body` with metrics into a fresh `TestMetrics` and its spans marked; returns both.
    func observed(_ body: () async throws -> Void) async throws -> (TestMetrics, [FinishedInMemorySpan]) {
        let metrics = TestMetrics()
        let run = UUID().uuidString
        var context = ServiceContext.current ?? .topLevel
        context[TestRun.self] = run
        _ = tracer
        try await withMetricsFactory(metrics) {
            try await ServiceContext.withValue(context) { try await body() }
        }
        return (metrics, tracer.finishedSpans.filter { $0.context[TestRun.self] == run })
    }

    @Test("Each exchange is counted by endpoint and outcome, timed, and traced without a token or secret")
    func exchanges() async throws {
        let transport = StubTransport { request, _ in
            request.path == "/token" ? response(200, StubTransport.tokenJSON) : response(500, "{}")
        }
        let client = try Fixtures.client(transport, configuration: Fixtures.configuration(secret: Self.secret))
        let (metrics, spans) = try await observed {
            _ = try await client.clientCredentials(scopes: ["read"])
        }
        #expect(try metrics.expectCounter("oauth2_exchanges_total", [("endpoint", "token"), ("outcome", "2xx")]).totalValue == 1)
        #expect(try metrics.expectTimer("oauth2_exchange_duration_seconds", [("endpoint", "token")]).values.count == 1)
        let span = try #require(spans.first { $0.operationName == "oauth2.token" })
        #expect(span.attributes["oauth2.endpoint"]?.toSpanAttribute() == "token")
        #expect(span.attributes["http.request.method"]?.toSpanAttribute() == "POST")
        #expect(span.attributes["server.address"]?.toSpanAttribute() == "as.example.com")
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(span.attributes["oauth2.outcome"]?.toSpanAttribute() == "2xx")
        #expect(span.status == nil)
        let reported = "\(spans)"
        for secret in [Self.secret, "at-1", "rt-1"] { #expect(!reported.contains(secret)) }
    }

    @Test("Refused and failed exchanges: the status class, or the error code without its text")
    func failures() async throws {
        let refusing = try Fixtures.client(StubTransport(status: 401, json: #"{"error":"invalid_client"}"#))
        let unreachable = try Fixtures.client(StubTransport { _, _ in throw URLError(.cannotConnectToHost) })
        let (metrics, spans) = try await observed {
            await #expect(throws: OAuth2Error.self) { try await refusing.clientCredentials(scopes: []) }
            await #expect(throws: OAuth2Error.self) { try await unreachable.clientCredentials(scopes: []) }
        }
        #expect(try metrics.expectCounter("oauth2_exchanges_total", [("endpoint", "token"), ("outcome", "4xx")]).totalValue == 1)
        #expect(try metrics.expectCounter("oauth2_exchanges_total", [("endpoint", "token"), ("outcome", "network")]).totalValue == 1)
        let statuses = spans.filter { $0.operationName == "oauth2.token" }.compactMap(\.status)
        #expect(statuses.count == 2)
        #expect(statuses.allSatisfy { $0.code == .error })
        #expect(Set(statuses.compactMap(\.message)) == ["4xx", "network"])
    }

    @Test("Each renewal of a session is counted by outcome and timed; failures by code")
    func renewals() async throws {
        let answers = Locked([response(200, StubTransport.tokenJSON), response(400, #"{"error":"invalid_grant"}"#)])
        let transport = StubTransport { _, _ in answers.withLock { $0.removeFirst() } }
        let client = try Fixtures.client(transport)
        let expired = TokenSet(accessToken: "at-0", refreshToken: "rt-0", expiresAt: Date().addingTimeInterval(-60))
        let (metrics, _) = try await observed {
            let session = try await TokenSession(client: client, tokens: expired)
            _ = try await session.freshAccessToken()
            await #expect(throws: OAuth2Error.self) { try await session.refresh() }
        }
        #expect(try metrics.expectCounter("oauth2_session_renewals_total", [("outcome", "refreshed")]).totalValue == 1)
        #expect(try metrics.expectCounter("oauth2_session_renewals_total", [("outcome", "signed_out")]).totalValue == 1)
        #expect(try metrics.expectTimer("oauth2_session_renewal_duration_seconds").values.count == 2)
    }
}
