import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import OAuth2Hummingbird
import OAuth2Web

// The route the Hummingbird measurements share: HummingbirdBenchmarks (ordo-one, wall clock
// and allocations) and bench-instructions (callgrind, instructions).

/// The request context of every route here: both middlewares' slots.
public struct BenchRequestContext: AccessTokenRequestContext, WebSignInRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var accessToken: VerifiedAccessToken?
    public var webUser: WebUser?

    /// A context for a request from `source`.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// A router's responder and the requests sent to it, one after the other.
public struct RouteDriver: Sendable {
    /// The router's responder.
    public let responder: RouterResponder<BenchRequestContext>
    /// The requests, sent in turn.
    public let requests: [HTTPRequest]
    let channel = NIOAsyncTestingChannel()
    let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The route `GET /api/orders`, without middleware.
    public init(requests: [HTTPRequest]) {
        self.init(requests: requests) { _ in }
    }

    /// The route `GET /api/orders`, behind `middleware`.
    public init(requests: [HTTPRequest], middleware: some RouterMiddleware<BenchRequestContext>) {
        self.init(requests: requests) { group in group.add(middleware: middleware) }
    }

    private init(requests: [HTTPRequest], configure: (RouterGroup<BenchRequestContext>) -> Void) {
        let router = Router(context: BenchRequestContext.self)
        let group = router.group("api")
        configure(group)
        group.get("orders") { _, _ in "ok" }
        responder = router.buildResponder()
        self.requests = requests
    }

    /// Sends the `index`th request (modulo their number) and returns the status.
    @inline(never)
    public func respond(_ index: Int) async throws -> HTTPResponse.Status {
        let request = Request(head: requests[index % requests.count], body: RequestBody(buffer: ByteBuffer()))
        let context = BenchRequestContext(source: .init(channel: channel, logger: logger))
        return try await responder.respond(to: request, context: context).status
    }
}
