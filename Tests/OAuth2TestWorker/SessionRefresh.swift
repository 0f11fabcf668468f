import Foundation
import HTTPTypes
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `session-refresh <store-dir> <account> <metadata-file> <barrier-file>`: the worker of
/// the test where processes share one store.
///
/// Opens the FileTokenStore at <store-dir>, makes a client of django-oauth-toolkit from the
/// metadata in <metadata-file> (JSON, as the test discovered it) and client
/// `OAUTH2_TEST_DOT_PW_ID`/`_SECRET`, restores the session of <account>, prints `ready`,
/// waits until <barrier-file> exists, calls `freshAccessToken()` once and prints
///
///     refreshes <token requests this process sent>
///     token <the access token it got>
///
/// The token goes to the test through a pipe and nowhere else.
enum SessionRefreshWorker {
    /// Counts this process's token requests.
    final class TokenRequestCounter: HTTPInterceptor, @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var total: Int { lock.withLock { count } }

        func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
            if kind == .token { lock.withLock { count += 1 } }
        }
    }

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 4 else {
            fail("usage: session-refresh <store-dir> <account> <metadata-file> <barrier-file>", status: 64)
        }
        let environment = ProcessInfo.processInfo.environment
        func env(_ name: String, _ fallback: String) -> String { environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback }
        let store = try FileTokenStore(directory: URL(fileURLWithPath: arguments[0]))
        let metadata = try JSONDecoder().decode(ServerMetadata.self, from: Data(contentsOf: URL(fileURLWithPath: arguments[2])))
        let counter = TokenRequestCounter()
        let client = try OAuth2Client(
            metadata: metadata,
            configuration: ClientConfiguration(
                clientID: env("OAUTH2_TEST_DOT_PW_ID", "pw"), clientSecret: env("OAUTH2_TEST_DOT_PW_SECRET", "pw-secret")),
            environment: HTTPEnvironment(interceptors: [counter]))
        guard let session = try await TokenSession.restore(client: client, store: store, account: arguments[1]) else {
            fail("no stored session for account \(arguments[1])")
        }
        say("ready")
        while !FileManager.default.fileExists(atPath: arguments[3]) { usleep(500) }
        let token = try await session.freshAccessToken()
        say("refreshes \(counter.total)")
        say("token \(token)")
    }
}
