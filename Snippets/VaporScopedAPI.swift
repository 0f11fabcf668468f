// A Vapor API (OAuth2Vapor, trait Vapor) whose routes each require their own scopes, over a
// `ResourceServer` built as "Protecting an API" shows.
//
// Package.swift: `.package(url: "https://github.com/swift-oauth2/swift-oauth2", from: "1.0.0",
// traits: ["URLSession", "Vapor"])` and `.product(name: "OAuth2Vapor", package:
// "swift-oauth2")`, `.product(name: "Vapor", package: "vapor")`.

// snippet.hide
#if Vapor
import OAuth2Vapor
import OAuth2Web
import Vapor

func ordersRoutes(_ app: Application, server: ResourceServer) {
    // snippet.show
    // snippet.routes
    // GET /orders needs orders:read; POST /orders needs orders:write. A token without the
    // scope gets 403 insufficient_scope naming it, so that the client asks for it.
    app.grouped(VaporResourceServerMiddleware(server, requiredScopes: ["orders:read"]))
        .get("orders") { request -> String in request.accessToken?.subject ?? "" }
    app.grouped(VaporResourceServerMiddleware(server, requiredScopes: ["orders:write"]))
        .post("orders") { _ -> HTTPStatus in .created }
    // snippet.end
    // snippet.hide
}
#endif
