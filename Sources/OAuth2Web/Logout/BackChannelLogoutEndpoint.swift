import Foundation
import HTTPTypes
import Logging
import OAuth2Internals
import OAuth2JOSE

/// A client's back-channel logout endpoint (its registered `backchannel_logout_uri`),
/// independent of any web framework: it reads the provider's request, verifies its logout
/// token (``LogoutTokenVerifier``), hands the verified token to the application to end the
/// matching sessions, and answers as OpenID Connect Back-Channel Logout 1.0 §2.5 and §2.8
/// say.
///
/// ```swift
/// let endpoint = BackChannelLogoutEndpoint(verifier: LogoutTokenVerifier(
///     issuer: "https://id.example.com", clientID: "my-web-app",
///     keys: .cache(client.keySet), replayStore: sharedReplayStore))
/// // For each request to the endpoint:
/// let answer = await endpoint.handle(request, body: bodyBytes) { logout in
///     try await sessions.end(issuer: logout.issuer, subject: logout.subject, sessionID: logout.sessionID)
/// }
/// // Respond with answer.status, answer.headerFields and answer.body.
/// ```
///
/// - A POST with `Content-Type: application/x-www-form-urlencoded` and exactly one
///   `logout_token` parameter (other parameters are ignored) is verified; then the closure
///   runs; then 200 with an empty body.
/// - Any other method: 405 with `Allow: POST`. Another content type, a body that is not
///   form encoding or over ``maximumBodySize``, no or several `logout_token`s, a token that
///   fails a check, a token the keys or replay store cannot check now, a closure that throws:
///   400 with `{"error": …, "error_description": …}`.
/// - Every answer carries `Cache-Control: no-store`.
///
/// The token's `jti` is recorded before the closure runs: when the closure fails, the
/// provider must send a new logout token (providers do not retry with the same one).
public struct BackChannelLogoutEndpoint: Sendable {
    /// The response to send: status, header fields and body.
    public struct Response: Sendable, Hashable {
        /// 200, 400 or 405.
        public let status: HTTPResponse.Status
        /// `Cache-Control: no-store`; `Content-Type: application/json` with a body; `Allow:
        /// POST` with 405.
        public let headerFields: HTTPFields
        /// Empty on success; the JSON error object otherwise.
        public let body: [UInt8]
        /// The verified token, on success.
        public let logout: VerifiedLogoutToken?
        /// Why the request was refused, on failure.
        public let error: LogoutTokenError?

        /// The response head: ``status`` and ``headerFields``.
        public var response: HTTPResponse { HTTPResponse(status: status, headerFields: headerFields) }
    }

    /// The verifier of the logout tokens.
    public let verifier: LogoutTokenVerifier
    private let logger: Logger

    /// The largest request body read, in bytes.
    public static let maximumBodySize = 32 * 1024

    /// Creates an endpoint.
    ///
    /// - Parameters:
    ///   - verifier: verifies the logout tokens.
    ///   - logger: where failures of the application's closure are logged (the error's type
    ///     only, never the token).
    public init(verifier: LogoutTokenVerifier, logger: Logger = Logger(label: "swift-oauth2.back-channel-logout")) {
        self.verifier = verifier
        self.logger = logger
    }

    /// Answers a back-channel logout request.
    ///
    /// - Parameters:
    ///   - request: the request's head (method and `Content-Type` are read).
    ///   - body: the request's body bytes.
    ///   - endSessions: ends the sessions the verified token names (every session of
    ///     `subject`, or the one of `sessionID`, at `issuer`); runs only for a valid, new
    ///     token. When it throws, the answer is 400 `logout_failed`.
    /// - Returns: the response to send; never throws.
    public func handle(
        _ request: HTTPRequest, body: some Sequence<UInt8>, endSessions: (VerifiedLogoutToken) async throws -> Void
    ) async -> Response {
        let logout: VerifiedLogoutToken
        do {
            let token = try Self.logoutToken(method: request.method, contentType: request.headerFields[.contentType], body: body)
            logout = try await verifier.verify(token)
        } catch {
            return Self.refusal(error)
        }
        do {
            try await endSessions(logout)
        } catch {
            logger.debug("Back-channel logout failed", metadata: ["error": "\(type(of: error))", "sub": "\(logout.subject ?? "-")"])
            return Self.refusal(LogoutTokenError(.logoutFailed, reason: .logoutFailed, "The sessions could not be ended."), logout: logout)
        }
        return Response(status: .ok, headerFields: WebResponse.hardened([.cacheControl: "no-store"]), body: [], logout: logout, error: nil)
    }

    /// The `logout_token` of a back-channel logout request (§2.5).
    ///
    /// - Throws: ``LogoutTokenError`` with ``LogoutTokenError/Reason/methodNotAllowed``,
    ///   ``LogoutTokenError/Reason/malformedRequest`` or ``LogoutTokenError/Reason/missingToken``.
    package static func logoutToken(method: HTTPRequest.Method, contentType: String?, body: some Sequence<UInt8>) throws(LogoutTokenError) -> String {
        guard method == .post else { throw .invalid(.methodNotAllowed, "Back-channel logout requests are POST requests.") }
        let mediaType = contentType?.split(separator: ";", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/x-www-form-urlencoded" else {
            throw .invalid(.malformedRequest, "The body must be application/x-www-form-urlencoded.")
        }
        var bytes: [UInt8] = []
        for byte in body {
            guard bytes.count < maximumBodySize else { throw .invalid(.malformedRequest, "The body is too large.") }
            bytes.append(byte)
        }
        guard let text = String(validating: bytes, as: UTF8.self), let pairs = FormURLEncoding.decode(text) else {
            throw .invalid(.malformedRequest, "The body is not valid form encoding.")
        }
        let tokens = pairs.filter { $0.0 == "logout_token" }.map(\.1)
        guard tokens.count == 1, let token = tokens.first, !token.isEmpty else {
            throw .invalid(.missingToken, tokens.isEmpty ? "The request has no logout_token." : "The request has several logout_token parameters.")
        }
        return token
    }

    /// The response refusing a request.
    static func refusal(_ error: LogoutTokenError, logout: VerifiedLogoutToken? = nil) -> Response {
        var fields = WebResponse.hardened([.cacheControl: "no-store", .contentType: "application/json"])
        if error.status == .methodNotAllowed { fields[.allow] = "POST" }
        let body: JSONValue = .object(["error": .string(error.code.rawValue), "error_description": .string(error.message)])
        return Response(status: error.status, headerFields: fields, body: Array(body.description.utf8), logout: logout, error: error)
    }
}
