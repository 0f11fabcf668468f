import Foundation
import HTTPTypes
import OAuth2Internals

/// Client authentication at the token, PAR, revocation, introspection and device
/// authorization endpoints.
enum ClientAuthentication {
    /// Adds `method`'s credentials for a request to `endpoint`: an `Authorization` header,
    /// or body parameters. A JWT assertion is made fresh (new `jti`) for every call.
    static func apply(
        _ method: ClientAuthenticationMethod,
        configuration: ClientConfiguration,
        endpoint: URL,
        metadata: ServerMetadata,
        now: Date,
        to request: inout HTTPRequest,
        parameters: inout [(String, String)]
    ) throws(OAuth2Error) {
        switch method {
        case .clientSecretBasic:
            request.headerFields[.authorization] = try basicAuthorization(configuration)
        case .clientSecretPost:
            guard let secret = configuration.clientSecret, !secret.isEmpty else {
                throw .client(.invalidConfiguration, "client_secret_post needs a client secret.")
            }
            appendClientID(configuration, to: &parameters)
            parameters.append(("client_secret", secret))
        case .none, .tlsClientAuth, .selfSignedTLSClientAuth:
            // For mutual TLS (RFC 8705 §2) the certificate is the credential: the transport
            // presents it, and the body names the client.
            appendClientID(configuration, to: &parameters)
        case .clientSecretJWT, .privateKeyJWT:
            let assertion = try self.assertion(method, configuration: configuration, endpoint: endpoint, metadata: metadata, now: now)
            appendClientID(configuration, to: &parameters)
            parameters.append(("client_assertion_type", ClientAssertion.type))
            parameters.append(("client_assertion", assertion))
        default:
            throw .client(.invalidConfiguration, "The client authentication method \(method) is not supported.")
        }
    }

    /// `client_id`, unless the parameters have it already (a pushed authorization request).
    private static func appendClientID(_ configuration: ClientConfiguration, to parameters: inout [(String, String)]) {
        if !parameters.contains(where: { $0.0 == "client_id" }) { parameters.append(("client_id", configuration.clientID)) }
    }

    /// A signed `client_secret_jwt` or `private_key_jwt` assertion for a request to `endpoint`.
    static func assertion(
        _ method: ClientAuthenticationMethod,
        configuration: ClientConfiguration,
        endpoint: URL,
        metadata: ServerMetadata,
        now: Date
    ) throws(OAuth2Error) -> String {
        let key: JWSSigningKey
        if method == .privateKeyJWT {
            guard let privateKey = configuration.privateKey else {
                throw .client(.invalidConfiguration, "private_key_jwt needs a private key.")
            }
            key = privateKey
        } else {
            guard let secret = configuration.clientSecret, !secret.isEmpty else {
                throw .client(.invalidConfiguration, "client_secret_jwt needs a client secret.")
            }
            do {
                key = try JWSSigningKey(secret: secret, algorithm: configuration.clientAssertion.secretAlgorithm)
            } catch {
                throw OAuth2Error(.invalidConfiguration, source: .client, message: "client_secret_jwt: \(error.message)", underlyingError: error)
            }
        }
        let options = configuration.clientAssertion
        let assertion = ClientAssertion(
            clientID: configuration.clientID, audience: options.audience(for: endpoint, metadata: metadata), issuedAt: now,
            lifetime: options.lifetime)
        do {
            return try assertion.signed(with: key)
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The client assertion cannot be signed: \(error.message)", underlyingError: error)
        }
    }

    /// `Basic base64(urlencode(id) ":" urlencode(secret))`, RFC 6749 §2.3.1; without the
    /// encoding with ``ServerQuirks/basicAuthenticationWithoutFormEncoding``. An empty
    /// secret only with ``ServerQuirks/basicAuthenticationWithEmptySecret`` (Reddit).
    static func basicAuthorization(_ configuration: ClientConfiguration) throws(OAuth2Error) -> String {
        let secret = configuration.clientSecret ?? ""
        guard !secret.isEmpty || configuration.quirks.contains(.basicAuthenticationWithEmptySecret) else {
            throw .client(.invalidConfiguration, "client_secret_basic needs a client secret.")
        }
        let credentials: String
        if configuration.quirks.contains(.basicAuthenticationWithoutFormEncoding) {
            guard !configuration.clientID.contains(":") else {
                throw .client(.invalidConfiguration, "A client id with a colon cannot be sent in Basic credentials without form-encoding.")
            }
            credentials = configuration.clientID + ":" + secret
        } else {
            credentials = FormURLEncoding.encode(configuration.clientID) + ":" + FormURLEncoding.encode(secret)
        }
        return "Basic " + Data(credentials.utf8).base64EncodedString()
    }
}
