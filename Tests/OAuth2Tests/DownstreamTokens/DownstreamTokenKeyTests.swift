import Foundation
import OAuth2
import Testing

@Suite("DownstreamTokenKey: every parameter that changes the token is part of the key")
struct DownstreamTokenKeyTests {
    static let actor = TokenExchangeRequest.Token("actor-token-1", type: .jwt)

    static func key(
        session: String? = "session-1", grant: DownstreamTokenKey.Grant = .tokenExchange, issuer: String = "https://as.example.com",
        clientID: String = "gateway", audiences: [String] = ["orders"], resources: [URL] = [URL(string: "https://orders.example.com/")!],
        scopes: [String] = ["orders:read", "orders:write"], requestedTokenType: TokenTypeURI? = .accessToken,
        actor: TokenExchangeRequest.Token? = actor, dpopThumbprint: String? = "thumb-1"
    ) -> DownstreamTokenKey {
        DownstreamTokenKey(
            session: session, grant: grant, issuer: issuer, clientID: clientID, audiences: audiences, resources: resources, scopes: scopes,
            requestedTokenType: requestedTokenType, actor: actor, dpopThumbprint: dpopThumbprint)
    }

    @Test("Changing any one field makes another key, with another storage id")
    func everyFieldCounts() {
        let base = Self.key()
        let variants: [(String, DownstreamTokenKey)] = [
            ("session", Self.key(session: "session-2")),
            ("no session", Self.key(session: nil)),
            ("grant", Self.key(grant: .clientCredentials)),
            ("issuer", Self.key(issuer: "https://other.example.com")),
            ("client", Self.key(clientID: "worker")),
            ("audience", Self.key(audiences: ["billing"])),
            ("another audience too", Self.key(audiences: ["orders", "billing"])),
            ("no audience", Self.key(audiences: [])),
            ("resource", Self.key(resources: [URL(string: "https://billing.example.com/")!])),
            ("no resource", Self.key(resources: [])),
            ("fewer scopes", Self.key(scopes: ["orders:read"])),
            ("more scopes", Self.key(scopes: ["orders:read", "orders:write", "admin"])),
            ("no scopes", Self.key(scopes: [])),
            ("requested type", Self.key(requestedTokenType: .jwt)),
            ("no requested type", Self.key(requestedTokenType: nil)),
            ("actor token", Self.key(actor: .init("actor-token-2", type: .jwt))),
            ("actor type", Self.key(actor: .init("actor-token-1", type: .accessToken))),
            ("no actor", Self.key(actor: nil)),
            ("DPoP key", Self.key(dpopThumbprint: "thumb-2")),
            ("bearer", Self.key(dpopThumbprint: nil)),
        ]
        var ids: Set<String> = [base.storageID]
        for (field, variant) in variants {
            #expect(variant != base, "\(field)")
            #expect(variant.storageID != base.storageID, "\(field)")
            ids.insert(variant.storageID)
        }
        #expect(ids.count == variants.count + 1, "no two variants share a storage id")
    }

    @Test("Fields cannot run into one another: a value moved between lists is another key")
    func noAmbiguity() {
        let a = Self.key(audiences: ["x", "y"], scopes: [])
        let b = Self.key(audiences: ["x"], scopes: ["y"])
        let c = Self.key(session: "ab", clientID: "c")
        let d = Self.key(session: "a", clientID: "bc")
        #expect(a.storageID != b.storageID)
        #expect(c.storageID != d.storageID)
    }

    @Test("Audiences, resources and scopes are sets: order and repetition make the same key")
    func setsAreSets() {
        let a = Self.key(audiences: ["b", "a"], scopes: ["write", "read", "read"])
        let b = Self.key(audiences: ["a", "b", "a"], scopes: ["read", "write"])
        #expect(a == b)
        #expect(a.storageID == b.storageID)
        #expect(a.scopes == ["read", "write"])
    }

    @Test("The key shows neither the actor token nor the user's session")
    func noSecretInTheKey() {
        let key = Self.key(session: "user-session-handle-42")
        let text = "\(key) \(key.storageID) \(String(describing: key.actorDigest))"
        #expect(!text.contains("actor-token-1"))
        #expect(!text.contains("user-session-handle-42"))
        #expect(DownstreamTokenKey.sessionID("user-session-handle-42") != "user-session-handle-42")
    }

    @Test("A downstream token's description, debug description and dump hide the token")
    func tokenIsRedacted() {
        let token = DownstreamToken(token: "secret-token-value", tokenType: "DPoP", expiresAt: Date(), issuedAt: Date())
        var dumped = ""
        dump(token, to: &dumped)
        for text in [token.description, token.debugDescription, dumped, "\(token)"] {
            #expect(!text.contains("secret-token-value"))
        }
        #expect(token.authorizationValue == "DPoP secret-token-value")
        #expect(DownstreamToken(token: "t", tokenType: "bearer", expiresAt: Date(), issuedAt: Date()).authorizationValue == "Bearer t")
    }
}
