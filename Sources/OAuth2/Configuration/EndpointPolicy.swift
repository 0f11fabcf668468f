import Foundation
import HTTPTypes

/// The rule every endpoint obeys: HTTPS, except on a loopback host (127.0.0.0/8, ::1,
/// `localhost`), where plain HTTP is allowed for development and native-app redirects.
package enum EndpointPolicy {
    /// Throws ``OAuth2Error/Code/insecureEndpoint`` unless `url` may be used as an endpoint.
    /// - Parameter name: the endpoint's name, for the error message.
    public static func validate(_ url: URL, name: String) throws(OAuth2Error) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw .client(.insecureEndpoint, "The \(name) is not an absolute URL.")
        }
        if url.fragment != nil {
            throw .client(.invalidConfiguration, "The \(name) must not have a fragment (RFC 6749 §3.1).")
        }
        switch scheme {
        case "https":
            return
        case "http" where isLoopback(host: host):
            return
        default:
            throw .client(
                .insecureEndpoint,
                "The \(name) \(Redactor.url(url)) must use HTTPS (plain HTTP is allowed only on loopback hosts)."
            )
        }
    }

    /// Throws ``OAuth2Error/Code/insecureEndpoint`` unless an access token may go to
    /// `request`'s target: HTTPS, or plain HTTP to a loopback host. It reads the request's
    /// scheme and authority only, building no URL: it runs before every authorized request.
    package static func checkTokenDestination(_ request: HTTPRequest) throws(OAuth2Error) {
        let scheme = request.scheme?.lowercased()
        if scheme == "https", request.authority?.isEmpty == false { return }
        if scheme == "http", let authority = request.authority, isLoopback(host: host(of: authority)) { return }
        throw .client(.insecureEndpoint, "An access token is sent over HTTPS only (plain HTTP only to a loopback host).")
    }

    /// The host of an authority (`user@host:port`, `[::1]:8080`), brackets kept.
    private static func host(of authority: String) -> String {
        var text = Substring(authority)
        if let at = text.lastIndex(of: "@") { text = text[text.index(after: at)...] }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") { return String(text[...close]) }
        if let colon = text.lastIndex(of: ":") { return String(text[..<colon]) }
        return String(text)
    }

    /// `true` for `localhost`, any 127.0.0.0/8 address and `::1`.
    public static func isLoopback(host rawHost: String) -> Bool {
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { return true }
        if host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            guard let value = UInt8(octet), octet.count <= 3 else { return false }
            return String(value) == octet || octet == "0"
        }
    }
}
