import Foundation
import HTTPTypes

/// Fetching an issuer's metadata: OpenID Connect Discovery first, then RFC 8414.
///
/// 1. `GET {issuer}/.well-known/openid-configuration`.
/// 2. When that document is missing, or lacks one of ``Discovery/wantedEndpoints``
///    (django-oauth-toolkit's omits introspection, revocation and registration), also
///    `GET {origin}/.well-known/oauth-authorization-server{issuer path}` (RFC 8414 §3.1).
///    Members of the OpenID document win; missing ones are filled from the RFC 8414 one.
/// 3. In every document, `issuer` must equal the requested issuer exactly (character for
///    character), or discovery fails with ``OAuth2Error/Code/issuerMismatch``.
/// 4. An OpenID document must name a `jwks_uri`; like every endpoint it must be HTTPS
///    (or on a loopback host).
package enum Discovery {
    /// Endpoints worth a second request when the OpenID document lacks them.
    public static let wantedEndpoints = [
        "token_endpoint", "revocation_endpoint", "introspection_endpoint", "registration_endpoint",
    ]

    /// The OpenID Connect discovery URL of an issuer.
    public static func openIDConfigurationURL(for issuer: URL) -> URL {
        let text = issuer.absoluteString
        let base = text.hasSuffix("/") ? String(text.dropLast()) : text
        return URL(string: base + "/.well-known/openid-configuration") ?? issuer
    }

    /// The RFC 8414 metadata URL of an issuer: the well-known segment goes between the
    /// origin and the issuer's path.
    public static func authorizationServerMetadataURL(for issuer: URL) -> URL {
        wellKnownURL("oauth-authorization-server", insertedInto: issuer)
    }

    /// `{origin}/.well-known/{name}{issuer path}` (RFC 8414 §3.1's path insertion), with the
    /// path's trailing slash and any query dropped.
    private static func wellKnownURL(_ name: String, insertedInto issuer: URL) -> URL {
        guard var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false) else { return issuer }
        var path = components.percentEncodedPath
        if path.hasSuffix("/") { path.removeLast() }
        components.percentEncodedPath = "/.well-known/\(name)" + path
        components.percentEncodedQuery = nil
        return components.url ?? issuer
    }

    /// The checks every discovery makes of the issuer before fetching: an HTTPS (or loopback)
    /// URL with no query (RFC 8414 §2). Returns the string each document's `issuer` must equal.
    private static func expectedIssuer(_ issuer: URL) throws -> String {
        try EndpointPolicy.validate(issuer, name: "issuer")
        guard issuer.query == nil else {
            throw OAuth2Error.client(.invalidConfiguration, "An issuer has no query component (RFC 8414 §2).")
        }
        return issuer.absoluteString
    }

    static func fetch(issuer: URL, pipeline: HTTPPipeline, now: @Sendable () -> Date) async throws -> ServerMetadata {
        let expected = try expectedIssuer(issuer)
        let openID: ServerMetadata?
        do {
            openID = try await document(openIDConfigurationURL(for: issuer), expected: expected, pipeline: pipeline, now: now)
        } catch let error as OAuth2Error where error.code == .httpError || error.code == .invalidResponse {
            // Not an OpenID provider (404, or no JSON there): RFC 8414 may still answer.
            openID = nil
        }
        if let openID { try requireSigningKeys(openID) }
        if let openID, wantedEndpoints.allSatisfy({ openID.fields[$0] != nil }) {
            return openID
        }
        do {
            let oauth = try await document(
                authorizationServerMetadataURL(for: issuer), expected: expected, pipeline: pipeline, now: now)
            return openID?.filling(from: oauth) ?? oauth
        } catch let error as OAuth2Error where error.code == .httpError || error.code == .invalidResponse {
            // No RFC 8414 document: the OpenID one (if any) is all there is.
            guard let openID else { throw error }
            return openID
        }
    }

    /// The OpenID Connect discovery URL of an issuer with the well-known segment inserted
    /// between the origin and the issuer's path (the MCP authorization specification's
    /// second place for an issuer with a path).
    static func openIDConfigurationURLPathInserted(for issuer: URL) -> URL {
        wellKnownURL("openid-configuration", insertedInto: issuer)
    }

    /// The places of an issuer's metadata in the order of the MCP authorization
    /// specification: RFC 8414 with path insertion; then OpenID Connect Discovery, path
    /// inserted (for an issuer with a path) and appended. Each is flagged `true` when it is
    /// an OpenID document.
    static func authorizationServerFirstURLs(for issuer: URL) -> [(url: URL, openID: Bool)] {
        var urls: [(URL, Bool)] = [(authorizationServerMetadataURL(for: issuer), false)]
        let path = URLComponents(url: issuer, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        if !path.isEmpty, path != "/" { urls.append((openIDConfigurationURLPathInserted(for: issuer), true)) }
        urls.append((openIDConfigurationURL(for: issuer), true))
        return urls
    }

    /// An issuer's metadata found the way an MCP client looks for it
    /// (``authorizationServerFirstURLs(for:)``): the first document found wins. A missing
    /// document (an HTTP error, or no JSON object) moves on to the next place; a document
    /// that names another issuer ends discovery with ``OAuth2Error/Code/issuerMismatch``;
    /// an OpenID document without `jwks_uri` with ``OAuth2Error/Code/invalidResponse``.
    static func fetchAuthorizationServerFirst(issuer: URL, pipeline: HTTPPipeline, now: @Sendable () -> Date) async throws -> ServerMetadata {
        let expected = try expectedIssuer(issuer)
        var lastError: OAuth2Error?
        for (url, openID) in authorizationServerFirstURLs(for: issuer) {
            let metadata: ServerMetadata
            do {
                metadata = try await document(url, expected: expected, pipeline: pipeline, now: now)
            } catch let error as OAuth2Error where error.code == .httpError || error.code == .invalidResponse {
                lastError = error
                continue
            }
            if openID { try requireSigningKeys(metadata) }
            return metadata
        }
        throw lastError ?? OAuth2Error.client(.httpError, "No metadata for the issuer \(Redactor.url(issuer)).")
    }

    /// OIDC Discovery §3: an OpenID provider publishes its signing keys; without them no ID
    /// token could be verified.
    private static func requireSigningKeys(_ openID: ServerMetadata) throws {
        guard openID.jwksURI != nil else {
            throw OAuth2Error.client(.invalidResponse, "The OpenID provider's metadata has no jwks_uri.")
        }
    }

    private static func document(
        _ url: URL,
        expected: String,
        pipeline: HTTPPipeline,
        now: @Sendable () -> Date
    ) async throws -> ServerMetadata {
        let request = try HTTPRequest.make(method: .get, url: url)
        let (response, body) = try await pipeline.send(request, body: nil, kind: .discovery)
        guard response.status.kind == .successful else {
            if let error = ResponseParsing.error(in: response, members: nil, kind: .discovery, now: now()), error.isTransient {
                throw error
            }
            throw OAuth2Error(
                .httpError, source: .server, message: "No metadata at \(url.absoluteString).",
                statusCode: response.status.code)
        }
        guard let fields = JSONValue.parseObject(body) else {
            throw OAuth2Error.invalidResponse("The metadata at \(url.absoluteString) is not a JSON object.")
        }
        let metadata = try ServerMetadata(fields: fields)
        guard metadata.issuer == expected else {
            throw OAuth2Error.client(
                .issuerMismatch,
                "The metadata at \(url.absoluteString) names the issuer \(metadata.issuer.map { "\"\(Redactor.sanitizeServerText($0, limit: 200))\"" } ?? "(none)"), not \"\(expected)\"."
            )
        }
        return metadata
    }
}

/// Discovered metadata, cached per issuer, with concurrent lookups of one issuer sharing
/// one fetch.
public actor MetadataCache {
    /// The cache an ``HTTPEnvironment`` uses by default.
    public static let shared = MetadataCache()

    private struct Entry {
        var metadata: ServerMetadata
        var fetchedAt: ContinuousClock.Instant
    }

    private let timeToLive: Duration
    private var entries: [String: Entry] = [:]
    private var inFlight: [String: Task<ServerMetadata, any Error>] = [:]

    /// Creates a cache whose entries live `timeToLive` (default one hour).
    public init(timeToLive: Duration = .seconds(3600)) {
        self.timeToLive = timeToLive
    }

    /// Forgets an issuer's metadata (after a key rotation or a configuration change).
    public func invalidate(issuer: URL) {
        entries[issuer.absoluteString] = nil
    }

    /// Forgets everything.
    public func removeAll() {
        entries.removeAll()
    }

    func metadata(
        for issuer: URL,
        load: @escaping @Sendable () async throws -> ServerMetadata
    ) async throws -> ServerMetadata {
        let key = issuer.absoluteString
        if let entry = entries[key], entry.fetchedAt.duration(to: .now) < timeToLive {
            return entry.metadata
        }
        if let task = inFlight[key] {
            return try await task.value
        }
        let task = Task { try await load() }
        inFlight[key] = task
        defer { inFlight[key] = nil }
        let metadata = try await task.value
        entries[key] = Entry(metadata: metadata, fetchedAt: .now)
        return metadata
    }
}
