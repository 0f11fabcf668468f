#if Vapor
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web
import SwiftASN1
import Vapor
import X509

extension Request {
    private struct WebUserKey: StorageKey {
        typealias Value = WebUser
    }

    private struct AccessTokenKey: StorageKey {
        typealias Value = VerifiedAccessToken
    }

    /// The signed-in user: set by ``VaporWebSignInMiddleware`` (when the request's cookie names a
    /// live session) and ``VaporRequireSignIn``.
    public var webUser: WebUser? {
        get { storage[WebUserKey.self] }
        set { storage[WebUserKey.self] = newValue }
    }

    /// The signed-in user, or 401 if there is none (a route not guarded by ``VaporRequireSignIn``).
    public func requireWebUser() throws -> WebUser {
        guard let webUser else { throw Abort(.unauthorized) }
        return webUser
    }

    /// The access token ``VaporResourceServerMiddleware`` verified.
    public var accessToken: VerifiedAccessToken? {
        get { storage[AccessTokenKey.self] }
        set { storage[AccessTokenKey.self] = newValue }
    }

    /// The DER certificate the client presented on the request's TLS connection, when the app
    /// serves TLS itself and asks for client certificates: the leaf of Vapor's
    /// `peerCertificateChain`, which Vapor fills only when its server's configuration has a
    /// `customCertificateVerifyCallbackWithMetadata`. `nil` otherwise.
    /// ``VaporResourceServerMiddleware`` checks certificate-bound tokens (RFC 8705 §3) against it.
    public var clientCertificate: [UInt8]? {
        guard let leaf = peerCertificateChain?.first else { return nil }
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(leaf)) != nil else { return nil }
        return serializer.serializedBytes
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
#endif
