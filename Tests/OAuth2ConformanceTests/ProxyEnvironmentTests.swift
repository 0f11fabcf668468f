import Foundation
import OAuth2AsyncHTTPClient
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

    @Test func anEmptyEnvironmentNamesNoProxy() {
        #expect(ProxyEnvironment(environment: [:]) == ProxyEnvironment())
        #expect(ProxyEnvironment().proxy(for: api) == nil)
    }
}
