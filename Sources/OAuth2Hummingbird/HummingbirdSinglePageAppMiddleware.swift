#if Hummingbird
import HTTPTypes
import Hummingbird
import NIOCore
import OAuth2Web

/// The backend of a single-page app on Hummingbird: answers `SinglePageAppBackend`'s routes
/// (the user as JSON, the proxied APIs, bodies streamed both ways) and passes every other
/// request on.
///
/// It only translates: every decision (anti-forgery checks, sessions, tokens, which header
/// fields go where) is `SinglePageAppBackend`'s.
///
/// ```swift
/// let router = Router(context: AppRequestContext.self)
/// router.add(middleware: HummingbirdWebSignInMiddleware(signIn))          // login, callback, logout…
/// router.add(middleware: HummingbirdSinglePageAppMiddleware(backend))     // /bff/user, /bff/api/…
/// ```
@available(macOS 14, iOS 17, tvOS 17, *)
public struct HummingbirdSinglePageAppMiddleware<Context: RequestContext>: RouterMiddleware {
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
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard backend.route(of: request.head) != nil else { return try await next(request, context) }
        let body = Self.hasBody(request.head) ? WebStreamBody(request.body) { Array(buffer: $0) } : nil
        guard let answer = await backend.handle(request.head, body: body) else { return try await next(request, context) }
        return Response(answer)
    }

    /// Whether the request announces a body (`Content-Length` above 0, or `Transfer-Encoding`).
    static func hasBody(_ head: HTTPRequest) -> Bool {
        if head.headerFields[.transferEncoding] != nil { return true }
        return head.headerFields[.contentLength].flatMap { Int($0) }.map { $0 > 0 } ?? false
    }
}

@available(macOS 14, iOS 17, tvOS 17, *)
extension Response {
    /// The Hummingbird response of a `WebStreamResponse`: its status, header fields and
    /// body, streamed as it arrives.
    public init(_ answer: WebStreamResponse) {
        let body = answer.body
        self.init(
            status: answer.head.status, headers: answer.head.headerFields,
            body: ResponseBody(contentLength: answer.contentLength) { writer in
                for try await chunk in body { try await writer.write(ByteBuffer(bytes: chunk)) }
                try await writer.finish(nil)
            })
    }
}
#endif
