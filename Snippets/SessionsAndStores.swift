// Sessions and token stores: one TokenSession per signed-in identity, kept fresh and kept in a
// TokenStore; several of them side by side; encryption of the file store; old formats.

// snippet.hide
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OAuth2
import OAuth2SecretService

let client = try await OAuth2Client(
    server: .issuer(URL(string: "https://id.example.com")!),
    configuration: ClientConfiguration(clientID: "my-cli", scopes: ["openid", "offline_access"]))
let tokens = TokenSet(accessToken: "…", refreshToken: "…")
let home = URL(fileURLWithPath: NSHomeDirectory())

// snippet.show
// snippet.session
let store = try FileTokenStore(directory: home.appendingPathComponent(".config/my-cli/tokens"))
let session = try await TokenSession(client: client, tokens: tokens, store: store, account: "alice")

// Later, in this process or another one sharing the directory:
if let restored = try await TokenSession.restore(client: client, store: store, account: "alice") {
    let token = try await restored.freshAccessToken()          // renewed first when due
    var request = HTTPRequest(method: .get, url: URL(string: "https://api.example.com/me")!)
    request = try await restored.authorize(request)              // just the Authorization header
    let (response, body) = try await restored.perform(request)   // 401: one renewal, one retry
    print(token.count, response.status, body.count)
}
// snippet.end

// snippet.options
// Renew 2 minutes before expiry; also renew and retry once on a 403 (as p2/OAuth2 does).
let eager = try await TokenSession(
    client: client, tokens: tokens, store: store, account: "bob",
    options: TokenSession.Options(leeway: 120, retryOnForbidden: true))
// snippet.end

// snippet.events
Task {
    for await event in session.events() {
        switch event {
        case .signedIn, .refreshed: break
        case .refreshFailed(let error): print("kept the tokens; \(error.code), retry after \(error.retryAfter ?? 0) s")
        case .signedOut(let reason): print("sign in again: \(reason.map { "\($0.code)" } ?? "signed out")")
        }
    }
}
// snippet.end

// snippet.failures
do {
    _ = try await session.freshAccessToken()
} catch let error as OAuth2Error where error.requiresReauthorization {
    // invalid_grant: the refresh token is dead and the tokens are gone from the store.
} catch let error as OAuth2Error where error.isTransient {
    // Network, 5xx, 429: every token kept; error.retryAfter says when to try again.
}
// snippet.end

// snippet.signOut
let result = await session.signOut { step in print(step) }   // "revoke the access token: done"…
if !result.succeeded {
    print("failed: \(result.failed)")   // tokens kept when a revocation failed: try again later
}
if let logout = result.endSessionRequest {
    print("open \(logout.url) to end the provider's session")
}
// snippet.end

// snippet.stores
let memory = MemoryTokenStore()                                   // for the life of the process
let keyring = SecretServiceTokenStore()                           // GNOME Keyring, KWallet, KeePassXC
let files = try FileTokenStore(                                   // AES-256-GCM, key file 0600
    directory: home.appendingPathComponent(".config/my-cli/tokens"),
    encryption: .keyFile(home.appendingPathComponent(".config/my-cli/tokens.key")))
// Or a key that never touches the disk: the keyring's.
let sealed = try FileTokenStore(
    directory: home.appendingPathComponent(".cache/my-cli/tokens"),
    encryption: .key(try await keyring.encryptionKey()))
// snippet.end

// snippet.adopt
// A store that was plain until now: encrypt its documents once, on purpose. Until then an
// encrypting store refuses them (TokenStoreError .unencrypted): a plain file could be planted.
let adopted = try await files.encryptPlainDocuments()
print("encrypted \(adopted) documents")
// snippet.end

// snippet.registry
let registry = TokenSessionRegistry(store: files)
let work = try await registry.add(tokens, client: client, account: "work")
let personal = try await registry.add(tokens, client: client, account: "personal")
for key in try await registry.list(issuer: "https://id.example.com") {
    print(key)                                                    // personal@my-cli (https://id.example.com)…
}
let again = try await registry.session(for: work.key, client: client)   // the same TokenSession: one renewal
try await registry.remove(personal.key)
// snippet.end

// snippet.storeErrors
do {
    _ = try await files.load(TokenSessionKey(issuer: "https://id.example.com", clientID: "my-cli", account: "alice"))
} catch let error as TokenStoreError {
    switch error.code {
    case .corrupt: print("kept aside at \(error.preservedPath ?? "?"); sign in again")
    case .wrongKey, .unsupportedVersion: print("left in place: \(error)")
    default: throw error
    }
}
// snippet.end

// snippet.import
// Tokens another library saved (a p2/OAuth2 or AppAuth keychain item you read yourself):
// a refresh token is all a session needs; the first call renews it.
let imported = TokenSet(
    accessToken: "access-token-from-the-old-app", refreshToken: "refresh-token-from-the-old-app", expiresAt: .distantPast)
let migrated = try await TokenSession(client: client, tokens: imported, store: store, account: "alice")
_ = try await migrated.freshAccessToken()
// snippet.end
// snippet.hide
_ = (eager, memory, sealed, again)
