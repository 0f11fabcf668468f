import Foundation
import HTTPTypes
import Logging

/// Dynamic client registration: registers a client with an authorization server (RFC 7591)
/// and reads, updates and deletes the registration (RFC 7592).
///
/// A registrar needs no client identity — it is what creates one — so it is a value of its
/// own beside ``OAuth2Client`` (which requires a client id), sharing its transport,
/// interceptors and logger. Like the client it is immutable and `Sendable`.
///
/// ```swift
/// let registrar = try await ClientRegistrar(server: .issuer(issuer))
/// var metadata = RegistrationMetadata(redirectURIs: [URL(string: "http://127.0.0.1:8400/callback")!])
/// metadata.clientName = "my tool"
/// let registration = try await registrar.register(metadata)
/// try await store.saveRegistration(registration, issuer: registrar.issuer)   // secret and token in the store
/// let client = try registrar.client(for: registration)                       // ready to sign in
/// ```
///
/// Requests are JSON (`Content-Type: application/json`); the initial access token and the
/// registration access token go in `Authorization: Bearer`, only over HTTPS (plain HTTP on
/// loopback hosts). Neither they nor the client secret reach a log line or an error message.
public struct ClientRegistrar: Sendable {
    /// The server's metadata; its ``ServerMetadata/registrationEndpoint`` is where
    /// ``register(_:initialAccessToken:)`` goes.
    public let metadata: ServerMetadata
    let pipeline: HTTPPipeline
    let now: @Sendable () -> Date

    #if URLSession
    /// Creates a registrar for `server` — an issuer to discover, metadata you have (a
    /// p2-style settings file's `registration_uri` becomes its
    /// ``ServerMetadata/registrationEndpoint``), or a provider's preset — talking HTTP
    /// through `environment`, as ``OAuth2Client/init(server:configuration:environment:)`` does.
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint`` when the registration endpoint is
    ///   neither HTTPS nor on a loopback host; for an issuer, what discovery throws.
    public init(server: AuthorizationServer, environment: HTTPEnvironment = HTTPEnvironment()) async throws {
        try await self.init(resolving: server, environment: environment)
    }

    package init(metadata: ServerMetadata, environment: HTTPEnvironment = HTTPEnvironment()) throws(OAuth2Error) {
        try self.init(metadata: metadata, pipeline: environment.pipeline(), now: { Date() })
    }
    #else
    /// Creates a registrar for `server` — an issuer to discover, metadata you have, or a
    /// provider's preset — talking HTTP through `environment` (without the `URLSession`
    /// trait there is no default transport: name one).
    ///
    /// - Throws: ``OAuth2Error/Code/insecureEndpoint``; for an issuer, what discovery throws.
    public init(server: AuthorizationServer, environment: HTTPEnvironment) async throws {
        try await self.init(resolving: server, environment: environment)
    }

    package init(metadata: ServerMetadata, environment: HTTPEnvironment) throws(OAuth2Error) {
        try self.init(metadata: metadata, pipeline: environment.pipeline(), now: { Date() })
    }
    #endif

    private init(resolving server: AuthorizationServer, environment: HTTPEnvironment) async throws {
        let pipeline = environment.pipeline()
        let now: @Sendable () -> Date = { Date() }
        try self.init(metadata: try await environment.metadata(of: server, pipeline: pipeline, now: now), pipeline: pipeline, now: now)
    }

    init(metadata: ServerMetadata, pipeline: HTTPPipeline, now: @escaping @Sendable () -> Date) throws(OAuth2Error) {
        if let endpoint = metadata.registrationEndpoint {
            try EndpointPolicy.validate(endpoint, name: "registration endpoint")
        }
        self.metadata = metadata
        self.pipeline = pipeline
        self.now = now
    }

    /// The issuer the registrations of this server are stored under (as ``TokenSession/key(for:account:)``
    /// names it): the metadata's `issuer`, else its registration endpoint.
    public var issuer: String {
        metadata.issuer ?? metadata.tokenEndpoint?.absoluteString ?? metadata.registrationEndpoint?.absoluteString ?? ""
    }

    // MARK: - RFC 7591

    /// Registers a client (RFC 7591 §3.1): POSTs `client` as JSON to the registration
    /// endpoint, with `initialAccessToken` as a Bearer token when the server requires one.
    ///
    /// - Throws: ``OAuth2Error/Code/missingEndpoint`` when the server has no registration
    ///   endpoint; what ``RegistrationMetadata/validate()`` throws; the server's error, typed
    ///   (``OAuth2Error/Code/invalidRedirectURI``, ``OAuth2Error/Code/invalidClientMetadata``,
    ///   ``OAuth2Error/Code/invalidSoftwareStatement``,
    ///   ``OAuth2Error/Code/unapprovedSoftwareStatement``; `invalid_token` for a missing or
    ///   refused initial access token); what ``ClientRegistration/parse(response:body:endpoint:management:now:)``
    ///   throws; transport errors.
    public func register(_ client: RegistrationMetadata, initialAccessToken: String? = nil) async throws -> ClientRegistration {
        guard let endpoint = metadata.registrationEndpoint else {
            throw OAuth2Error.client(.missingEndpoint, "The server has no registration endpoint.")
        }
        try client.validate()
        return try await send(.post, endpoint, token: initialAccessToken, json: client.members) { response, body in
            try ClientRegistration.parse(response: response, body: body, endpoint: endpoint, now: now())
        }
    }

    // MARK: - RFC 7592

    /// Reads the registration as the server has it now (RFC 7592 §2.1).
    ///
    /// A response without a registration access token, client configuration endpoint or
    /// client secret keeps the ones of `registration` (Glewlwyd repeats none of the first
    /// two); new ones replace them.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when `registration` is not
    ///   ``ClientRegistration/isManageable``; `invalid_token` when the server refuses the
    ///   registration access token (also for a deleted client); ``OAuth2Error/Code/invalidResponse``
    ///   when the answer names another `client_id`; as ``register(_:initialAccessToken:)``.
    public func read(_ registration: ClientRegistration) async throws -> ClientRegistration {
        let (uri, token) = try Self.management(registration)
        return try await send(.get, uri, token: token, json: nil) { response, body in
            try merge(response: response, body: body, into: registration, uri: uri)
        }
    }

    /// Replaces the registration's metadata with `metadata`, in full (RFC 7592 §2.2): a
    /// member left out is removed at the server or reset to its default. The request
    /// carries `client_id`, never the client secret.
    ///
    /// The server may rotate the client secret (Glewlwyd does) or the registration access
    /// token (django-oauth-toolkit does): save the returned registration, or lose access.
    ///
    /// - Throws: as ``read(_:)``; the server's `invalid_redirect_uri` or `invalid_client_metadata`.
    public func update(_ registration: ClientRegistration, to metadata: RegistrationMetadata) async throws -> ClientRegistration {
        try metadata.validate()
        let (uri, token) = try Self.management(registration)
        var members = metadata.members
        members["client_id"] = .string(registration.clientID)
        return try await send(.put, uri, token: token, json: members) { response, body in
            try merge(response: response, body: body, into: registration, uri: uri)
        }
    }

    /// Deletes the registration (RFC 7592 §2.3): the server forgets the client, and its
    /// credentials and tokens stop working. Any 2xx answer is success (the RFC says 204;
    /// Glewlwyd answers 200).
    ///
    /// - Throws: as ``read(_:)``.
    public func delete(_ registration: ClientRegistration) async throws {
        let (uri, token) = try Self.management(registration)
        try await send(.delete, uri, token: token, json: nil) { response, body in
            if let error = ClientRegistration.registrationError(
                in: response, members: JSONValue.parseObject(body), management: true, now: now())
            {
                throw error
            }
        }
    }

    // MARK: - Clients

    /// A client for `registration`: its credentials on top of `base` (see
    /// ``ClientRegistration/configuration(base:)``), with this registrar's metadata,
    /// transport, interceptors and logger.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for an unusable configuration.
    public func client(for registration: ClientRegistration, base: ClientConfiguration? = nil) throws -> OAuth2Client {
        let configuration = registration.configuration(base: base)
        var pipeline = pipeline
        pipeline.additionalHeaders = configuration.additionalHeaders
        return try OAuth2Client(metadata: metadata, configuration: configuration, pipeline: pipeline, now: now)
    }

    /// The client for `configuration`, registering one first when it has no client id —
    /// as p2/OAuth2 does: the registration-then-sign-in of a program that ships without a
    /// client id.
    ///
    /// With an empty ``ClientConfiguration/clientID``, registers `client` (its redirect
    /// URIs default to the configuration's redirect URI, its scopes to the configuration's),
    /// saves the registration in `store` when one is given
    /// (``RegistrationStore/saveRegistration(_:issuer:)``), and returns a client with the new
    /// credentials and the configuration's other settings. With a client id, returns the
    /// configuration's client and registers nothing.
    ///
    /// - Returns: the client, and the registration when one was made.
    /// - Throws: as ``register(_:initialAccessToken:)``; what the store throws.
    public func client(
        for configuration: ClientConfiguration,
        registering client: RegistrationMetadata = RegistrationMetadata(),
        initialAccessToken: String? = nil,
        store: (any RegistrationStore)? = nil
    ) async throws -> (client: OAuth2Client, registration: ClientRegistration?) {
        guard configuration.clientID.isEmpty else {
            var pipeline = pipeline
            pipeline.additionalHeaders = configuration.additionalHeaders
            return (try OAuth2Client(metadata: metadata, configuration: configuration, pipeline: pipeline, now: now), nil)
        }
        var wanted = client
        if wanted.redirectURIs.isEmpty, let redirect = configuration.redirectURI { wanted.redirectURIs = [redirect] }
        if wanted.scopes.isEmpty { wanted.scopes = configuration.scopes }
        if wanted.tokenEndpointAuthMethod == nil, let method = configuration.authenticationMethod { wanted.tokenEndpointAuthMethod = method }
        let registration = try await register(wanted, initialAccessToken: initialAccessToken)
        pipeline.logger.info("Registered client \(registration.clientID) at \(issuer)")
        if let store { try await store.saveRegistration(registration, issuer: issuer) }
        return (try self.client(for: registration, base: configuration), registration)
    }

    // MARK: - Sending

    static func management(_ registration: ClientRegistration) throws(OAuth2Error) -> (URL, String) {
        guard let uri = registration.registrationClientURI, let token = registration.registrationAccessToken else {
            throw .client(
                .invalidConfiguration,
                "The registration has no registration access token or client configuration endpoint (RFC 7592): the server does not offer its management.")
        }
        return (uri, token)
    }

    /// A read or update answer, with what it leaves out kept from `registration`.
    private func merge(response: HTTPResponse, body: Data, into registration: ClientRegistration, uri: URL) throws(OAuth2Error) -> ClientRegistration {
        var fresh = try ClientRegistration.parse(response: response, body: body, endpoint: uri, management: true, now: now())
        guard fresh.clientID == registration.clientID else {
            throw .invalidResponse("The client configuration endpoint answered for another client_id.", statusCode: response.status.code)
        }
        fresh.clientSecret = fresh.clientSecret ?? registration.clientSecret
        fresh.clientSecretExpiresAt = fresh.clientSecretExpiresAt ?? (fresh.clientSecret == registration.clientSecret ? registration.clientSecretExpiresAt : nil)
        fresh.clientIDIssuedAt = fresh.clientIDIssuedAt ?? registration.clientIDIssuedAt
        fresh.registrationAccessToken = fresh.registrationAccessToken ?? registration.registrationAccessToken
        fresh.registrationClientURI = fresh.registrationClientURI ?? registration.registrationClientURI
        return fresh
    }

    /// Sends a registration request and reads its answer with `read`; an ``OAuth2Error``
    /// `read` throws leaves with the request's bearer token withheld from the server's text.
    /// (The metadata in the body is the client's own description, not a secret: a server's
    /// message about it stays readable.)
    private func send<Answer>(
        _ method: HTTPRequest.Method, _ url: URL, token: String?, json: [String: JSONValue]?,
        read: (HTTPResponse, Data) throws -> Answer
    ) async throws -> Answer {
        try EndpointPolicy.validate(url, name: "registration endpoint")
        var request = try HTTPRequest.make(method: method, url: url)
        var body: Data?
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            do {
                body = try encoder.encode(json)
            } catch {
                throw OAuth2Error.client(.invalidClientMetadata, "The client metadata cannot be encoded as JSON (a number that is not finite).")
            }
            request.headerFields[.contentType] = "application/json"
        }
        if let token { request.headerFields[.authorization] = "Bearer " + token }
        let (response, responseBody) = try await pipeline.send(request, body: body, kind: .registration)
        do {
            return try read(response, responseBody)
        } catch let error as OAuth2Error {
            throw error.withholding(HeldSecrets(request: request, body: nil))
        }
    }
}
