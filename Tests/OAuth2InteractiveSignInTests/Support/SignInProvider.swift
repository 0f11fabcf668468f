import Foundation
import HTTPTypes
@testable import OAuth2
import OAuth2Internals
import OAuth2JOSE
import OAuth2TestSupport

/// The provider of the sign-in front ends' tests: a ``RecordingProvider`` answering the token
/// and device endpoints from closures (the n-th token request, from 0, with its form).
enum SignInProvider {
    /// Runs `body` with a provider and shuts it down afterwards.
    static func with<T>(
        token: @escaping @Sendable (Int, [String: String]) -> LocalHTTPServer.Reply,
        device: @escaping @Sendable ([String: String]) -> LocalHTTPServer.Reply = { _ in .json(404, #"{"error":"invalid_request"}"#) },
        _ body: (RecordingProvider) async throws -> T
    ) async throws -> T {
        let tokenRequests = Locked(0)
        return try await RecordingProvider.with({ request, _ in
            switch request.path {
            case "/token":
                let index = tokenRequests.withLock { count in
                    defer { count += 1 }
                    return count
                }
                return token(index, request.form)
            case "/device":
                return device(request.form)
            default:
                return .json(404, #"{"error":"not_found"}"#)
            }
        }, body)
    }

    static let tokens = LocalHTTPServer.Reply.json(200, #"{"access_token":"at-from-fake","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-from-fake"}"#)
}

extension RecordingProvider {
    /// The forms of the token requests received, in order.
    var tokenRequests: [[String: String]] { forms(to: "/token") }
    /// The forms of the device authorization requests received, in order.
    var deviceRequests: [[String: String]] { forms(to: "/device") }

    /// A client of this provider: public client `cli`, scope `read`, stamping its requests with
    /// `now` (the system's clock by default).
    func client(scopes: [String] = ["read"], now: @escaping @Sendable () -> Date = { Date() }) throws -> OAuth2Client {
        try OAuth2Client.stamped(
            metadata: ServerMetadata(
                issuer: baseURL,
                authorizationEndpoint: baseURL.appendingPathComponent("authorize"),
                tokenEndpoint: baseURL.appendingPathComponent("token"),
                deviceAuthorizationEndpoint: baseURL.appendingPathComponent("device"),
                endSessionEndpoint: baseURL.appendingPathComponent("logout")),
            configuration: ClientConfiguration(clientID: "cli", scopes: scopes), now: now)
    }
}

extension OAuth2Client {
    /// A client whose requests are stamped with `now`'s time, so the lifetimes of what it
    /// receives (a device code, a CIBA request) count from an instant the test chose.
    static func stamped(
        metadata: ServerMetadata, configuration: ClientConfiguration, now: @escaping @Sendable () -> Date
    ) throws -> OAuth2Client {
        try OAuth2Client(metadata: metadata, configuration: configuration, pipeline: HTTPEnvironment().pipeline().configured(by: configuration), now: now)
    }
}

extension URL {
    /// The value of a query parameter.
    func queryValue(_ name: String) -> String? {
        URLComponents(url: self, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == name })?.value
    }
}
