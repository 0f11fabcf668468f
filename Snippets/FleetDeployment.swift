// A web app deployed as replicas on PostgreSQL (OAuth2Web, OAuth2Postgres and
// OAuth2Hummingbird or OAuth2Vapor; traits URLSession, Postgres and Hummingbird or Vapor):
// the store as one of the app's services, and a job that removes expired rows.

// snippet.hide
#if Postgres
import Crypto
import Foundation
import Logging
import OAuth2
import OAuth2Postgres
import OAuth2Web
import ServiceLifecycle

// snippet.show
// snippet.store
// Each replica: one store (its own pool of PostgresTokenStore.defaultPoolSize connections)
// over the database and key ring every replica shares.
func makeStore(logger: Logger) throws -> PostgresTokenStore {
    let environment = ProcessInfo.processInfo.environment
    return try PostgresTokenStore(
        // postgres://USER:PASSWORD@HOST:5432/DB?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem
        postgres: PostgresTokenStore.clientConfiguration(url: environment["OAUTH2_POSTGRES_URL"] ?? ""),
        // id:base64-of-32-bytes,… — the current key first
        encryptionKeys: PostgresTokenStore.EncryptionKeys(parsing: environment["OAUTH2_POSTGRES_KEYS"] ?? ""),
        logger: logger)
}

func makeSignIn(client: OAuth2Client, store: PostgresTokenStore) -> WebSignIn {
    WebSignIn(
        client: client,
        configuration: WebSignInConfiguration(
            publicBaseURL: URL(string: "https://app.example.com")!, scopes: ["openid", "profile", "email", "offline_access"]),
        webSessions: PostgresWebSessionStore(store: store),
        tokenStore: store,
        replayStore: PostgresReplayStore(store: store))
}
// snippet.end

// snippet.api
// The API's checks, the same on every replica: JWT access tokens with the keys of the app's
// own client, DPoP proofs whose jti is recorded in the shared database (a proof one replica
// accepted is a replay on all of them), and one nonce key for all (32 bytes from the
// deployment's secrets, as the encryption keys are; SymmetricKey is swift-crypto's).
func makeResourceServer(client: OAuth2Client, store: PostgresTokenStore, nonceKey: SymmetricKey) throws -> ResourceServer {
    guard let keySet = client.keySet, let issuer = client.metadata.issuer else {
        throw OAuth2Error(.invalidConfiguration, source: .client, message: "The provider publishes no JWK set.")
    }
    return ResourceServer(
        accessTokens: AccessTokenVerifier(issuers: [
            TrustedIssuer(issuer: issuer, audiences: ["https://app.example.com/api"], keys: .cache(keySet))
        ]),
        dpop: DPoPProofVerifier(
            publicBaseURL: URL(string: "https://app.example.com")!,
            replayStore: PostgresReplayStore(store: store),
            nonces: DPoPServerNonces(secret: nonceKey)))
}
// snippet.end

// snippet.cleanup
// Removes the rows of no more use, every hour. Any replica may run it, or all of them: each
// expired row is deleted once, whoever gets there first.
struct ExpiredRowsCleanup: Service {
    let store: PostgresTokenStore
    let idleLifetime: TimeInterval  // the WebSignInConfiguration's
    let logger: Logger

    func run() async throws {
        let webSessions = PostgresWebSessionStore(store: store)
        let replays = PostgresReplayStore(store: store)
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    do {
                        try await store.removeExpired(grace: 24 * 3600)  // token rows, a day after they expired
                        try await webSessions.removeExpired(idleLifetime: idleLifetime)  // sessions, pending sign-ins
                        try await replays.removeExpired()  // DPoP proofs' and logout tokens' jtis
                    } catch {
                        // Tried again at the next run; the error's type only, never its details.
                        logger.warning("removing expired rows failed: \(type(of: error))")
                    }
                    try await Task.sleep(for: .seconds(3600))
                }
            }
        } catch is CancellationError {}  // shutdown
    }
}
// snippet.end
#endif

// snippet.hide
#if Postgres && Hummingbird
import Hummingbird
import OAuth2Hummingbird

// snippet.show
// snippet.hummingbird-context
// The request context of a Hummingbird app with both: the signed-in user of its pages
// (HummingbirdWebSignInMiddleware sets it) and the verified token of its API
// (HummingbirdResourceServerMiddleware sets it).
struct AppContext: WebSignInRequestContext, AccessTokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var webUser: WebUser?
    var accessToken: VerifiedAccessToken?
    init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
}
// snippet.end

// snippet.hide
@available(macOS 14, *)
func runHummingbirdReplica(client: OAuth2Client, nonceKey: SymmetricKey) async throws {
    let logger = Logger(label: "app")
    // snippet.show
    // snippet.hummingbird
    let store = try makeStore(logger: logger)
    let signIn = makeSignIn(client: client, store: store)
    let api = try makeResourceServer(client: client, store: store, nonceKey: nonceKey)
    let router = Router(context: AppContext.self)
    router.add(middleware: HummingbirdWebSignInMiddleware(signIn))
    router.group("api/orders")
        .add(middleware: HummingbirdResourceServerMiddleware(api, requiredScopes: ["orders:read"]))
        .get { _, context in context.accessToken?.subject ?? "" }
    // … the app's other routes
    let app = Application(
        router: router,
        configuration: ApplicationConfiguration(address: .hostname("0.0.0.0", port: 8080)),
        // Started with the server, stopped after it (SIGTERM: requests in flight finish first).
        services: [store, ExpiredRowsCleanup(store: store, idleLifetime: signIn.configuration.idleLifetime, logger: logger)],
        logger: logger)
    try await app.runService()
    // snippet.end
    // snippet.hide
}
#endif

// snippet.hide
#if Postgres && Vapor
import OAuth2Vapor
import Vapor

func runVaporReplica(client: OAuth2Client) async throws {
    let logger = Logger(label: "app")
    // snippet.show
    // snippet.vapor
    let store = try makeStore(logger: logger)
    let signIn = makeSignIn(client: client, store: store)
    let app = try await Application.make(.detect())
    app.middleware.use(VaporWebSignInMiddleware(signIn))
    // … the app's routes
    // Vapor runs no swift-service-lifecycle services: run them beside it, until it stops.
    let services = ServiceGroup(
        services: [store, ExpiredRowsCleanup(store: store, idleLifetime: signIn.configuration.idleLifetime, logger: logger)],
        logger: logger)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await services.run() }
        try await app.execute()  // until SIGTERM or SIGINT
        await services.triggerGracefulShutdown()
        try await group.waitForAll()
    }
    try await app.asyncShutdown()
    // snippet.end
    // snippet.hide
}
#endif
