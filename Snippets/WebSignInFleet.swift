// A replica of a web app behind a load balancer (OAuth2Web, OAuth2Postgres with trait
// Postgres): browser sessions, pending sign-ins, tokens and logout tokens' `jti`s in
// PostgreSQL, shared with every other replica.

// snippet.hide
#if Postgres
import Foundation
import Logging
import OAuth2
import OAuth2Postgres
import OAuth2Web

func webReplica(client: OAuth2Client) throws -> WebSignIn {
    let environment = ProcessInfo.processInfo.environment
    let logger = Logger(label: "replica")

    // snippet.show
    // One store per replica (its own pool), run as a Service; the same database for all.
    let store = try PostgresTokenStore(
        postgres: PostgresTokenStore.clientConfiguration(url: environment["OAUTH2_POSTGRES_URL"] ?? ""),
        encryptionKeys: PostgresTokenStore.EncryptionKeys(parsing: environment["OAUTH2_POSTGRES_KEYS"] ?? ""),
        logger: logger)
    let signIn = WebSignIn(
        client: client,
        configuration: WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example.com")!),
        sessions: PostgresWebSessionStore(store: store),  // sessions and pending sign-ins
        tokens: store,  // the users' tokens: one refresh for the fleet
        replayStore: PostgresReplayStore(store: store))  // logout tokens accepted once
    // snippet.hide
    return signIn
}
#endif
