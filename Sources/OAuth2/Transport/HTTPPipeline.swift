import Foundation
import HTTPTypes
import Logging
import OAuth2Internals

/// The path every request of the library takes: the configuration's extra headers, default
/// headers where those set none, interceptors, the transport under one total deadline (with
/// the retries of ``RetryPolicy`` inside it), one log line per attempt, error mapping.
struct HTTPPipeline: Sendable {
    var transport: any HTTPTransport
    var interceptors: [any HTTPInterceptor]
    var logger: Logger
    var userAgent: String
    var additionalHeaders: [RequestKind: HTTPFields]
    /// The longest one exchange may take — connection, headers, the whole body, and every
    /// retry (``HTTPEnvironment/requestDeadline``).
    var deadline: Duration = HTTPEnvironment.defaultRequestDeadline
    /// Which exchanges are repeated after a transient failure, and how.
    var retryPolicy = RetryPolicy()
    /// Where deadlines and back-offs are measured.
    var clock = PipelineClock.continuous

    /// The pipeline with the extra headers of `configuration`.
    func configured(by configuration: ClientConfiguration) -> HTTPPipeline {
        var pipeline = self
        pipeline.additionalHeaders = configuration.additionalHeaders
        return pipeline
    }

    /// Sends one request. Only ``OAuth2Error`` comes out of the library's own code;
    /// an error thrown by an interceptor is passed through unchanged.
    func send(
        _ original: HTTPRequest,
        body originalBody: Data?,
        kind: RequestKind
    ) async throws -> (HTTPResponse, Data) {
        var request = original
        var body = originalBody
        // The configuration's headers may replace the defaults (a GitHub client's `Accept`),
        // never what the request itself set (Content-Type, Authorization).
        for field in additionalHeaders[kind] ?? [:] where request.headerFields[field.name] == nil {
            request.headerFields.append(field)
        }
        if request.headerFields[.userAgent] == nil { request.headerFields[.userAgent] = userAgent }
        if request.headerFields[.accept] == nil, kind != .resource { request.headerFields[.accept] = "application/json" }
        for interceptor in interceptors {
            try await interceptor.willSend(&request, body: &body, kind: kind)
        }
        if Task.isCancelled {
            throw OAuth2Error(.cancelled, source: .transport, message: "The request was cancelled before it was sent.")
        }
        let ends = clock.elapsed() + deadline
        // With retries, the outcome of the latest attempt: when the deadline ends the
        // retries, the caller gets it rather than a bare timeout.
        let latest: Locked<Attempt?>? = retryPolicy.repeats(kind) ? Locked(nil) : nil
        let (response, responseBody) = try await Telemetry.exchange(request, kind: kind, clock: clock) {
            try await withDeadline(deadline, latest: latest) { [self, request, body] in
                try await attempts(request, body: body, kind: kind, deadlineEnds: ends, latest: latest)
            }
        }
        for interceptor in interceptors {
            await interceptor.didReceive(response, body: responseBody, for: request, kind: kind)
        }
        return (response, responseBody)
    }

    /// The outcome of one attempt.
    typealias Attempt = Result<(HTTPResponse, Data), OAuth2Error>

    /// Runs `operation`, and when it has not returned after `deadline` on ``clock``, cancels
    /// it (the transport closes the connection) and returns the `latest` attempt's outcome
    /// when there was one, else throws a timeout. The operation's own error, and the
    /// caller's cancellation, come out as they are.
    private func withDeadline(
        _ deadline: Duration, latest: Locked<Attempt?>?, _ operation: @escaping @Sendable () async throws -> (HTTPResponse, Data)
    ) async throws -> (HTTPResponse, Data) {
        do {
            return try await OAuth2Internals.withDeadline(deadline, clock: clock, onTimeout: {
                if let latest = latest?.withLock({ $0 }) { return try latest.get() }
                var error = OAuth2Error(
                    .timeout, source: .transport,
                    message: "No complete answer within \(Self.describe(deadline)) (connection, headers and body); the request was abandoned and its connection closed.")
                error.deadline = deadline
                throw error
            }, operation: operation)
        } catch {
            throw Self.map(error)  // the caller's cancellation becomes `cancelled`
        }
    }

    /// Sends the request, and again while ``retryPolicy`` allows it and a transient failure
    /// calls for it; one log line per attempt.
    private func attempts(
        _ request: HTTPRequest, body: Data?, kind: RequestKind, deadlineEnds: Duration, latest: Locked<Attempt?>?
    ) async throws -> (HTTPResponse, Data) {
        let repeats = retryPolicy.repeats(kind)
        var attempt = 1
        while true {
            // Nothing of the log line is built unless it is written: the redacted URL alone
            // takes a URLComponents round trip.
            let started = logger.logLevel <= .debug ? ContinuousClock.now : nil
            let wait: Duration
            do {
                let (response, responseBody) = try await transport.send(request, body: body)
                if let started {
                    log(request, body: body, kind: kind, response: response, responseBody: responseBody, started: started)
                }
                guard repeats, attempt < retryPolicy.maximumAttempts,
                    RetryPolicy.retryableStatuses.contains(response.status.code),
                    let delay = delay(after: attempt, retryAfter: ResponseParsing.retryAfter(response, now: Date()), deadlineEnds: deadlineEnds)
                else { return (response, responseBody) }
                latest?.withLock { $0 = .success((response, responseBody)) }
                wait = delay
            } catch {
                let mapped = Self.map(error)
                if let started {
                    logger.debug(
                        "\(request.method) \(request.url.map(Redactor.url) ?? Redactor.placeholder) failed: \(mapped.code)",
                        metadata: ["oauth2.kind": "\(kind.rawValue)", "oauth2.ms": "\(started.millisecondsSinceNow)"]
                    )
                }
                guard repeats, attempt < retryPolicy.maximumAttempts, RetryPolicy.isRetryable(mapped),
                    let delay = delay(after: attempt, retryAfter: nil, deadlineEnds: deadlineEnds)
                else { throw mapped }
                latest?.withLock { $0 = .failure(mapped) }
                wait = delay
            }
            logger.debug(
                "\(request.method) \(request.url.map(Redactor.url) ?? Redactor.placeholder): attempt \(attempt + 1) of \(retryPolicy.maximumAttempts) in \(Self.describe(wait))",
                metadata: ["oauth2.kind": "\(kind.rawValue)"])
            do {
                try await clock.sleep(wait)
            } catch {
                throw Self.map(error)
            }
            attempt += 1
        }
    }

    /// The wait before the next attempt: the server's `Retry-After` when it gave one, else
    /// the policy's back-off; `nil` when that wait would not end before the deadline (the
    /// caller then gets this attempt's outcome) or exceeds the policy's longest back-off.
    private func delay(after attempt: Int, retryAfter: TimeInterval?, deadlineEnds: Duration) -> Duration? {
        let wait: Duration
        if let retryAfter {
            guard retryAfter >= 0, retryAfter <= retryPolicy.maximumBackoff.timeInterval else { return nil }
            wait = .milliseconds(Int64((retryAfter * 1000).rounded(.up)))
        } else {
            wait = retryPolicy.backoff(after: attempt, unit: Double.random(in: 0..<1))
        }
        return clock.elapsed() + wait < deadlineEnds ? wait : nil
    }

    /// `30 s`, `1.5 s`, `200 ms`.
    static func describe(_ duration: Duration) -> String {
        let seconds = duration.timeInterval
        if seconds >= 1 { return seconds == seconds.rounded() ? "\(Int(seconds)) s" : String(format: "%.1f s", seconds) }
        return "\(Int((seconds * 1000).rounded())) ms"
    }

    /// The exchange's log line (debug), with the redacted request and response at trace.
    private func log(
        _ request: HTTPRequest, body: Data?, kind: RequestKind, response: HTTPResponse, responseBody: Data,
        started: ContinuousClock.Instant
    ) {
        var metadata: Logger.Metadata = [
            "oauth2.kind": "\(kind.rawValue)",
            "oauth2.ms": "\(started.millisecondsSinceNow)",
            "oauth2.bytes": "\(responseBody.count)",
        ]
        if logger.logLevel <= .trace {
            // Only a form body is shown (names, and allow-listed values): any other body — the
            // JSON of a registration — would come out whole as one "parameter name".
            if let body, request.headerFields[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") ?? false,
                let text = String(data: body, encoding: .utf8), let pairs = FormURLEncoding.decode(text)
            {
                metadata["oauth2.request"] = "\(Redactor.parameters(pairs))"
            } else if let members = body.flatMap(JSONValue.parseObject) {
                metadata["oauth2.request"] =
                    "\(members.keys.sorted().map { "\($0)=\(Redactor.value(members[$0]?.stringValue ?? "…", forParameter: $0))" }.joined(separator: "&"))"
            }
            metadata["oauth2.requestHeaders"] = "\(Redactor.headers(request.headerFields))"
            if let members = ResponseParsing.members(of: responseBody, contentType: response.headerFields[.contentType]) {
                // A visible member (`error_description`…) may echo a secret the request carried.
                let secrets = HeldSecrets(request: request, body: body)
                metadata["oauth2.response"] =
                    "\(members.keys.sorted().map { "\($0)=\(secrets.scrub(Redactor.value(members[$0]?.stringValue ?? "…", forParameter: $0)))" }.joined(separator: "&"))"
            }
            if let challenge = response.headerFields[.wwwAuthenticate] {
                metadata["oauth2.challenge"] = "\(HeldSecrets(request: request, body: body).scrub(Redactor.sanitizeServerText(challenge)))"
            }
        }
        logger.debug("\(request.method) \(request.url.map(Redactor.url) ?? Redactor.placeholder) → \(response.status.code)", metadata: metadata)
    }

    static func map(_ error: any Error) -> OAuth2Error {
        switch error {
        case let error as OAuth2Error: return error
        case is CancellationError:
            return OAuth2Error(.cancelled, source: .transport, message: "The request was cancelled.")
        default:
            return OAuth2Error(.network, source: .transport, message: "The request failed.", underlyingError: error)
        }
    }
}

extension ContinuousClock.Instant {
    var millisecondsSinceNow: Int64 {
        let elapsed = ContinuousClock.now - self
        return elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }
}

extension HTTPRequest {
    /// A request for an absolute URL; throws instead of building a request without a host.
    static func make(method: Method, url: URL) throws(OAuth2Error) -> HTTPRequest {
        guard url.scheme != nil, let host = url.host, !host.isEmpty else {
            throw .client(.invalidConfiguration, "The URL \(Redactor.url(url)) is not absolute.")
        }
        return HTTPRequest(method: method, url: url)
    }
}
