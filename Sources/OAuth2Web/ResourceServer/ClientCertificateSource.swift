import Crypto
import Foundation
import HTTPTypes
import OAuth2JOSE
import SwiftASN1

/// Where a ``ResourceServer`` finds the client certificate of a request, to check a
/// certificate-bound access token (`cnf.x5t#S256`, RFC 8705 §3).
///
/// Nothing is trusted by default: a resource server without a source refuses
/// certificate-bound tokens. Name the source that matches how the API is deployed:
///
/// - ``connection``: the API terminates TLS itself and asks for client certificates; the
///   framework adapter passes the certificate of the connection to
///   ``ResourceServer/authorize(_:clientCertificate:requiredScopes:requiredAuthorizationDetails:)``.
/// - ``forwardedHeader(_:)``: a reverse proxy terminates TLS, verifies the client
///   certificate and passes it in a header field it sets on every request (it must replace
///   any value the client sent): nginx's `$ssl_client_escaped_cert`
///   (`proxy_set_header X-SSL-Client-Cert $ssl_client_escaped_cert;`), a URL-escaped PEM
///   certificate. Only when the API is reachable through the proxy alone.
public struct ClientCertificateSource: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Hashable {
        case connection
        case header(HTTPField.Name)
    }

    let kind: Kind

    /// The certificate of the TLS connection, as the adapter passes it.
    public static let connection = ClientCertificateSource(kind: .connection)

    /// A header field set by a TLS-terminating reverse proxy, holding the client's
    /// certificate as URL-escaped PEM (nginx's `$ssl_client_escaped_cert`). The proxy must
    /// set it on every request, replacing what a client sent.
    public static func forwardedHeader(_ name: HTTPField.Name) -> ClientCertificateSource {
        ClientCertificateSource(kind: .header(name))
    }

    /// `connection`, or `header(<name>)`.
    public var description: String {
        switch kind {
        case .connection: "connection"
        case .header(let name): "header(\(name.canonicalName))"
        }
    }

    /// The longest forwarded certificate read, in bytes (escaped).
    public static let maximumForwardedLength = 32 * 1024

    /// The DER certificate of `request`, from the header field or from `connection`;
    /// `nil` when the request presents none.
    ///
    /// - Throws: ``AccessTokenError/Code/invalidRequest`` for several header fields, one too
    ///   long, or one that does not hold a PEM certificate.
    func certificate(of request: HTTPRequest, connection: [UInt8]?) throws(AccessTokenError) -> [UInt8]? {
        switch kind {
        case .connection:
            return connection.flatMap { $0.isEmpty ? nil : $0 }
        case .header(let name):
            let values = request.headerFields[values: name]
            guard let value = values.first else { return nil }
            guard values.count == 1 else {
                throw AccessTokenError(.invalidRequest, reason: .malformed, "The request has several forwarded client certificates.")
            }
            // nginx sends an empty value (or none at all) when the client presented no certificate.
            if value.isEmpty || value == "-" || value == "(null)" { return nil }
            guard value.utf8.count <= Self.maximumForwardedLength else {
                throw AccessTokenError(.invalidRequest, reason: .malformed, "The forwarded client certificate is too long.")
            }
            return try Self.derCertificate(pem: value.removingPercentEncoding ?? value)
        }
    }

    /// The DER bytes of one PEM `CERTIFICATE` block.
    static func derCertificate(pem: String) throws(AccessTokenError) -> [UInt8] {
        do {
            let document = try PEMDocument(pemString: pem.trimmingCharacters(in: .whitespacesAndNewlines))
            guard document.discriminator == "CERTIFICATE" else {
                throw AccessTokenError(.invalidRequest, reason: .malformed, "The forwarded client certificate is not a certificate.")
            }
            return document.derBytes
        } catch let error as AccessTokenError {
            throw error
        } catch {
            throw AccessTokenError(.invalidRequest, reason: .malformed, "The forwarded client certificate is not PEM.")
        }
    }

    /// `x5t#S256` of a DER certificate: base64url(SHA-256(DER)), RFC 8705 §3.1.
    public static func thumbprint(ofDER certificate: some DataProtocol) -> String {
        Base64URL.encode(Array(SHA256.hash(data: certificate)))
    }
}
