import Foundation
import HTTPTypes
@testable import OAuth2
import OAuth2Internals

/// An authorization server and a resource server behind a ``StubTransport``: the token
/// endpoint answers from a script, the resource server accepts the access tokens the test
/// names, and every request is counted.
final class ScriptedProvider: @unchecked Sendable {
    enum Path { static let token = "/token", revoke = "/revoke", api = "/api" }

    private let lock = NSLock()
    private var tokenRequests: [[String: String]] = []
    private var revocations: [[String: String]] = []
    private var resourceAuthorizations: [String?] = []
    private var accepted: Set<String>
    private var script: @Sendable (_ form: [String: String], _ count: Int) async throws -> (HTTPResponse, Data)
    private var revokeReply: @Sendable (_ form: [String: String]) -> (HTTPResponse, Data) = { _ in response(200, "") }
    private var resourceReply: @Sendable (_ authorization: String?, _ accepted: Bool) -> (HTTPResponse, Data) = { _, ok in
        ok ? response(200, #"{"ok":true}"#) : response(401, "", contentType: nil, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
    }

    /// The default script: each token request gets `at-N` / `rt-N` (N counting from 1),
    /// valid an hour.
    init(accepting accepted: Set<String> = []) {
        self.accepted = accepted
        self.script = { _, count in tokenResponse("at-\(count)", refreshToken: "rt-\(count)") }
    }

    var transport: StubTransport {
        StubTransport { [self] request, body in
            let form = FormURLEncoding.decode(String(decoding: body ?? Data(), as: UTF8.self))
                .map { Dictionary($0, uniquingKeysWith: { first, _ in first }) } ?? [:]
            switch request.url?.path {
            case Path.token:
                let count = lock.withLock {
                    tokenRequests.append(form)
                    return tokenRequests.count
                }
                let script = lock.withLock { self.script }
                return try await script(form, count)
            case Path.revoke:
                lock.withLock { revocations.append(form) }
                return lock.withLock { revokeReply }(form)
            default:
                let authorization = request.headerFields[.authorization]
                let ok = lock.withLock {
                    resourceAuthorizations.append(authorization)
                    return authorization.map { accepted.contains(String($0.dropFirst("Bearer ".count))) } ?? false
                }
                return lock.withLock { resourceReply }(authorization, ok)
            }
        }
    }

    func onToken(_ script: @escaping @Sendable (_ form: [String: String], _ count: Int) async throws -> (HTTPResponse, Data)) {
        lock.withLock { self.script = script }
    }

    func onRevoke(_ reply: @escaping @Sendable (_ form: [String: String]) -> (HTTPResponse, Data)) {
        lock.withLock { revokeReply = reply }
    }

    func onResource(_ reply: @escaping @Sendable (_ authorization: String?, _ accepted: Bool) -> (HTTPResponse, Data)) {
        lock.withLock { resourceReply = reply }
    }

    func accept(_ token: String) { _ = lock.withLock { accepted.insert(token) } }

    var tokenRequestCount: Int { lock.withLock { tokenRequests.count } }
    var tokenForms: [[String: String]] { lock.withLock { tokenRequests } }
    var revocationForms: [[String: String]] { lock.withLock { revocations } }
    var resourceCalls: [String?] { lock.withLock { resourceAuthorizations } }

    static let metadata = ServerMetadata(
        issuer: URL(string: Fixtures.issuer)!,
        authorizationEndpoint: URL(string: "https://as.example.com/authorize")!,
        tokenEndpoint: URL(string: "https://as.example.com/token")!,
        revocationEndpoint: URL(string: "https://as.example.com/revoke")!,
        endSessionEndpoint: URL(string: "https://as.example.com/logout")!
    )

    static let api = URL(string: "https://api.example.com/api")!

    func client(now: @escaping @Sendable () -> Date = { Date() }) throws -> OAuth2Client {
        try OAuth2Client(
            metadata: Self.metadata, configuration: Fixtures.configuration(),
            pipeline: HTTPPipeline(
                transport: transport, interceptors: [], logger: .init(label: "test"),
                userAgent: HTTPEnvironment.defaultUserAgent, additionalHeaders: [:]),
            now: now)
    }
}

/// A token endpoint answer.
func tokenResponse(_ accessToken: String, refreshToken: String? = nil, expiresIn: Int = 3600, headers: HTTPFields = [:]) -> (HTTPResponse, Data) {
    var members = [#""access_token":"\#(accessToken)""#, #""token_type":"Bearer""#, #""expires_in":\#(expiresIn)"#]
    if let refreshToken { members.append(#""refresh_token":"\#(refreshToken)""#) }
    return response(200, "{" + members.joined(separator: ",") + "}", headers: headers)
}

/// A token set whose access token expired `ago` seconds ago.
func expiredTokens(_ accessToken: String = "at-0", refreshToken: String? = "rt-0", ago: TimeInterval = 10) -> TokenSet {
    TokenSet(
        accessToken: accessToken, refreshToken: refreshToken,
        expiresAt: Date().addingTimeInterval(-ago), issuedAt: Date().addingTimeInterval(-3600 - ago))
}

/// A token set valid for `lifetime` more seconds.
func freshTokens(_ accessToken: String = "at-0", refreshToken: String? = "rt-0", lifetime: TimeInterval = 3600) -> TokenSet {
    TokenSet(accessToken: accessToken, refreshToken: refreshToken, expiresAt: Date().addingTimeInterval(lifetime), issuedAt: Date())
}

/// A store that keeps what it is asked to do, in order, and can be told to fail.
actor RecordingStore: TokenStore {
    private let inner = MemoryTokenStore()
    private(set) var operations: [String] = []
    var failSaves = false
    var failRemoves = false

    func setFailSaves(_ fail: Bool) { failSaves = fail }
    func setFailRemoves(_ fail: Bool) { failRemoves = fail }
    func note(_ text: String) { operations.append(text) }

    func load(_ key: TokenSessionKey) async throws -> StoredTokenSession? { await inner.load(key) }

    func save(_ session: StoredTokenSession) async throws {
        if failSaves { throw OAuth2Error(.invalidConfiguration, source: .client, message: "disk full (test)") }
        operations.append("save \(session.tokens.accessToken) \(session.tokens.refreshToken ?? "-")")
        await inner.save(session)
    }

    func remove(_ key: TokenSessionKey) async throws {
        if failRemoves { throw OAuth2Error(.invalidConfiguration, source: .client, message: "read-only (test)") }
        operations.append("remove")
        await inner.remove(key)
    }

    func list() async throws -> [TokenSessionKey] { await inner.list() }

    func withExclusiveAccess<T: Sendable>(to key: TokenSessionKey, _ body: @Sendable () async throws -> T) async throws -> T {
        try await inner.withExclusiveAccess(to: key, body)
    }
}

/// Collects a session's events in the background.
final class EventRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [TokenSessionEvent] = []
    private var task: Task<Void, Never>?

    init(_ session: TokenSession) {
        let stream = session.events()
        task = Task { [weak self] in
            for await event in stream { self?.lock.withLock { self?.storage.append(event) } }
        }
    }

    var events: [TokenSessionEvent] { lock.withLock { storage } }

    /// The events' kinds, e.g. `["refreshed at-1", "signedOut sign_in_required"]`.
    var summary: [String] {
        events.map { event in
            switch event {
            case .signedIn(let tokens): "signedIn \(tokens.accessToken)"
            case .refreshed(let tokens): "refreshed \(tokens.accessToken)"
            case .refreshFailed(let error): "refreshFailed \(error.code)"
            case .signedOut(let error): "signedOut \(error?.code.rawValue ?? "app")"
            }
        }
    }

    /// Waits until `count` events have arrived (a watchdog of 30 s: returns as soon as they have).
    func wait(for count: Int) async {
        for _ in 0..<3000 where events.count < count { try? await Task.sleep(for: .milliseconds(10)) }
    }

    deinit { task?.cancel() }
}
