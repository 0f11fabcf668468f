#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import Vapor

/// The backend of a single-page app on Vapor: answers `SinglePageAppBackend`'s routes (the
/// user as JSON, the proxied APIs, bodies streamed both ways) and passes every other
/// request on.
///
/// Use it as a global middleware (`app.middleware.use`), where a request's body is still a
/// stream: every decision (anti-forgery checks, sessions, tokens, which header fields go
/// where) is `SinglePageAppBackend`'s.
///
/// ```swift
/// app.middleware.use(VaporWebSignInMiddleware(signIn))             // login, callback, logout…
/// app.middleware.use(VaporSinglePageAppMiddleware(backend))        // /bff/user, /bff/api/…
/// ```
public struct VaporSinglePageAppMiddleware: AsyncMiddleware {
    /// The backend whose routes this middleware answers.
    public let backend: SinglePageAppBackend

    /// Creates the middleware of `backend`.
    public init(_ backend: SinglePageAppBackend) {
        self.backend = backend
    }

    /// Answers a backend route, streaming the request's body to the API and the API's
    /// answer back; any other request goes to `next`.
    ///
    /// - Throws: whatever `next` throws.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let head = request.httpRequest
        guard backend.route(of: head) != nil else { return try await next.respond(to: request) }
        // A request without a body has no stream to read (Vapor refuses to iterate one).
        let announcesBody = head.headerFields[.transferEncoding] != nil || (head.headerFields[.contentLength].flatMap { Int($0) } ?? 0) > 0
        let body = announcesBody ? WebStreamBody(request.body) { Array(buffer: $0) } : nil
        guard let answer = await backend.handle(head, body: body) else { return try await next.respond(to: request) }
        return Response(answer)
    }
}

extension Response {
    /// The Vapor response of a `WebStreamResponse`: its status, header fields and body,
    /// streamed as it arrives.
    public convenience init(_ answer: WebStreamResponse) {
        var headers = HTTPHeaders()
        // Vapor writes the length (or chunked encoding) from the body's count.
        for field in answer.head.headerFields where field.name != .contentLength {
            headers.add(name: field.name.rawName, value: field.value)
        }
        let chunks = answer.body
        let body = Response.Body(
            managedAsyncStream: { writer in
                for try await chunk in chunks { try await writer.writeBuffer(ByteBuffer(bytes: chunk)) }
            }, count: answer.contentLength ?? -1)
        self.init(status: HTTPResponseStatus(statusCode: Int(answer.head.status.code)), headers: headers, body: body)
    }
}
#endif
