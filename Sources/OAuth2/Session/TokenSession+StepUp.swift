import Foundation
import HTTPTypes

extension TokenSession {
    /// The scopes a `403` answer's `insufficient_scope` challenge (RFC 6750 §3.1) asks for:
    /// its `scope`, split at spaces; `nil` for any other answer, and for a challenge that
    /// names no scope (no sign-in could know what to ask for).
    static func insufficientScope(_ response: HTTPResponse) -> [String]? {
        guard response.status.code == 403 else { return nil }
        for value in response.headerFields[values: .wwwAuthenticate] {
            guard let challenge = WWWAuthenticate(value), ["bearer", "dpop"].contains(challenge.scheme.lowercased()),
                challenge.parameters["error"] == OAuth2Error.Code.insufficientScope.rawValue
            else { continue }
            let scopes = (challenge.parameters["scope"] ?? "").split(separator: " ").map(String.init)
            return scopes.isEmpty ? nil : scopes
        }
        return nil
    }

    /// Step-up (incremental consent, the MCP authorization specification's scope challenge):
    /// after a `403 insufficient_scope` naming scopes, ``Options/stepUp`` signs in for the
    /// union of the granted and the named scopes, and the request is sent once more.
    ///
    /// - Returns: the retried request's answer; `nil` when `response` asks for no step-up
    ///   or the session has no ``Options/stepUp``.
    /// - Throws: ``OAuth2Error/Code/insufficientScope`` when the resource server asks again
    ///   after the step-up (a server that keeps asking is not asked again); what the hook
    ///   and the store throw.
    func steppingUp(
        _ request: HTTPRequest, body: Data?, after response: HTTPResponse, granted: TokenSet
    ) async throws -> (HTTPResponse, Data)? {
        guard let stepUp = options.stepUp, let wanted = Self.insufficientScope(response) else { return nil }
        var scopes = granted.scopes ?? client.configuration.scopes
        for scope in wanted where !scopes.contains(scope) { scopes.append(scope) }
        let union = scopes
        let stepped = try await signIn { client in try await stepUp(client, union) }
        let (retried, retriedBody) = try await client.send(
            request, body: body, accessToken: stepped.accessToken, tokenType: stepped.tokenType, kind: .resource)
        if let again = Self.insufficientScope(retried) {
            let named = Redactor.sanitizeServerText(again.joined(separator: " "), limit: 200)
            throw OAuth2Error(
                .insufficientScope, source: .server,
                message: "The resource server still asks for more scope (\(named)) after a step-up sign-in; it is not asked again.",
                statusCode: retried.status.code
            ).withholding(HeldSecrets([granted.accessToken, stepped.accessToken]))
        }
        return (retried, retriedBody)
    }
}
