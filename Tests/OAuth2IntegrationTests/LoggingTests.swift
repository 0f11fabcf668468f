import Foundation
import HTTPTypes
import Logging
import OAuth2
import Testing

/// A log handler that keeps every line, metadata included, as it would be printed.
final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _lines: [String] = []
    var lines: [String] { lock.withLock { _lines } }

    func logger() -> Logger {
        var logger = Logger(label: "integration") { _ in Handler(log: self) }
        logger.logLevel = .trace
        return logger
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let text = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.lock.withLock { log._lines.append("\(event.level) \(event.message) \(text)") }
        }
    }
}

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
