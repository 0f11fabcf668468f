import Foundation
import OAuth2TestSupport
import Testing
@testable import OAuth2

/// `URLSessionTransport` never sends loopback traffic through the environment's proxy: on
/// Linux, FoundationNetworking hands `http_proxy` & co. to libcurl, which proxies
/// `127.0.0.1` unless `no_proxy` lists it. A child process, so that the proxy variables
/// touch nothing else.
@Suite struct LoopbackProxyTests {
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: [String] = []
        func append(_ path: String) { lock.withLock { paths.append(path) } }
        var all: [String] { lock.withLock { paths } }
    }

    @Test func urlSessionReachesLoopbackDirectlyWithAProxyInTheEnvironment() async throws {
        let proxySeen = Seen(), directSeen = Seen()
        try await LocalHTTPServer.with(handler: { request in
            proxySeen.append(request.head.path ?? "")
            return .json(502, "{}")
        }) { proxy in
            try await LocalHTTPServer.with(handler: { request in
                directSeen.append(request.path)
                return .json(200, "{}")
            }) { direct in
                var environment = ProcessInfo.processInfo.environment
                for name in ["no_proxy", "NO_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] { environment[name] = nil }
                environment["http_proxy"] = "http://127.0.0.1:\(proxy.port)"
                for host in ["127.0.0.1", "localhost"] {
                    let (status, output) = try await Worker.run(["get", "http://\(host):\(direct.port)/direct"], environment: environment)
                    if host == "127.0.0.1" {
                        #expect(status == 0 && output.contains("status 200"), "\(output)")
                    }
                }
                #expect(proxySeen.all.isEmpty, "the proxy saw \(proxySeen.all)")
                #expect(directSeen.all.first == "/direct")
            }
        }
    }
}
