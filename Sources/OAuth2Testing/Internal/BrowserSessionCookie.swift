import Foundation
import NIOHTTP1

/// The provider's session in a browser: the authorization endpoint sets a cookie naming the
/// session (`sid`) a sign-in belongs to; a later sign-in from the same browser joins that
/// session, and the end-session endpoint, opened without an `id_token_hint`, ends the session
/// the cookie names — what a person does at a provider's own "sign out". Clients that do not
/// keep cookies (``TestProvider/followRedirect(from:timeout:)``, HTTP clients) start a new
/// session with each sign-in, as before.
extension ProviderCore {
    /// The cookie's name: apart from any other server on 127.0.0.1 (cookies ignore ports).
    static let sessionCookieName = "oauth2-test-provider-sid"

    /// The cookie's path: the issuer's, so that the endpoints below it receive it.
    var sessionCookiePath: String { issuerPath.isEmpty ? "/" : issuerPath }

    /// The session id the request's cookie names, if any (the first of that name).
    static func browserSessionID(_ request: HTTPServerRequest) -> String? {
        for field in request.headers["Cookie"] {
            for pair in field.split(separator: ";") {
                let trimmed = pair.trimmingCharacters(in: .whitespaces)
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == sessionCookieName else { continue }
                let value = String(trimmed[trimmed.index(after: equals)...])
                if !value.isEmpty { return value }
            }
        }
        return nil
    }

    /// The `Set-Cookie` field that keeps `sessionID` in the browser until it closes.
    func sessionCookie(_ sessionID: String) -> (String, String) {
        ("Set-Cookie", "\(Self.sessionCookieName)=\(sessionID); Path=\(sessionCookiePath); HttpOnly; SameSite=Lax")
    }

    /// The `Set-Cookie` field that removes the cookie.
    var expiredSessionCookie: (String, String) {
        ("Set-Cookie", "\(Self.sessionCookieName)=; Path=\(sessionCookiePath); Max-Age=0; HttpOnly; SameSite=Lax")
    }
}
