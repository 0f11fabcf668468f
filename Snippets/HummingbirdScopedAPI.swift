// A Hummingbird API (OAuth2Hummingbird, trait Hummingbird) whose routes each require their
// own scopes, over a `ResourceServer` built as "Protecting an API" shows.
//
// Package.swift: `.package(url: "https://github.com/swift-oauth2/swift-oauth2", from: "1.0.0",
// traits: ["URLSession", "Hummingbird"])` and `.product(name: "OAuth2Hummingbird", package:
// "swift-oauth2")`, `.product(name: "Hummingbird", package: "hummingbird")`.

// snippet.hide
#if Hummingbird
import HTTPTypes
import Hummingbird
import OAuth2Hummingbird
import OAuth2Web

// snippet.show
// snippet.context
// The request context carries the verified token to the routes.
struct APIRequestContext: AccessTokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var accessToken: VerifiedAccessToken?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// What GET /orders answers: `{"owner":"…","orders":[]}`.
struct OrderList: ResponseEncodable {
    var owner: String?
    var orders: [String]
}
// snippet.end

// snippet.hide
@available(macOS 14, *)
func ordersRouter(server: ResourceServer) -> Router<APIRequestContext> {
    // snippet.show
    // snippet.routes
    let router = Router(context: APIRequestContext.self)
    // GET /orders needs orders:read; POST /orders needs orders:write. A token without the
    // scope gets 403 insufficient_scope naming it, so that the client asks for it.
    // A ResponseEncodable value is answered as JSON (the context's JSONEncoder).
    router.group("orders")
        .add(middleware: HummingbirdResourceServerMiddleware(server, requiredScopes: ["orders:read"]))
        .get { _, context in OrderList(owner: context.accessToken?.subject, orders: []) }
    router.group("orders")
        .add(middleware: HummingbirdResourceServerMiddleware(server, requiredScopes: ["orders:write"]))
        .post { _, _ in HTTPResponse.Status.created }
    // snippet.end
    // snippet.hide
    return router
}
#endif
