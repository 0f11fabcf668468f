// A replica of a service that calls other services on its users' behalf (OAuth2,
// OAuth2Postgres with trait Postgres): tokens for other audiences, by token exchange and
// client credentials, cached for the whole fleet.

// snippet.hide
#if Postgres
import Foundation
import Logging
import OAuth2
import OAuth2Postgres
import OAuth2Web

func downstreamReplica(client: OAuth2Client, store: PostgresTokenStore, userSession: TokenSession, account: String) async throws -> [String] {
    // snippet.show
    // One per replica, next to the token store (run both as Services): the table is shared.
    let downstreamStore = PostgresDownstreamTokenStore(store: store)
    let downstream = DownstreamTokens(
        store: downstreamStore, configuration: .init(renewalSkew: 60))  // renewed a minute early

    // For the signed-in user (account: WebSessionRecord.account): once per key for the fleet.
    let orders = try await downstream.exchange(
        for: userSession, session: account, audiences: ["https://orders.example.com"], scopes: ["orders:read"])
    // The service's own token for a background job.
    let reports = try await downstream.clientCredentials(client: client, scopes: ["reports"])

    // WebSignIn drops a user's downstream tokens at sign-out and at back-channel logout:
    let signIn = WebSignIn(
        client: client, configuration: WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example.com")!),
        webSessions: PostgresWebSessionStore(store: store), tokenStore: store, replayStore: PostgresReplayStore(store: store),
        downstreamTokens: downstream)
    // snippet.hide
    _ = signIn
    return [orders.authorizationValue, reports.authorizationValue]
}
#endif
