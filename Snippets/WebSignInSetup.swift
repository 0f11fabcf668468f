// A web app's sign-in (OAuth2Web): the client, the routes, and a route that needs a
// signed-in user with a scope, calling an API with the user's tokens.
//
// Package.swift: `.product(name: "OAuth2Web", package: "swift-oauth2")`; no trait needed.

// snippet.hide
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web

func setUp() async throws -> WebSignIn {
    // snippet.show
    // snippet.setup
    // The client secret from a file the deployment provides (never in the source or on a command line).
    let secret = try String(contentsOfFile: "/run/secrets/web-app", encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    let configuration = WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example.com")!)
    let client = try await OAuth2Client(
        server: .issuer(URL(string: "https://id.example.com")!),
        configuration: ClientConfiguration(clientID: "web-app", clientSecret: secret, redirectURI: configuration.redirectURI))
    let signIn = WebSignIn(client: client, configuration: configuration)
    // snippet.end
    // snippet.hide
    return signIn
}

func offlineConfiguration() -> WebSignInConfiguration {
    // snippet.show
    // snippet.offline
    // Okta, Auth0, Microsoft Entra, Keycloak (and most servers) issue a refresh token only for
    // offline_access: without it, a user's tokens cannot be renewed once the access token
    // expires, and the user must sign in again. The sign-in's scopes are these, not the
    // client's or a preset's. (Google: not this scope, which it does not know; its preset's access_type=offline.)
    let configuration = WebSignInConfiguration(
        publicBaseURL: URL(string: "https://app.example.com")!,
        scopes: ["openid", "profile", "email", "offline_access"])
    // snippet.end
    // snippet.hide
    return configuration
}

/// What the app's framework would send back.
enum Reply {
    case json(Data)
    case web(WebResponse)
}

// snippet.show
// snippet.route
// A route of the app: `request` is the incoming request's head (swift-http-types).
func orders(_ request: HTTPRequest, signIn: WebSignIn) async throws -> Reply {
    let ordersAPI = URL(string: "https://orders.example.com/v1/orders")!
    switch await signIn.authorize(request, requiring: WebAccessRequirement(scopes: ["orders:read"])) {
    case .granted(let user):
        // user.subject, user.claims["name"], user.csrfToken for the app's forms
        let (_, body) = try await user.tokenSession.perform(HTTPRequest(method: .get, url: ordersAPI))
        return .json(body)
    case .denied(let response):
        return .web(response)  // send it: a redirect to the provider, 401, or 403
    }
}
// snippet.end
