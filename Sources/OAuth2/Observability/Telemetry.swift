import Foundation
import HTTPTypes
import Metrics
import OAuth2Internals
import Tracing

/// What the library reports through swift-metrics and swift-distributed-tracing: the
/// labels, dimensions, span names and attributes are listed in the DocC article "Metrics and
/// traces" (`MetricsAndTraces.md`); keep both in step. No token, code, secret, URL path or
/// query goes into any of them.
enum Telemetry {
    /// Runs one exchange (`operation`) inside its span, and counts and times it.
    static func exchange(
        _ request: HTTPRequest, kind: RequestKind, clock: PipelineClock,
        _ operation: () async throws -> (HTTPResponse, Data)
    ) async throws -> (HTTPResponse, Data) {
        let started = clock.elapsed()
        let endpoint = kind.rawValue
        let span = InstrumentationSystem.tracer.startSpan("oauth2.\(endpoint)", ofKind: .client)
        defer { span.end() }
        span.attributes["oauth2.endpoint"] = endpoint
        span.attributes["http.request.method"] = request.method.rawValue
        if let authority = request.authority {
            // The host only: an authority may carry user information.
            span.attributes["server.address"] = String(authority.split(separator: "@").last ?? "")
        }
        let outcome: String
        do {
            let (response, body) = try await ServiceContext.withValue(span.context) { try await operation() }
            let status = response.status.code
            outcome = "\(status / 100)xx"
            span.attributes["http.response.status_code"] = status
            if status >= 400 { span.setStatus(SpanStatus(code: .error, message: outcome)) }
            finish(span, endpoint: endpoint, outcome: outcome, since: started, clock: clock)
            return (response, body)
        } catch {
            outcome = (error as? OAuth2Error)?.code.rawValue ?? "error"
            span.setStatus(SpanStatus(code: .error, message: outcome))
            finish(span, endpoint: endpoint, outcome: outcome, since: started, clock: clock)
            throw error
        }
    }

    private static func finish(_ span: any Span, endpoint: String, outcome: String, since started: Duration, clock: PipelineClock) {
        span.attributes["oauth2.outcome"] = outcome
        Counter(label: "oauth2_exchanges_total", dimensions: [("endpoint", endpoint), ("outcome", outcome)]).increment()
        Metrics.Timer(label: "oauth2_exchange_duration_seconds", dimensions: [("endpoint", endpoint)])
            .recordNanoseconds(nanoseconds(clock.elapsed() - started))
    }

    /// Counts and times one renewal of a session.
    static func renewal(_ result: Result<RenewalAttempt.Outcome, any Error>, duration: Duration) {
        let outcome: String
        switch result {
        case .success(.renewed(_, let fromServer)): outcome = fromServer ? "refreshed" : "stored"
        case .success(.unsaved): outcome = "unsaved"
        case .success(.signedOut): outcome = "signed_out"
        case .success(.unavailable): outcome = "unavailable"
        case .failure(let error):
            outcome = "failed"
            let code = (error as? OAuth2Error)?.code.rawValue ?? "store"
            Counter(label: "oauth2_session_renewal_failures_total", dimensions: [("code", code)]).increment()
        }
        Counter(label: "oauth2_session_renewals_total", dimensions: [("outcome", outcome)]).increment()
        Metrics.Timer(label: "oauth2_session_renewal_duration_seconds").recordNanoseconds(nanoseconds(duration))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
