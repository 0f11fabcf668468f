import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2Web

/// The one RFC 9728 test of a web-framework adapter: an app with the adapter's metadata
/// middleware and a `GET /mcp` route behind its resource-server middleware (requiring
/// ``requiredScopes``, answering 200 with the token's subject), both over
/// ``resourceServer()``, is sent real requests and must serve the metadata document at
/// ``metadataPath``, point to it from its challenges, and accept only tokens for the
/// resource — through the framework's request and response types.
///
/// ```swift
/// let failures = try await ProtectedResourceAPIConformance.run { method, path, fields in … }
/// #expect(failures.isEmpty, "\(failures)")
/// ```
///
/// Time stands still at ``now``, as in ``DPoPAPIConformance``.
public enum ProtectedResourceAPIConformance {
    static let issuer = "https://id.example.com"
    /// The resource identifier (another host than the socket's: it comes from configuration).
    public static let identifier = URL(string: "https://mcp.example.com/mcp")!
    /// Where the metadata is served.
    public static let metadataPath = "/.well-known/oauth-protected-resource/mcp"
    /// The metadata's URL, as challenges name it.
    public static let metadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    /// The scopes the `/mcp` route requires.
    public static let requiredScopes = ["tools:call"]
    static let signingKey = Result { try JWSSigningKey.generate(.es256, keyID: "mcp-api-1") }
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The resource server of the app under test: JWT access tokens of this suite's issuer,
    /// for the resource ``identifier``.
    public static func resourceServer() throws -> ResourceServer {
        let key = try signingKey.get()
        guard let publicKey = key.publicKey else { throw JOSEError(.invalidKey, "The signing key has no public key.") }
        // The issuer names no audience of its own: the resource's identifier is the one name.
        var verifier = AccessTokenVerifier(issuers: [TrustedIssuer(issuer: issuer, audiences: [], keys: .fixed(JSONWebKeySet(keys: [publicKey])))])
        verifier.now = { now }
        let resource = try ProtectedResource(identifier: identifier, scopesSupported: ["tools:read", "tools:call"], name: "Conformance MCP server")
        return try ResourceServer(resource: resource, accessTokens: verifier)
    }

    static func token(audience: String, scope: String) throws -> String {
        let issuedAt = Int64(now.timeIntervalSince1970)
        let claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": "user-1", "client_id": "client-1", "scope": .string(scope),
            "iat": .integer(issuedAt), "exp": .integer(issuedAt + 600), "jti": .string(UUID().uuidString),
        ]
        return try signingKey.get().sign(claims: claims, header: ["typ": "at+jwt"])
    }

    /// Runs the checks; `send` sends a request with `method` to `path` of the app with the
    /// given header fields. Returns what failed, one line each.
    public static func run(send: (HTTPRequest.Method, String, HTTPFields) async throws -> DPoPAPIConformance.Answer) async throws -> [String] {
        var failures: [String] = []
        func check(_ condition: Bool, _ what: String) { if !condition { failures.append(what) } }

        // The document, at the path-inserted well-known URL.
        let metadata = try await send(.get, metadataPath, [:])
        check(metadata.status == 200, "GET \(metadataPath) answers 200 (got \(metadata.status): \(metadata.body))")
        check(metadata.headerFields[.contentType]?.hasPrefix("application/json") == true, "as JSON: \(metadata.headerFields)")
        check(metadata.headerFields[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "with nosniff")
        check(metadata.headerFields[.cacheControl] == "public, max-age=3600", "cacheable: \(metadata.headerFields)")
        let document = try? JSONDecoder().decode([String: JSONValue].self, from: Data(metadata.body.utf8))
        check(document?["resource"] == .string(identifier.absoluteString), "its resource is the identifier: \(metadata.body)")
        check(document?["authorization_servers"] == .array([.string(issuer)]), "its authorization servers are the trusted issuers")
        check(document?["scopes_supported"] == ["tools:read", "tools:call"], "its scopes are the configured ones")
        check(document?["bearer_methods_supported"] == ["header"], "tokens go in the header only")

        let head = try await send(.head, metadataPath, [:])
        check(head.status == 200 && head.body.isEmpty, "HEAD answers 200 without a body (got \(head.status))")
        let post = try await send(.post, metadataPath, [:])
        check(post.status == 405, "POST is not allowed (got \(post.status))")
        check(post.headerFields[.allow] == "GET, HEAD, OPTIONS", "and says which methods are")
        let root = try await send(.get, "/.well-known/oauth-protected-resource", [:])
        check(root.status == 404, "the root well-known URL names another resource: not served (got \(root.status))")

        // No token: the challenge points to the metadata and names the route's scopes.
        let none = try await send(.get, "/mcp", [:])
        let challenge = none.headerFields[.wwwAuthenticate] ?? ""
        check(none.status == 401, "no token: 401 (got \(none.status))")
        check(challenge.contains(#"resource_metadata="\#(metadataURL)""#), "the challenge names the metadata: \(challenge)")
        check(challenge.contains(#"scope="tools:call""#), "and the scopes the route needs: \(challenge)")
        check(!challenge.contains("error="), "and no error (RFC 6750 §3.1)")

        // A token for another resource; one for this resource; one without the scope.
        let elsewhere = try await send(.get, "/mcp", [.authorization: "Bearer " + (try token(audience: "https://other.example/mcp", scope: "tools:call"))])
        check(elsewhere.status == 401, "a token for another resource is refused (got \(elsewhere.status))")
        check(elsewhere.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true, "as invalid_token")
        let good = try await send(.get, "/mcp", [.authorization: "Bearer " + (try token(audience: identifier.absoluteString, scope: "tools:call"))])
        check(good.status == 200, "a token for this resource is accepted (got \(good.status): \(good.body))")
        check(good.body.contains("user-1"), "the route sees the token's subject")
        let narrow = try await send(.get, "/mcp", [.authorization: "Bearer " + (try token(audience: identifier.absoluteString, scope: "tools:read"))])
        let step = narrow.headerFields[.wwwAuthenticate] ?? ""
        check(narrow.status == 403, "a token without the route's scope is 403 (got \(narrow.status))")
        check(step.contains(#"error="insufficient_scope""#) && step.contains(#"scope="tools:call""#), "insufficient_scope naming the scope: \(step)")
        check(step.contains(#"resource_metadata="\#(metadataURL)""#), "with the metadata")
        return failures
    }
}
