import Foundation
import OAuth2

/// The HTTP proxies named by the environment, read the way curl and Go read them, so that
/// a program on this transport goes through the same proxy as the other tools of the
/// machine.
///
/// - `https_proxy` (or `HTTPS_PROXY`) for `https` URLs; `http_proxy` for `http` URLs — lower
///   case only, as curl does, because a CGI program receives a request's `Proxy:` header as
///   `HTTP_PROXY` ("httpoxy"); `all_proxy` (or `ALL_PROXY`) for both when the other is unset.
/// - A proxy is `[http://][user:password@]host[:port]` (port 1080 when absent, as curl).
///   Only HTTP proxies are supported: `https://` and `socks…` proxies are ignored, and the
///   request then goes direct.
/// - `no_proxy` (or `NO_PROXY`): a comma- or space-separated list of host names (matching the
///   name and its subdomains; a leading `.` or `*.` is allowed), IP addresses, or `*` for
///   every host. An entry's `:port` is ignored.
/// - Loopback hosts (`localhost`, 127.0.0.0/8, `::1`) are always reached directly, listed in
///   `no_proxy` or not, as Go's net/http does: a proxy would see that traffic — a local
///   authorization server's codes and tokens — in clear text.
///
/// ```swift
/// let proxies = ProxyEnvironment(environment: ProcessInfo.processInfo.environment)
/// proxies.proxy(for: URL(string: "https://id.example.com/token")!)   // the https proxy, if any
/// ```
public struct ProxyEnvironment: Sendable, Hashable {
    /// An HTTP proxy: where to connect, and its Basic credentials when the variable has some.
    public struct Proxy: Sendable, Hashable, CustomStringConvertible {
        /// The proxy's host name or IP address.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// The user name of the proxy's Basic authentication (percent-decoded).
        public var username: String?
        /// The password of the proxy's Basic authentication (percent-decoded).
        public var password: String?

        /// Creates a proxy description.
        public init(host: String, port: Int, username: String? = nil, password: String? = nil) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
        }

        /// `host:port`; never the credentials.
        public var description: String { "\(host):\(port)" }
    }

    /// The proxy for `http` URLs.
    public var http: Proxy?
    /// The proxy for `https` URLs.
    public var https: Proxy?
    /// The hosts reached directly (`no_proxy`), lower-cased, without leading dots.
    public var noProxy: [String]

    /// Reads the proxy variables of `environment`.
    public init(environment: [String: String]) {
        func value(_ names: String...) -> String? {
            for name in names {
                if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return value }
            }
            return nil
        }
        let all = value("all_proxy", "ALL_PROXY").flatMap(Self.parse)
        http = value("http_proxy").flatMap(Self.parse) ?? all
        https = value("https_proxy", "HTTPS_PROXY").flatMap(Self.parse) ?? all
        noProxy = (value("no_proxy", "NO_PROXY") ?? "")
            .split(whereSeparator: { $0 == "," || $0 == " " })
            .map { entry -> String in
                var entry = entry.lowercased()
                if entry.hasPrefix("*.") { entry.removeFirst(2) }
                while entry.hasPrefix(".") { entry.removeFirst() }
                if entry.hasPrefix("["), let end = entry.firstIndex(of: "]") {
                    return String(entry[entry.index(after: entry.startIndex)..<end])  // [v6]:port
                }
                if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
                    entry = String(entry[..<colon])  // host:port
                }
                return entry
            }
            .filter { !$0.isEmpty }
    }

    /// Names no proxy.
    public init() {
        http = nil
        https = nil
        noProxy = []
    }

    /// The proxy a request to `url` goes through, or `nil` to connect directly.
    public func proxy(for url: URL) -> Proxy? {
        let proxy: Proxy?
        switch url.scheme?.lowercased() {
        case "https": proxy = https
        case "http": proxy = http
        default: return nil
        }
        guard let proxy, var host = url.host?.lowercased() else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if EndpointPolicy.isLoopback(host: host) { return nil }
        for entry in noProxy {
            if entry == "*" || host == entry || host.hasSuffix("." + entry) { return nil }
        }
        return proxy
    }

    /// `[http://][user:password@]host[:port]`; `nil` for another scheme or no host.
    static func parse(_ text: String) -> Proxy? {
        let withScheme = text.contains("://") ? text : "http://" + text
        guard let components = URLComponents(string: withScheme), components.scheme?.lowercased() == "http",
            let host = components.host, !host.isEmpty
        else { return nil }
        return Proxy(
            host: host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host,
            port: components.port ?? 1080,
            username: components.user.flatMap { $0.isEmpty ? nil : $0 },
            password: components.password)
    }
}
