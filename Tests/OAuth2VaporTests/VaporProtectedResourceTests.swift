#if Vapor
import Foundation
import HTTPTypes
import NIOHTTP1
import OAuth2TestSupport
import OAuth2Vapor
import OAuth2Web
import OAuth2WebTestSupport
import Testing
import Vapor

/// An MCP-style API as an RFC 9728 protected resource on a real Vapor server on loopback:
/// VaporProtectedResourceMetadataMiddleware serves the metadata, and
/// VaporResourceServerMiddleware's challenges point to it.
@Suite("Vapor: protected resource metadata", .timeLimit(.minutes(2)))
struct VaporProtectedResourceTests {
    @Test("RFC 9728's resource-server rules hold through the middlewares")
    func metadata() async throws {
        let server = try ProtectedResourceAPIConformance.resourceServer()
        // A port no other test can take before the app listens on it (see ReservedPort).
        let reserved = try ReservedPort()
        defer { withExtendedLifetime(reserved) {} }
        let app = try await Application.make(.testing)
        app.middleware.use(VaporProtectedResourceMetadataMiddleware(server))
        app.grouped(VaporResourceServerMiddleware(server, requiredScopes: ProtectedResourceAPIConformance.requiredScopes)).get("mcp") { request in
            request.accessToken?.subject ?? "-"
        }
        try await app.server.start(address: .hostname("127.0.0.1", port: reserved.port))
        let base = "http://127.0.0.1:\(reserved.port)"
        let browser = VaporAdapterTests.Browser()
        do {
            let failures = try await ProtectedResourceAPIConformance.run { method, path, fields in
                let answer = try await browser.send(
                    NIOHTTP1.HTTPMethod(rawValue: method.rawValue), base + path, headers: fields.map { ($0.name.rawName, $0.value) })
                var received = HTTPFields()
                for (name, value) in answer.headers { if let name = HTTPField.Name(name) { received.append(HTTPField(name: name, value: value)) } }
                return DPoPAPIConformance.Answer(status: answer.status, headerFields: received, body: answer.body)
            }
            #expect(failures.isEmpty, "\(failures)")
        } catch {
            await app.server.shutdown()
            try await app.asyncShutdown()
            throw error
        }
        await app.server.shutdown()
        try await app.asyncShutdown()
    }
}
#endif
