#if Hummingbird
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OAuth2Hummingbird
import OAuth2WebTestSupport
import OAuth2Web
import Testing

/// An MCP-style API as an RFC 9728 protected resource on a live Hummingbird server:
/// HummingbirdProtectedResourceMetadataMiddleware serves the metadata, and
/// HummingbirdResourceServerMiddleware's challenges point to it.
@Suite("Hummingbird: protected resource metadata", .timeLimit(.minutes(2)))
struct ProtectedResourceMetadataTests {
    struct APIContext: AccessTokenRequestContext {
        var coreContext: CoreRequestContextStorage
        var accessToken: VerifiedAccessToken?
        init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
    }

    @Test("RFC 9728's resource-server rules hold through the middlewares")
    func metadata() async throws {
        let server = try ProtectedResourceAPIConformance.resourceServer()
        let router = Router(context: APIContext.self)
        router.add(middleware: HummingbirdProtectedResourceMetadataMiddleware(server))
        router.group("mcp")
            .add(middleware: HummingbirdResourceServerMiddleware(server, requiredScopes: ProtectedResourceAPIConformance.requiredScopes))
            .get { _, context in context.accessToken?.subject ?? "-" }
        let app = Application(router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let failures = try await ProtectedResourceAPIConformance.run { method, path, fields in
                let response = try await client.execute(uri: path, method: method, headers: fields)
                return DPoPAPIConformance.Answer(status: Int(response.status.code), headerFields: response.headers, body: String(buffer: response.body))
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }
}
#endif
