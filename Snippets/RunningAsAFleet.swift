// A replica of a fleet: its sessions in PostgreSQL (OAuth2Postgres, trait Postgres), shared
// with the other replicas; one refresh for the whole fleet when a token expires.

// snippet.hide
#if Postgres
import Foundation
import Logging
import OAuth2
import OAuth2Postgres
import ServiceLifecycle

struct App: Service {
    func run() async throws { try await gracefulShutdown() }
}

func replica(client: OAuth2Client, user: String) async throws {
    let environment = ProcessInfo.processInfo.environment
    let logger = Logger(label: "replica")
    let app = App()

    // snippet.show
    let store = try PostgresTokenStore(
        postgres: PostgresTokenStore.clientConfiguration(url: environment["OAUTH2_POSTGRES_URL"] ?? ""),
        encryptionKeys: PostgresTokenStore.EncryptionKeys(parsing: environment["OAUTH2_POSTGRES_KEYS"] ?? ""),
        logger: logger)
    let group = ServiceGroup(services: [store, app], gracefulShutdownSignals: [.sigterm], logger: logger)
    // Anywhere in the app, on any replica: the same session, renewed once for the fleet.
    let session = TokenSession(client: client, store: store, account: user)
    // snippet.hide
    _ = session
    // snippet.show
    try await group.run()
    // snippet.hide
}
#endif
