#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import Vapor

/// Answers OAuth2Web's sign-in routes (login, callback, logout, back- and front-channel
/// logout) and puts the signed-in user, if any, in every other request
/// (``Vapor/Request/webUser``).
///
/// ```swift
/// let signIn = WebSignIn(client: client, configuration: WebSignInConfiguration(publicBaseURL: baseURL))
/// app.middleware.use(WebSignInMiddleware(signIn))
/// app.grouped(RequireSignIn(signIn)).get("profile") { request in
///     "Hello, \(try request.requireWebUser().subject)"
/// }
/// ```
///
/// Every rule (cookies, `state`, CSRF, lifetimes, logout tokens) is OAuth2Web's: this type
/// only translates Vapor's requests and responses.
public struct WebSignInMiddleware: AsyncMiddleware {
    /// The web app's sign-in.
    public let signIn: WebSignIn

    /// Creates the middleware of `signIn`.
    public init(_ signIn: WebSignIn) {
        self.signIn = signIn
    }

    /// Answers a sign-in route, or looks up the request's user and passes it on.
    ///
    /// - Throws: `Abort(.serviceUnavailable)` when the session store cannot be read; a body
    ///   over `WebSignIn.maximumBodySize` on a route that reads it: `Abort(.payloadTooLarge)`;
    ///   whatever `next` throws.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let head = request.httpRequest
        if signIn.route(of: head) != nil {
            let body = signIn.readsBody(head) ? try await request.bodyBytes() : nil
            // A route always answers; `nil` would mean another path, which `route(of:)` ruled out.
            guard let answer = await signIn.handle(head, body: body ?? []) else { return try await next.respond(to: request) }
            return Response(answer)
        }
        if request.webUser == nil {
            do {
                request.webUser = try await signIn.user(for: head)
            } catch {
                // Not "signed out": the session store could not answer.
                request.logger.debug("Web sign-in: the session store could not be read", metadata: ["error": "\(type(of: error))"])
                throw Abort(.serviceUnavailable)
            }
        }
        return try await next.respond(to: request)
    }
}

/// Requires a signed-in user who meets a requirement, for the routes it guards: otherwise
/// answers as `WebSignIn.authorize(_:requiring:)` says (a redirect to the provider, a
/// step-up, 401 or 403).
public struct RequireSignIn: AsyncMiddleware {
    /// The web app's sign-in.
    public let signIn: WebSignIn
    /// What the guarded routes require.
    public let requirement: WebAccessRequirement

    /// Guards routes with `requirement` (by default: any signed-in user).
    public init(_ signIn: WebSignIn, requiring requirement: WebAccessRequirement = WebAccessRequirement()) {
        self.signIn = signIn
        self.requirement = requirement
    }

    /// Lets the request through with its user, or answers instead.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        switch await signIn.authorize(request.httpRequest, requiring: requirement) {
        case .granted(let user):
            request.webUser = user
            return try await next.respond(to: request)
        case .denied(let answer):
            return Response(answer)
        }
    }
}

/// Requires an access token that OAuth2Web's `ResourceServer` accepts (bearer or DPoP, JWT
/// or introspected), with `requiredScopes`; refuses with the RFC 6750 / RFC 9449 challenge.
/// The verified token is ``Vapor/Request/accessToken``.
public struct BearerTokenMiddleware: AsyncMiddleware {
    /// The checks.
    public let resourceServer: ResourceServer
    /// Scopes every guarded route needs.
    public let requiredScopes: [String]

    /// Guards routes with `resourceServer`'s checks and `requiredScopes`.
    public init(_ resourceServer: ResourceServer, requiredScopes: [String] = []) {
        self.resourceServer = resourceServer
        self.requiredScopes = requiredScopes
    }

    /// Lets the request through with its verified token, or answers with the challenge.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        switch await resourceServer.authorize(request.httpRequest, requiredScopes: requiredScopes) {
        case .authorized(let authorized):
            request.accessToken = authorized.token
            let response = try await next.respond(to: request)
            for field in authorized.responseHeaderFields { response.headers.add(name: field.name.rawName, value: field.value) }
            return response
        case .refused(let challenge):
            return Response(WebResponse(status: challenge.status, headerFields: challenge.headerFields))
        }
    }
}

extension Request {
    private struct WebUserKey: StorageKey {
        typealias Value = WebUser
    }

    private struct AccessTokenKey: StorageKey {
        typealias Value = VerifiedAccessToken
    }

    /// The signed-in user: set by ``WebSignInMiddleware`` (when the request's cookie names a
    /// live session) and ``RequireSignIn``.
    public var webUser: WebUser? {
        get { storage[WebUserKey.self] }
        set { storage[WebUserKey.self] = newValue }
    }

    /// The signed-in user, or 401 if there is none (a route not guarded by ``RequireSignIn``).
    public func requireWebUser() throws -> WebUser {
        guard let webUser else { throw Abort(.unauthorized) }
        return webUser
    }

    /// The access token ``BearerTokenMiddleware`` verified.
    public var accessToken: VerifiedAccessToken? {
        get { storage[AccessTokenKey.self] }
        set { storage[AccessTokenKey.self] = newValue }
    }

    /// The request as swift-http-types sees it: method, path and query, `Host`, header fields.
    public var httpRequest: HTTPRequest {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return HTTPRequest(
            method: HTTPRequest.Method(method.rawValue) ?? .get, scheme: nil, authority: headers.first(name: .host),
            path: url.string, headerFields: fields)
    }

    /// The body, at most `WebSignIn.maximumBodySize` bytes (more: 413).
    func bodyBytes() async throws -> [UInt8] {
        guard let buffer = try await body.collect(max: WebSignIn.maximumBodySize).get() else { return [] }
        return Array(buffer.readableBytesView)
    }
}

extension Response {
    /// The response OAuth2Web made, as Vapor's.
    public convenience init(_ answer: WebResponse) {
        var headers = HTTPHeaders()
        for field in answer.headerFields { headers.add(name: field.name.rawName, value: field.value) }
        self.init(status: HTTPResponseStatus(statusCode: Int(answer.status.code)), headers: headers, body: .init(data: Data(answer.body)))
    }
}
#endif
