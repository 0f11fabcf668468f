import Foundation
import HTTPTypes
import OAuth2
import OAuth2TestSupport

/// A small authorization server on a real socket that answers the token, device and
/// end-session endpoints from closures, for the sign-in front ends' tests. It records the
/// form of every token request.
final class FakeProvider: @unchecked Sendable {
    let server: LocalHTTPServer
    private let lock = NSLock()
    private var tokenForms: [[String: String]] = []
    private var deviceForms: [[String: String]] = []

    var baseURL: URL { server.baseURL }
    var tokenRequests: [[String: String]] { lock.withLock { tokenForms } }
    var deviceRequests: [[String: String]] { lock.withLock { deviceForms } }

    /// - Parameters:
    ///   - token: answers the n-th token request (from 0) given its form.
    ///   - device: answers a device authorization request.
    init(
        token: @escaping @Sendable (Int, [String: String]) -> LocalHTTPServer.Reply,
        device: @escaping @Sendable ([String: String]) -> LocalHTTPServer.Reply = { _ in .json(404, #"{"error":"invalid_request"}"#) }
    ) async throws {
        let box = Box()
        server = try await LocalHTTPServer { request in
            guard let provider = box.provider else { return .json(503, "{}") }
            return provider.answer(request, token: token, device: device)
        }
        box.provider = self
    }

    private func answer(
        _ request: LocalHTTPServer.Request,
        token: @Sendable (Int, [String: String]) -> LocalHTTPServer.Reply,
        device: @Sendable ([String: String]) -> LocalHTTPServer.Reply
    ) -> LocalHTTPServer.Reply {
        switch request.path {
        case "/token":
            let index = lock.withLock {
                tokenForms.append(request.form)
                return tokenForms.count - 1
            }
            return token(index, request.form)
        case "/device":
            lock.withLock { deviceForms.append(request.form) }
            return device(request.form)
        default:
            return .json(404, #"{"error":"not_found"}"#)
        }
    }

    /// A client of this provider: public client `cli`, scope `read`.
    func client(scopes: [String] = ["read"]) throws -> OAuth2Client {
        try OAuth2Client(
            metadata: ServerMetadata(
                issuer: baseURL,
                authorizationEndpoint: baseURL.appendingPathComponent("authorize"),
                tokenEndpoint: baseURL.appendingPathComponent("token"),
                deviceAuthorizationEndpoint: baseURL.appendingPathComponent("device"),
                endSessionEndpoint: baseURL.appendingPathComponent("logout")),
            configuration: ClientConfiguration(clientID: "cli", scopes: scopes))
    }

    func shutdown() async { await server.shutdown() }

    /// Runs `body` with a provider and shuts it down afterwards.
    static func with<T>(
        token: @escaping @Sendable (Int, [String: String]) -> LocalHTTPServer.Reply,
        device: @escaping @Sendable ([String: String]) -> LocalHTTPServer.Reply = { _ in .json(404, #"{"error":"invalid_request"}"#) },
        _ body: (FakeProvider) async throws -> T
    ) async throws -> T {
        let provider = try await FakeProvider(token: token, device: device)
        do {
            let value = try await body(provider)
            await provider.shutdown()
            return value
        } catch {
            await provider.shutdown()
            throw error
        }
    }

    static let tokens = LocalHTTPServer.Reply.json(200, #"{"access_token":"at-from-fake","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-from-fake"}"#)

    private final class Box: @unchecked Sendable {
        private let lock = NSLock()
        private weak var stored: FakeProvider?
        var provider: FakeProvider? {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }
}

extension URL {
    /// The value of a query parameter.
    func queryValue(_ name: String) -> String? {
        URLComponents(url: self, resolvingAgainstBaseURL: false)?.queryItems?.first(where: { $0.name == name })?.value
    }
}
