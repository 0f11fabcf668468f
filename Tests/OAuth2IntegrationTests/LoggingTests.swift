import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2TestSupport
import Testing

extension Integration {
    @Suite struct TraceLogging {
        @Test(arguments: Server.allCases)
        func aFullFlowAtTraceLogsOneRedactedLinePerExchangeAndNoSecret(server: Server) async throws {
            let log = CapturedLog()
            let counter = RequestCounter()
            let configuration = server.confidential(.clientSecretPost)
            let client = try await server.client(configuration, interceptors: [counter], logger: log.logger())
            let request = try client.authorizationRequest()
            let callback = try await server.authorize(request, clientID: configuration.clientID)
            let code = try AuthorizationResponse(callbackURL: callback, request: request).code
            let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
            let refreshed = try await client.refresh(tokens)
            _ = try await client.introspect(refreshed.accessToken)
            try await client.revoke(refreshed.refreshToken ?? refreshed.accessToken, hint: .refreshToken)

            let passwordClient = try await server.client(server.passwordClient(), interceptors: [counter], logger: log.logger())
            let passwordTokens = try await passwordClient.password(username: Server.username, password: Server.password)

            let exchanges = log.lines.filter { $0.range(of: #"^debug (GET|POST) https?://\S+ → \d{3} "#, options: .regularExpression) != nil }
            #expect(exchanges.count == counter.total, "one line per HTTP exchange:\n\(log.lines.joined(separator: "\n"))")
            #expect(exchanges.contains { $0.contains("POST \(client.metadata.tokenEndpoint!.absoluteString) → 200") })

            var secrets = [code, request.codeVerifier, request.state, tokens.accessToken, refreshed.accessToken,
                           passwordTokens.accessToken, configuration.clientSecret!, server.passwordClient().clientSecret!, Server.password]
            secrets += [tokens.refreshToken, tokens.idToken, refreshed.refreshToken, refreshed.idToken, passwordTokens.refreshToken, request.nonce]
                .compactMap { $0 }
            let text = log.lines.joined(separator: "\n")
            for secret in secrets {
                #expect(!text.contains(secret), "a secret of \(secret.count) characters reached the log")
            }
        }
    }
}
