import Foundation
import HTTPTypes
import Logging

/// The path every request of the library takes: the configuration's extra headers, default
/// headers where those set none, interceptors, the transport, one log line per exchange, error mapping.
struct HTTPPipeline: Sendable {
    var transport: any HTTPTransport
    var interceptors: [any HTTPInterceptor]
    var logger: Logger
    var userAgent: String
    var additionalHeaders: [RequestKind: HTTPFields]

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
        // Nothing of the log line is built unless it is written: the redacted URL alone
        // takes a URLComponents round trip.
        let logs = logger.logLevel <= .debug
        let started = logs ? ContinuousClock.now : nil
        let response: HTTPResponse
        let responseBody: Data
        do {
            (response, responseBody) = try await transport.send(request, body: body)
        } catch {
            let mapped = Self.map(error)
            if let started {
                logger.debug(
                    "\(request.method) \(request.url.map(Redactor.url) ?? Redactor.placeholder) failed: \(mapped.code)",
                    metadata: ["oauth2.kind": "\(kind.rawValue)", "oauth2.ms": "\(started.millisecondsSinceNow)"]
                )
            }
            throw mapped
        }
        if let started {
            log(request, body: body, kind: kind, response: response, responseBody: responseBody, started: started)
        }
        for interceptor in interceptors {
            await interceptor.didReceive(response, body: responseBody, for: request, kind: kind)
        }
        return (response, responseBody)
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
