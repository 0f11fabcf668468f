// The parsers on every sign-in and every grant: the token endpoint's response (RFC 6749
// §5.1, with an ID token and a rotated refresh token, as an OpenID provider sends it) and
// the authorization response on the redirect URI (state, iss, code checked).
import Benchmark
import Foundation
import HTTPTypes
import OAuth2

private let tokenBody = Data(#"""
{"access_token":"eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJpc3MiOiJodHRwczovL29wLmV4YW1wbGUiLCJzdWIiOiJ1c2VyLTEiLCJhdWQiOiJhcGkiLCJleHAiOjE3NjcyMjU2MDAsImlhdCI6MTc2NzIyMjAwMCwic2NvcGUiOiJvcGVuaWQgcHJvZmlsZSByZWFkIn0.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmUtc2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU","token_type":"Bearer","expires_in":3600,"refresh_token":"8xLOxBtZp8.rotated-refresh-token-0123456789abcdef","scope":"openid profile read","id_token":"eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJpc3MiOiJodHRwczovL29wLmV4YW1wbGUiLCJzdWIiOiJ1c2VyLTEiLCJhdWQiOiJiZW5jaC1jbGllbnQiLCJleHAiOjE3NjcyMjU2MDAsImlhdCI6MTc2NzIyMjAwMCwibm9uY2UiOiJuLTAifQ.c2lnbmF0dXJl","refresh_expires_in":86400}
"""#.utf8)

private let tokenResponse = HTTPResponse(
    status: .ok, headerFields: [.contentType: "application/json;charset=UTF-8", .cacheControl: "no-store", .date: "Sat, 21 Nov 2026 20:00:00 GMT"])

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal], timeUnits: .nanoseconds, scalingFactor: .kilo, maxDuration: .seconds(3))

    Benchmark("Token response parsing (access, refresh and ID token, scope)") { benchmark in
        let sentAt = Date()
        for _ in benchmark.scaledIterations {
            blackHole(try TokenSet.parse(response: tokenResponse, body: tokenBody, requestedScopes: ["openid"], sentAt: sentAt, receivedAt: sentAt))
        }
    }

    Benchmark("Token error response parsing (invalid_grant)") { benchmark in
        let response = HTTPResponse(status: .badRequest, headerFields: [.contentType: "application/json"])
        let body = Data(#"{"error":"invalid_grant","error_description":"The refresh token is invalid or expired."}"#.utf8)
        let sentAt = Date()
        for _ in benchmark.scaledIterations {
            do {
                blackHole(try TokenSet.parse(response: response, body: body, sentAt: sentAt, receivedAt: sentAt))
            } catch {
                blackHole(error)
            }
        }
    }

    Benchmark("Authorization response parsing (code, state, iss)") { benchmark in
        let issuer = "https://op.example"
        let client = try await OAuth2Client(
            server: .metadata(ServerMetadata(
                issuer: URL(string: issuer)!, authorizationEndpoint: URL(string: issuer + "/authorize")!,
                tokenEndpoint: URL(string: issuer + "/token")!,
                additionalFields: ["authorization_response_iss_parameter_supported": true])),
            configuration: ClientConfiguration(clientID: "bench-client", redirectURI: URL(string: "http://127.0.0.1:53682/callback")!))
        let request = try await client.startAuthorization()
        var callback = URLComponents(string: "http://127.0.0.1:53682/callback")!
        callback.queryItems = [
            URLQueryItem(name: "code", value: "SplxlOBeZQQYbYS6WxSbIA.a-longer-authorization-code-0123456789"),
            URLQueryItem(name: "state", value: request.state),
            URLQueryItem(name: "iss", value: issuer),
            URLQueryItem(name: "session_state", value: "c4f1a2b3.d5e6"),
        ]
        let url = callback.url!
        for _ in benchmark.scaledIterations {
            blackHole(try AuthorizationResponse(callbackURL: url, request: request))
        }
    }
}
