import Foundation
import OAuth2

/// What every ``RegistrationStore`` of this package must do, checked through the protocols
/// only, and the move of registrations kept the old way (a session under the account
/// `.registration`) to registration records. Each store's test target runs it against its
/// store (memory, file, keyring, PostgreSQL) and expects no failure:
///
/// ```swift
/// let failures = await RegistrationStoreConformance.run(store)
/// #expect(failures.isEmpty, "\(failures)")
/// ```
///
/// It works under an issuer of its own (random), so it can run beside other tests on a
/// shared store, and removes what it wrote.
public enum RegistrationStoreConformance {
    /// Runs every check against `store`; returns what failed, one line each.
    public static func run(_ store: any TokenStore & RegistrationStore) async -> [String] {
        var failures: [String] = []
        func check(_ condition: Bool, _ what: String) { if !condition { failures.append(what) } }
        let issuer = "https://registrations-\(UUID().uuidString.lowercased()).example.com"
        let otherIssuer = issuer.replacingOccurrences(of: "registrations-", with: "other-")
        let session = StoreConformance.record(TokenSessionKey(issuer: issuer, clientID: "c-1", account: "default"), access: "at-1")
        do {
            check(try await store.loadRegistration(issuer: issuer, clientID: "c-1") == nil, "a registration never saved loads as nil")
            check(try await store.registeredClientIDs(issuer: issuer) == [], "no registration at a new issuer")

            let first = registration("c-1", secret: "secret-1")
            try await store.saveRegistration(first, issuer: issuer)
            check(try await store.loadRegistration(issuer: issuer, clientID: "c-1") == first, "a registration reads back as saved (secrets, dates, metadata, unknown members)")
            var rotated = first
            rotated.clientSecret = "secret-2"
            rotated.registrationAccessToken = "rat-2"
            try await store.saveRegistration(rotated, issuer: issuer)
            check(try await store.loadRegistration(issuer: issuer, clientID: "c-1") == rotated, "a second save replaces the first")
            try await store.saveRegistration(registration("c-2", secret: nil), issuer: issuer)
            try await store.saveRegistration(registration("c-3", secret: "secret-3"), issuer: otherIssuer)
            check(try await store.registeredClientIDs(issuer: issuer) == ["c-1", "c-2"], "registeredClientIDs names the issuer's clients, sorted")
            check(try await store.loadRegistration(issuer: issuer, clientID: "c-3") == nil, "another issuer's registration is another record")
            let keys = try await store.list().filter { $0.issuer == issuer || $0.issuer == otherIssuer }
            check(keys.isEmpty, "registrations are not sessions: list() does not show them (got \(keys.count))")

            // A session of the same issuer and client: neither record touches the other.
            try await store.save(session)
            try await store.removeRegistration(issuer: issuer, clientID: "c-1")
            check(try await store.loadRegistration(issuer: issuer, clientID: "c-1") == nil, "a removed registration loads as nil")
            check(try await store.load(session.key) == session, "removing a registration leaves the session of its client")
            try await store.saveRegistration(rotated, issuer: issuer)
            try await store.remove(session.key)
            check(try await store.loadRegistration(issuer: issuer, clientID: "c-1") == rotated, "removing a session leaves the registration of its client")
            try await store.removeRegistration(issuer: issuer, clientID: "c-9")  // a missing one: not an error

            // Kept the old way: loaded, moved to a registration record, the old record removed.
            let old = registration("old-1", secret: "old-secret")
            let oldKey = TokenSessionKey(issuer: issuer, clientID: "old-1", account: ".registration")
            try await store.save(LegacyRegistrationRecord.session(old, issuer: issuer, now: wholeSecond()))
            check(try await store.list().contains(oldKey), "an old record is a session until it moves")
            check(try await store.loadRegistration(issuer: issuer, clientID: "old-1") == old, "an old record loads as its registration")
            check(try await store.load(oldKey) == nil, "the old record is removed once moved")
            check(!(try await store.list().contains(oldKey)), "list() no longer shows a moved registration")
            check(try await store.loadRegistration(issuer: issuer, clientID: "old-1") == old, "the moved registration loads from its new record")

            // 0.x: the secret beside the registration, not in it; found by registeredClientIDs.
            let zero = registration("old-2", secret: "zero-secret")
            var zeroRecord = LegacyRegistrationRecord.session(zero, issuer: issuer, now: wholeSecond())
            var members = zeroRecord.additionalFields[LegacyRegistrationRecord.field]?.objectValue ?? [:]
            members["client_secret"] = nil
            zeroRecord.additionalFields = [LegacyRegistrationRecord.field: .object(members), "client_secret": "zero-secret"]
            try await store.save(zeroRecord)
            check(try await store.registeredClientIDs(issuer: issuer) == ["c-1", "c-2", "old-1", "old-2"], "registeredClientIDs names old records too")
            check(try await store.load(zeroRecord.key) == nil, "registeredClientIDs moves the old records it finds")
            check(try await store.loadRegistration(issuer: issuer, clientID: "old-2") == zero, "a 0.x record keeps its secret")

            // Removing a registration still kept the old way removes the old record.
            let third = registration("old-3", secret: nil)
            let thirdRecord = LegacyRegistrationRecord.session(third, issuer: issuer, now: wholeSecond())
            try await store.save(thirdRecord)
            try await store.removeRegistration(issuer: issuer, clientID: "old-3")
            check(try await store.load(thirdRecord.key) == nil, "removeRegistration removes an old record too")
            check(try await store.loadRegistration(issuer: issuer, clientID: "old-3") == nil, "a registration removed the old way is gone")
        } catch {
            failures.append("unexpected error: \(error)")
        }
        for clientID in ["c-1", "c-2", "old-1", "old-2", "old-3"] { try? await store.removeRegistration(issuer: issuer, clientID: clientID) }
        try? await store.removeRegistration(issuer: otherIssuer, clientID: "c-3")
        try? await store.remove(session.key)
        return failures
    }

    /// A registration with every member set, dates in whole seconds.
    public static func registration(_ clientID: String, secret: String?) -> ClientRegistration {
        let now = wholeSecond()
        var metadata = RegistrationMetadata(
            redirectURIs: [URL(string: "http://127.0.0.1:8400/callback")!], grantTypes: ["authorization_code", "refresh_token"],
            responseTypes: ["code"], tokenEndpointAuthMethod: secret == nil ? ClientAuthenticationMethod.none : .clientSecretBasic,
            clientName: "conformance \(clientID)", scopes: ["openid", "read"], contacts: ["ops@example.com"],
            additionalMembers: ["application_type": "native", "server_own": .object(["n": .integer(1)])])
        metadata.softwareID = "swift-oauth2-tests"
        return ClientRegistration(
            clientID: clientID, clientSecret: secret, clientIDIssuedAt: now, clientSecretExpiresAt: secret == nil ? nil : now.addingTimeInterval(86400),
            registrationAccessToken: "rat-\(clientID)", registrationClientURI: URL(string: "https://id.example.com/register/\(clientID)"),
            metadata: metadata)
    }

    private static func wholeSecond() -> Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }
}
