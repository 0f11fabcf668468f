#if Hummingbird
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OAuth2Hummingbird
import OAuth2WebTestSupport
import OAuth2Web
import Testing

/// DPoP-bound access tokens (RFC 9449) through HummingbirdResourceServerMiddleware, on a live
/// Hummingbird server: nonces, replays, proofs for another URL, method or key.
@Suite("Hummingbird: DPoP-bound tokens", .timeLimit(.minutes(2)))
struct DPoPMiddlewareTests {
    struct APIContext: AccessTokenRequestContext {
        var coreContext: CoreRequestContextStorage
        var accessToken: VerifiedAccessToken?
        init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
    }

    @Test("RFC 9449's resource-server rules hold through the middleware")
    func dpop() async throws {
        // The public URL, as behind a reverse proxy: proofs name it, not the socket's address.
        let publicBaseURL = URL(string: "https://api.example.com/v1")!
        let router = Router(context: APIContext.self)
        router.add(middleware: HummingbirdResourceServerMiddleware(try DPoPAPIConformance.resourceServer(publicBaseURL: publicBaseURL)))
        router.get("orders") { _, context in context.accessToken?.subject ?? "-" }
        let app = Application(router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let failures = try await DPoPAPIConformance.run(url: publicBaseURL.appendingPathComponent("orders")) { url, fields in
                // The route behind the proxy: the public path without its /v1 prefix.
                let path = String(url.path.dropFirst("/v1".count))
                let response = try await client.execute(uri: path, method: .get, headers: fields)
                return DPoPAPIConformance.Answer(
                    status: Int(response.status.code), headerFields: response.headers, body: String(buffer: response.body))
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }
}
#endif
