#if Postgres
import Crypto
import Foundation
import HTTPTypes
import Logging
import OAuth2
import OAuth2Postgres

/// `fleet-refresh <schema> <account> <metadata-file> <go-dir> <rounds> <callers> [hold]`: a
/// replica of the fleet tests, in a process of its own.
///
/// Opens a `PostgresTokenStore` (cache on, listener connected) on the schema at
/// `OAUTH2_TEST_POSTGRES_URL`, sealed with the ring `OAUTH2_TEST_FLEET_KEYS`; makes a client of
/// django-oauth-toolkit from the metadata in <metadata-file> (JSON) and client
/// `OAUTH2_TEST_DOT_FLEET_ID`/`_SECRET`; prints `ready`. Then, for each round r in 1…<rounds>:
///
/// 1. waits for the file `<go-dir>/r.prime`, then until its store shows the session's access
///    token as expired (the test expired it in the database; the notification reaches this
///    replica's cache), and prints `primed r`;
/// 2. waits for `<go-dir>/r.go`, restores the session of <account> and calls
///    `freshAccessToken()` from <callers> tasks at once;
/// 3. prints `round r refreshes <token requests it sent> failures <n> locked-reads <rows read
///    under the lock> tokens <SHA-256 prefixes of the distinct tokens, comma-separated>`; a
///    failure's description goes to standard error (it never holds a token).
///
/// With `hold`, a token request is never sent: the worker prints `holding` when its renewal,
/// inside the store's lock, is about to send it, and waits there until killed.
enum FleetRefreshWorker {
    /// Prints `holding` and never lets a token request go.
    struct HoldTokenRequests: HTTPInterceptor {
        func willSend(_ request: inout HTTPRequest, body: inout Data?, kind: RequestKind) async throws {
            guard kind == .token else { return }
            say("holding")
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 6 || (arguments.count == 7 && arguments[6] == "hold"),
            let rounds = Int(arguments[4]), let callers = Int(arguments[5]), rounds > 0, callers > 0
        else {
            fail("usage: fleet-refresh <schema> <account> <metadata-file> <go-dir> <rounds> <callers> [hold]", status: 64)
        }
        let (schema, account, goDirectory) = (arguments[0], arguments[1], URL(fileURLWithPath: arguments[3]))
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["OAUTH2_TEST_POSTGRES_URL"], let keys = environment["OAUTH2_TEST_FLEET_KEYS"] else {
            fail("OAUTH2_TEST_POSTGRES_URL and OAUTH2_TEST_FLEET_KEYS must be set", status: 64)
        }
        var postgres = try PostgresTokenStore.clientConfiguration(url: url)
        postgres.options.minimumConnections = 0
        postgres.options.maximumConnections = 4
        let store = try PostgresTokenStore(
            postgres: postgres, configuration: .init(schema: schema), encryptionKeys: .init(parsing: keys),
            logger: Logger(label: "fleet-worker"))
        let counter = SessionRefreshWorker.TokenRequestCounter()
        let metadata = try JSONDecoder().decode(ServerMetadata.self, from: Data(contentsOf: URL(fileURLWithPath: arguments[2])))
        let client = try OAuth2Client(
            metadata: metadata,
            configuration: ClientConfiguration(
                clientID: environment["OAUTH2_TEST_DOT_FLEET_ID"] ?? "fleet",
                clientSecret: environment["OAUTH2_TEST_DOT_FLEET_SECRET"] ?? "fleet-secret", scopes: ["read"]),
            environment: HTTPEnvironment(interceptors: arguments.count == 7 ? [counter, HoldTokenRequests()] : [counter]))
        let key = TokenSession.key(for: client, account: account)

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            await store.waitForListener()
            say("ready")
            for round in 1...rounds {
                try await waitForFile(goDirectory.appendingPathComponent("\(round).prime"))
                while let tokens = try await store.load(key)?.tokens, !tokens.isExpired() {
                    try await Task.sleep(for: .milliseconds(1))
                }
                say("primed \(round)")
                try await waitForFile(goDirectory.appendingPathComponent("\(round).go"))
                let (requests, lockedReads) = (counter.total, store.statistics.lockedReads)
                guard let session = try await TokenSession.restore(client: client, store: store, account: account) else {
                    fail("no stored session for account \(account)")
                }
                let results = await withTaskGroup(of: Result<String, any Error>.self) { tasks in
                    for _ in 0..<callers {
                        tasks.addTask {
                            do { return .success(try await session.freshAccessToken()) } catch { return .failure(error) }
                        }
                    }
                    return await tasks.reduce(into: []) { $0.append($1) }
                }
                var failures = 0
                var tokens: Set<String> = []
                for result in results {
                    switch result {
                    case .success(let token): tokens.insert(fingerprint(token))
                    case .failure(let error):
                        failures += 1
                        if failures == 1 { FileHandle.standardError.write(Data("round \(round): \(error)\n".utf8)) }
                    }
                }
                say(
                    "round \(round) refreshes \(counter.total - requests) failures \(failures)"
                        + " locked-reads \(store.statistics.lockedReads - lockedReads) tokens \(tokens.sorted().joined(separator: ","))")
            }
        }
    }

    /// The first 16 hex digits of the token's SHA-256: enough to tell tokens apart, nothing to use.
    static func fingerprint(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    static func waitForFile(_ url: URL) async throws {
        while !FileManager.default.fileExists(atPath: url.path) { try await Task.sleep(for: .milliseconds(1)) }
    }
}
#endif
