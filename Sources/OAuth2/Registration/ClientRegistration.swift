import Foundation
import HTTPTypes

/// A client registered with the authorization server (RFC 7591 §3.2.1): the credentials it
/// issued, the registration access token and client configuration endpoint for managing
/// the registration (RFC 7592), and the metadata as the server recorded it.
///
/// Its ``description`` never shows the client secret or the registration access token.
public struct ClientRegistration: Sendable, Hashable, CustomStringConvertible {
    /// `client_id`
    public var clientID: String
    /// `client_secret`; `nil` for a public client.
    public var clientSecret: String?
    /// `client_id_issued_at`
    public var clientIDIssuedAt: Date?
    /// `client_secret_expires_at`; `nil` when the secret does not expire (the server sent
    /// `0`) or no secret was issued.
    public var clientSecretExpiresAt: Date?
    /// `registration_access_token`: the Bearer token of the client configuration endpoint.
    public var registrationAccessToken: String?
    /// `registration_client_uri`: the client configuration endpoint (RFC 7592). Always on
    /// the origin of the registration endpoint: a response naming another origin is refused.
    public var registrationClientURI: URL?
    /// The metadata the server echoed (it may differ from what was sent: defaults filled in,
    /// values replaced).
    public var metadata: RegistrationMetadata

    /// Creates a registration (to restore one kept elsewhere, or in tests).
    public init(
        clientID: String,
        clientSecret: String? = nil,
        clientIDIssuedAt: Date? = nil,
        clientSecretExpiresAt: Date? = nil,
        registrationAccessToken: String? = nil,
        registrationClientURI: URL? = nil,
        metadata: RegistrationMetadata = RegistrationMetadata()
    ) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.clientIDIssuedAt = clientIDIssuedAt
        self.clientSecretExpiresAt = clientSecretExpiresAt
        self.registrationAccessToken = registrationAccessToken
        self.registrationClientURI = registrationClientURI
        self.metadata = metadata
    }

    /// `true` when the registration can be read, updated and deleted (RFC 7592): it has a
    /// registration access token and a client configuration endpoint.
    public var isManageable: Bool { registrationAccessToken != nil && registrationClientURI != nil }

    /// A client configuration for this registration: its client id and secret, its
    /// authentication method (when it registered one), its first redirect URI and its
    /// scopes, on top of `base` (whose other settings — quirks, DPoP, ID-token validation —
    /// are kept).
    public func configuration(base: ClientConfiguration? = nil) -> ClientConfiguration {
        var configuration = base ?? ClientConfiguration(clientID: clientID)
        configuration.clientID = clientID
        configuration.clientSecret = clientSecret
        if let method = metadata.tokenEndpointAuthMethod { configuration.authenticationMethod = method }
        if let given = base?.redirectURI, metadata.redirectURIs.contains(given) {
            configuration.redirectURI = given
        } else if let first = metadata.redirectURIs.first {
            configuration.redirectURI = first
        }
        if configuration.scopes.isEmpty { configuration.scopes = metadata.scopes }
        return configuration
    }

    /// `ClientRegistration(clientID: …, secret: <redacted>, …)`.
    public var description: String {
        var parts = ["clientID: \(clientID)"]
        if clientSecret != nil { parts.append("clientSecret: \(Redactor.placeholder)") }
        if let clientSecretExpiresAt { parts.append("clientSecretExpiresAt: \(clientSecretExpiresAt)") }
        if registrationAccessToken != nil { parts.append("registrationAccessToken: \(Redactor.placeholder)") }
        if let registrationClientURI { parts.append("registrationClientURI: \(Redactor.url(registrationClientURI))") }
        if let name = metadata.clientName { parts.append("clientName: \(name)") }
        if !metadata.redirectURIs.isEmpty { parts.append("redirectURIs: \(metadata.redirectURIs.map(\.absoluteString).joined(separator: " "))") }
        if !metadata.grantTypes.isEmpty { parts.append("grantTypes: \(metadata.grantTypes.joined(separator: " "))") }
        if let method = metadata.tokenEndpointAuthMethod { parts.append("tokenEndpointAuthMethod: \(method)") }
        return "ClientRegistration(\(parts.joined(separator: ", ")))"
    }

    /// Parses a registration response (RFC 7591 §3.2) or a client information response
    /// (RFC 7592 §3).
    ///
    /// - Parameters:
    ///   - response: the HTTP response.
    ///   - body: the response body.
    ///   - endpoint: the URL the request went to; a `registration_client_uri` must share its
    ///     origin (scheme, host, port) and be HTTPS (or on a loopback host).
    ///   - management: `true` for RFC 7592 requests, where an HTTP 401 without an error
    ///     object means the registration access token was refused (`invalid_token`).
    ///   - now: the time a `Retry-After` date of an error counts from.
    /// - Throws: the server's error, typed (``OAuth2Error/Code/invalidRedirectURI``,
    ///   ``OAuth2Error/Code/invalidClientMetadata``, ``OAuth2Error/Code/invalidSoftwareStatement``,
    ///   ``OAuth2Error/Code/unapprovedSoftwareStatement``, `invalid_token`…);
    ///   ``OAuth2Error/Code/invalidResponse`` for a body that is not a JSON object, a missing
    ///   or empty `client_id`, a member of the wrong type, or a `registration_client_uri` on
    ///   another origin.
    public static func parse(
        response: HTTPResponse, body: Data, endpoint: URL, management: Bool = false, now: Date = Date()
    ) throws(OAuth2Error) -> ClientRegistration {
        let members = JSONValue.parseObject(body)
        if let error = registrationError(in: response, members: members, management: management, now: now) {
            throw error
        }
        guard let members else {
            throw .invalidResponse("The registration response is not a JSON object.", statusCode: response.status.code)
        }
        let reader = RegistrationMetadata.Reader(members: members)
        guard let clientID = try reader.string("client_id"), !clientID.isEmpty else {
            throw .invalidResponse("The registration response has no client_id.", statusCode: response.status.code)
        }
        var registration = ClientRegistration(clientID: clientID, metadata: try RegistrationMetadata.parse(members))
        registration.clientSecret = try reader.string("client_secret").flatMap { $0.isEmpty ? nil : $0 }
        registration.clientIDIssuedAt = try reader.date("client_id_issued_at")
        registration.clientSecretExpiresAt = try reader.date("client_secret_expires_at").flatMap { $0.timeIntervalSince1970 == 0 ? nil : $0 }
        registration.registrationAccessToken = try reader.string("registration_access_token").flatMap { $0.isEmpty ? nil : $0 }
        if let uri = try reader.url("registration_client_uri") {
            try checkClientURI(uri, endpoint: endpoint)
            registration.registrationClientURI = uri
        }
        return registration
    }

    /// RFC 7592 §1: the client configuration endpoint receives the registration access
    /// token. The library sends it only to the origin of the registration endpoint the
    /// caller chose — a response cannot redirect it to another host — and only over HTTPS
    /// (plain HTTP on loopback hosts).
    static func checkClientURI(_ uri: URL, endpoint: URL) throws(OAuth2Error) {
        do {
            try EndpointPolicy.validate(uri, name: "registration client URI")
        } catch {
            throw .invalidResponse("The registration_client_uri is not usable: \(error.message ?? "")")
        }
        func origin(_ url: URL) -> String {
            let scheme = url.scheme?.lowercased() ?? ""
            let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
            return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
        }
        guard origin(uri) == origin(endpoint) else {
            throw .invalidResponse(
                "The registration_client_uri \(Redactor.url(uri)) is not on the registration endpoint's origin; the registration access token is not sent there.")
        }
    }

    /// The error a registration response carries: the RFC 7591 §3.2.2 object, or one
    /// inferred from the status (an empty 401 is `invalid_token`: RFC 7591 §3 and RFC 7592
    /// §2 protect these endpoints with Bearer tokens, RFC 6750).
    static func registrationError(
        in response: HTTPResponse, members: [String: JSONValue]?, management: Bool, now: Date
    ) -> OAuth2Error? {
        guard var error = ResponseParsing.error(in: response, members: members, kind: .registration, now: now) else { return nil }
        if error.inferredFromStatus, response.status.code == 401 || (management && response.status.code == 403) {
            error.code = .invalidToken
            error.message = management
                ? "HTTP \(response.status.code) without an error object: the server refused the registration access token."
                : "HTTP 401 without an error object: the server refused the registration (an initial access token is missing or refused)."
        }
        return error
    }
}
