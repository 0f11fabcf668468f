import Foundation
@testable import OAuth2
import OAuth2Internals
import OAuth2TestSupport
import Testing
@testable import OAuth2InteractiveSignIn

/// `BackchannelSignIn`: the presentation of CIBA, against a local provider.
@Suite struct BackchannelSignInTests {
    static let authReqID = "auth-req-never-shown-4711"

    /// Runs `body` with a provider answering the backchannel endpoint with a request of
    /// interval 1 and the token endpoint with `token` (the n-th request, from 0).
    /// The instant the client stamps its requests with, and the presenter's clock reads.
    static let instant = Date(timeIntervalSince1970: 1_800_000_000)

    static func with(
        now: @escaping @Sendable () -> Date = { Date() },
        token: @escaping @Sendable (Int, [String: String]) -> LocalHTTPServer.Reply,
        _ body: (RecordingProvider, OAuth2Client) async throws -> Void
    ) async throws {
        let polls = Locked(0)
        try await RecordingProvider.with({ request, _ in
            switch request.path {
            case "/bc-authorize":
                return .json(200, #"{"auth_req_id":"\#(authReqID)","expires_in":300,"interval":1}"#)
            case "/token":
                let index = polls.withLock { count in
                    defer { count += 1 }
                    return count
                }
                return token(index, request.form)
            default:
                return .json(404, #"{"error":"not_found"}"#)
            }
        }) { provider in
            let client = try OAuth2Client.stamped(
                metadata: ServerMetadata(
                    issuer: provider.baseURL, tokenEndpoint: provider.baseURL.appendingPathComponent("token"),
                    additionalFields: ["backchannel_authentication_endpoint": .string(provider.baseURL.appendingPathComponent("bc-authorize").absoluteString)]),
                configuration: ClientConfiguration(clientID: "teller", scopes: ["openid"]), now: now)
            try await body(provider, client)
        }
    }

    @Test func showsTheBindingMessageAndEndsADenialTyped() async throws {
        try await Self.with(now: { Self.instant }, token: { index, _ in
            index < 2 ? .json(400, #"{"error":"authorization_pending"}"#) : .json(400, #"{"error":"access_denied"}"#)
        }) { provider, client in
            let output = CapturedOutput()
            let clock = ImmediateClock()
            do {
                _ = try await BackchannelSignIn(output: output, now: { Self.instant }).signIn(
                    client: client, request: BackchannelAuthenticationRequest(hint: .loginHint("alice"), bindingMessage: "W4SCT"), clock: clock)
                Issue.record("a denied request gave tokens")
            } catch let error as OAuth2Error {
                #expect(error.code == .accessDenied)
                #expect(!error.description.contains(Self.authReqID))
            }
            #expect(provider.forms(to: "/bc-authorize") == [["client_id": "teller", "login_hint": "alice", "binding_message": "W4SCT", "scope": "openid"]])
            #expect(provider.forms(to: "/token").count == 3)
            #expect(provider.forms(to: "/token").allSatisfy { $0["auth_req_id"] == Self.authReqID && $0["grant_type"] == Grant.cibaType })
            #expect(clock.sleeps == [.seconds(1), .seconds(1), .seconds(1)])
            let text = output.text
            #expect(text.contains("    W4SCT\n"))
            // The request's lifetime counts from its stamp, on the clock the text reads.
            #expect(text.contains("The request expires in 5 minutes.\n"))
            #expect(!text.contains(Self.authReqID))
            #expect(!text.contains("\u{1B}"), "no terminal controls when the output is not a terminal")
        }
    }

    @Test func theTimeoutEndsAWaitThatWouldOutliveIt() async throws {
        try await Self.with(token: { _, _ in .json(400, #"{"error":"authorization_pending"}"#) }) { _, client in
            do {
                _ = try await BackchannelSignIn(output: CapturedOutput(), timeout: .seconds(3)).signIn(
                    client: client, request: BackchannelAuthenticationRequest(hint: .loginHint("alice")))
                Issue.record("the wait outlived its timeout")
            } catch let error as OAuth2Error {
                #expect(error.code == .timeout)
                #expect(error.source == .client)
            }
        }
    }

    @Test func aRandomBindingMessageIsSixUnambiguousCharacters() {
        let messages = Set((0..<20).map { _ in BackchannelSignIn.randomBindingMessage() })
        #expect(messages.count > 1)
        for message in messages {
            #expect(message.count == 6)
            #expect(message.allSatisfy { "ABCDEFGHJKMNPQRSTUVWXYZ23456789".contains($0) })
        }
    }
}
