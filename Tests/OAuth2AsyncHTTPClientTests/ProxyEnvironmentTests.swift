import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

@Suite struct ProxyEnvironmentTests {
    let api = URL(string: "https://id.example.com/token")!
    let plain = URL(string: "http://id.example.com/token")!

    @Test func eachSchemeHasItsVariable() {
        let proxies = ProxyEnvironment(environment: ["https_proxy": "http://proxy.corp:3128", "http_proxy": "proxy.corp:8080"])
        #expect(proxies.proxy(for: api) == .init(host: "proxy.corp", port: 3128))
        #expect(proxies.proxy(for: plain) == .init(host: "proxy.corp", port: 8080))
        #expect(proxies.proxy(for: URL(string: "file:///etc/hosts")!) == nil)
    }

    @Test func upperCaseHTTPProxyIsIgnoredLikeCurlDoes() {
        // A CGI program gets a request's `Proxy:` header as HTTP_PROXY ("httpoxy").
        let proxies = ProxyEnvironment(environment: ["HTTP_PROXY": "http://attacker:80", "HTTPS_PROXY": "http://proxy.corp:3128"])
        #expect(proxies.proxy(for: plain) == nil)
        #expect(proxies.proxy(for: api) == .init(host: "proxy.corp", port: 3128))
    }

    @Test func allProxyFillsInAndLowerCaseWins() {
        let proxies = ProxyEnvironment(environment: ["ALL_PROXY": "http://all:1", "https_proxy": "http://lower:2", "HTTPS_PROXY": "http://upper:3"])
        #expect(proxies.proxy(for: api)?.host == "lower")
        #expect(proxies.proxy(for: plain)?.host == "all")
    }

    @Test func credentialsArePercentDecodedAndNeverDescribed() {
        let proxies = ProxyEnvironment(environment: ["https_proxy": "http://al%40ice:p%3Ass@proxy.corp"])
        let proxy = proxies.proxy(for: api)
        #expect(proxy?.username == "al@ice")
        #expect(proxy?.password == "p:ss")
        #expect(proxy?.port == 1080, "curl's default proxy port")
        #expect(proxy?.description == "proxy.corp:1080")
    }

    @Test func unsupportedProxiesAreIgnored() {
        for value in ["socks5://proxy:1080", "https://proxy:443", "http://", "   "] {
            #expect(ProxyEnvironment(environment: ["https_proxy": value]).proxy(for: api) == nil, "\(value)")
        }
    }

    @Test func noProxyMatchesHostsDomainsAddressesAndStar() {
        let proxies = ProxyEnvironment(environment: [
            "https_proxy": "http://proxy:3128", "http_proxy": "http://proxy:3128",
            "no_proxy": "localhost, .internal.example,*.corp.example , 10.0.0.7,[::1]:8443,example.org:443",
        ])
        #expect(proxies.proxy(for: URL(string: "http://localhost:8080/x")!) == nil)
        #expect(proxies.proxy(for: URL(string: "https://a.internal.example/x")!) == nil)
        #expect(proxies.proxy(for: URL(string: "https://internal.example/x")!) == nil)
        #expect(proxies.proxy(for: URL(string: "https://sso.corp.example/x")!) == nil)
        #expect(proxies.proxy(for: URL(string: "http://10.0.0.7/x")!) == nil)
        #expect(proxies.proxy(for: URL(string: "http://[::1]:9000/x")!) == nil)
        #expect(proxies.proxy(for: URL(string: "https://EXAMPLE.org/x")!) == nil, "ports in entries are ignored; hosts compare without case")
        #expect(proxies.proxy(for: URL(string: "https://notinternal.example/x")!) != nil, "a suffix matches at a dot only")
        #expect(proxies.proxy(for: URL(string: "http://10.0.0.70/x")!) != nil)
        #expect(ProxyEnvironment(environment: ["https_proxy": "http://p:1", "NO_PROXY": "*"]).proxy(for: api) == nil)
    }

    @Test func loopbackIsNeverProxiedWhateverTheEnvironmentSays() {
        // Go's net/http has the same rule: traffic to this machine never goes through a proxy
        // (which would see it in clear text), listed in no_proxy or not.
        let proxies = ProxyEnvironment(environment: ["https_proxy": "http://proxy:3128", "http_proxy": "http://proxy:3128", "no_proxy": "example.org"])
        for url in [
            "http://127.0.0.1:4593/token", "https://127.0.0.1/token", "http://127.8.9.10/x", "http://localhost:8000/o/token/",
            "http://LOCALHOST/x", "http://[::1]:9000/x",
        ] {
            #expect(proxies.proxy(for: URL(string: url)!) == nil, "\(url)")
        }
        for url in ["http://128.0.0.1/x", "http://localhost.example.com/x", "http://[::2]/x", "http://127.0.0.1.example.com/x"] {
            #expect(proxies.proxy(for: URL(string: url)!) != nil, "\(url)")
        }
    }

    @Test func anEmptyEnvironmentNamesNoProxy() {
        #expect(ProxyEnvironment(environment: [:]) == ProxyEnvironment())
        #expect(ProxyEnvironment().proxy(for: api) == nil)
    }
}

/// The transport's use of the proxies, over real sockets: a local server plays the proxy.
@Suite struct AsyncHTTPClientProxyTests {
    // A transport is always shut down, also when its request failed: AsyncHTTPClient stops
    // the process when a client it created is released without a shutdown.
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var heads: [HTTPRequest] = []
        func append(_ head: HTTPRequest) { lock.withLock { heads.append(head) } }
        var all: [HTTPRequest] { lock.withLock { heads } }
    }

    @Test func aRequestAsksTheProxyForATunnelWithItsCredentials() async throws {
        // AsyncHTTPClient tunnels every request through an HTTP proxy (CONNECT, RFC 9110
        // §9.3.6). This proxy refuses the tunnel: the request must have reached it, for the
        // right target, with the proxy's credentials, and fail as a typed network error.
        let seen = Seen()
        try await LocalHTTPServer.with(handler: { request in
            seen.append(request.head)
            return .json(403, "{}")
        }) { proxy in
            // AsyncHTTPClient retries a refused tunnel until the connect timeout.
            let transport = AsyncHTTPClientTransport(
                options: TransportOptions(connectTimeout: .seconds(1)),
                environment: ["http_proxy": "http://al%40ice:s3cret@127.0.0.1:\(proxy.port)"])
            #expect(transport.proxies.http == .init(host: "127.0.0.1", port: proxy.port, username: "al@ice", password: "s3cret"))
            let request = HTTPRequest(method: .get, scheme: "http", authority: "api.example.invalid", path: "/me?x=1")
            let result = await Result(catching: { try await transport.send(request, body: nil) })
            try await transport.shutdown()
            #expect(throws: OAuth2Error.self) { try result.get() }
            let head = try #require(seen.all.first)
            #expect(head.method == .connect)
            #expect(head.path == "api.example.invalid:80")
            let credentials = Data("al@ice:s3cret".utf8).base64EncodedString()
            #expect(head.headerFields[HTTPField.Name("Proxy-Authorization")!] == "Basic \(credentials)")
            if case .failure(let error as OAuth2Error) = result {
                #expect(!String(describing: error).contains("s3cret"), "no proxy password in the error")
            }
        }
    }

    /// Sends `GET /x` to each of `hosts` (with the port of a direct server) through a
    /// transport whose environment names a proxy server, plus `environment`; returns the
    /// statuses and the requests the proxy and the direct server saw.
    static func send(to hosts: [String], environment: [String: String]) async throws -> (codes: [Int], proxied: [HTTPRequest], direct: [HTTPRequest]) {
        let proxySeen = Seen(), directSeen = Seen()
        return try await LocalHTTPServer.with(handler: { request in
            proxySeen.append(request.head)
            return .json(502, "{}")
        }) { proxy in
            try await LocalHTTPServer.with(handler: { request in
                directSeen.append(request.head)
                return .json(200, "{}")
            }) { direct in
                let transport = AsyncHTTPClientTransport(environment: environment.merging(["http_proxy": "http://127.0.0.1:\(proxy.port)"]) { a, _ in a })
                var codes: [Int] = []
                for host in hosts {
                    let request = HTTPRequest(method: .get, scheme: "http", authority: "\(host):\(direct.port)", path: "/x")
                    let result = await Result(catching: { try await transport.send(request, body: nil) })
                    // localhost may resolve to ::1 first, where nothing listens: either way, never the proxy.
                    if let (response, _) = try? result.get() { codes.append(response.status.code) }
                }
                try await transport.shutdown()
                return (codes, proxySeen.all, directSeen.all)
            }
        }
    }

    @Test func noProxyHostsAreReachedDirectly() async throws {
        let (codes, proxied, direct) = try await Self.send(to: ["127.0.0.1"], environment: ["no_proxy": "localhost,127.0.0.1"])
        #expect(codes == [200])
        #expect(direct.map(\.path) == ["/x"])
        #expect(proxied.isEmpty)
    }

    @Test func loopbackTrafficGoesDirectlyWithoutNoProxy() async throws {
        let (codes, proxied, direct) = try await Self.send(to: ["127.0.0.1", "localhost"], environment: [:])
        #expect(codes.first == 200)
        #expect(proxied.isEmpty)
        #expect(!direct.isEmpty)
    }

    @Test func anEmptyProxySettingOverridesTheEnvironment() async throws {
        let transport = AsyncHTTPClientTransport(proxies: ProxyEnvironment(), environment: ["https_proxy": "http://proxy:3128"])
        #expect(transport.proxies == ProxyEnvironment())
        try await transport.shutdown()
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
