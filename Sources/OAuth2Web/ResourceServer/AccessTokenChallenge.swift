import Foundation
import HTTPTypes
import OAuth2

/// The response to a refused request: its status, and the `WWW-Authenticate` and
/// `DPoP-Nonce` header fields RFC 6750 §3 and RFC 9449 §7.1, §9 call for. A framework
/// adapter copies ``status`` and ``headerFields`` into its response, and adds nothing but
/// a body if it wants one.
public struct AccessTokenChallenge: Sendable, Hashable {
    /// Why the request was refused.
    public let error: AccessTokenError
    /// 400, 401, 403 or 503 (see ``AccessTokenError/status``).
    public let status: HTTPResponse.Status
    /// `WWW-Authenticate` (one value holding every challenge) and, when the client must use a
    /// new DPoP nonce, `DPoP-Nonce`.
    public let headerFields: HTTPFields

    /// The response head: ``status`` and ``headerFields``.
    public var response: HTTPResponse { HTTPResponse(status: status, headerFields: headerFields) }

    /// Renders `error` as challenges for the schemes an API offers.
    ///
    /// The same as ``init(error:schemes:realm:dpopAlgorithms:resourceMetadata:)`` without
    /// `resource_metadata`.
    public init(error: AccessTokenError, schemes: [AccessTokenScheme], realm: String? = nil, dpopAlgorithms: [JWSAlgorithm] = []) {
        self.init(error: error, schemes: schemes, realm: realm, dpopAlgorithms: dpopAlgorithms, resourceMetadata: nil)
    }

    /// Renders `error` as challenges for the schemes an API offers.
    ///
    /// The challenge of the scheme the request used (or the first offered one) comes first
    /// and carries `error` and `error_description`; every other offered scheme follows with
    /// its bare challenge. Every challenge carries the `realm`, the `scope` the resource
    /// requires (``AccessTokenError/requiredScopes``, RFC 6750 §3: for
    /// `insufficient_scope` the scopes to ask for, RFC 6750 §3.1; on a 401 the scopes a new
    /// token needs), and `resource_metadata`, the URL of the resource's metadata (RFC 9728
    /// §5.1). A DPoP challenge always lists the accepted proof algorithms in `algs`. A
    /// request without a token gets no `error` (RFC 6750 §3.1);
    /// ``AccessTokenError/Code/temporarilyUnavailable`` gets no challenge at all. Values are
    /// quoted strings with `"` and `\` escaped (RFC 9110 §5.6.4); a scope that is not an
    /// RFC 6749 scope token is left out.
    ///
    /// - Parameters:
    ///   - error: why the request was refused.
    ///   - schemes: the schemes the API accepts, the preferred first (not empty).
    ///   - realm: the `realm` parameter, if any.
    ///   - dpopAlgorithms: the proof algorithms for `algs`.
    ///   - resourceMetadata: the `resource_metadata` parameter, if any (see
    ///     ``ProtectedResource/metadataURL``).
    public init(
        error: AccessTokenError, schemes: [AccessTokenScheme], realm: String? = nil, dpopAlgorithms: [JWSAlgorithm] = [], resourceMetadata: URL?
    ) {
        self.error = error
        status = error.status
        var fields = HTTPFields()
        if error.code != .temporarilyUnavailable, !schemes.isEmpty {
            let first = error.scheme.flatMap { schemes.contains($0) ? $0 : nil } ?? schemes[0]
            let scope = error.requiredScopes.filter(ProtectedResource.isScopeToken).joined(separator: " ")
            var challenges: [String] = []
            for scheme in [first] + schemes.filter({ $0 != first }) {
                var parameters: [(String, String)] = []
                if let realm { parameters.append(("realm", realm)) }
                if scheme == first, error.code.isSentToClient {
                    parameters.append(("error", error.code.rawValue))
                    parameters.append(("error_description", Self.descriptionText(error.message)))
                }
                if !scope.isEmpty { parameters.append(("scope", scope)) }
                if let resourceMetadata { parameters.append(("resource_metadata", resourceMetadata.absoluteString)) }
                if scheme == .dpop, !dpopAlgorithms.isEmpty {
                    parameters.append(("algs", dpopAlgorithms.map(\.rawValue).joined(separator: " ")))
                }
                challenges.append(Self.render(scheme.rawValue, parameters))
            }
            fields[.wwwAuthenticate] = challenges.joined(separator: ", ")
        }
        if let nonce = error.dpopNonce { fields[.dpopNonce] = nonce }
        headerFields = fields
    }

    /// `scheme name="value", …` with quoted strings (RFC 9110 §11.4, §5.6.4).
    static func render(_ scheme: String, _ parameters: [(String, String)]) -> String {
        guard !parameters.isEmpty else { return scheme }
        let rendered = parameters.map { name, value in
            var quoted = "\""
            for character in value {
                if character == "\"" || character == "\\" { quoted.append("\\") }
                quoted.append(character)
            }
            return name + "=" + quoted + "\""
        }
        return scheme + " " + rendered.joined(separator: ", ")
    }

    /// `error_description` may hold only %x20-21 / %x23-5B / %x5D-7E (RFC 6750 §3): other
    /// characters are dropped, and the text is cut at 200.
    static func descriptionText(_ message: String) -> String {
        let allowed = message.unicodeScalars.filter { scalar in
            let value = scalar.value
            return value == 0x20 || value == 0x21 || (0x23...0x5B).contains(value) || (0x5D...0x7E).contains(value)
        }
        return String(String.UnicodeScalarView(allowed.prefix(200)))
    }
}
