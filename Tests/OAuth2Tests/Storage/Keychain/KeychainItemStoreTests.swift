import Foundation
import OAuth2TestSupport
import Testing
@testable import OAuth2

/// `KeychainTokenStore`'s logic (`KeychainItemStore`) against an in-memory Keychain that
/// answers as `SecItem*` does: the items it writes, how it reads what others wrote, how
/// `OSStatus` codes become `TokenStoreError`s, and the migration of older records.
@Suite("Keychain store logic, on an in-memory Keychain")
struct KeychainItemStoreTests {
    let alice = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice")
    let group = "TEAM.com.example.app"

    func store(_ keychain: InMemoryKeychain, service: String = "swift-oauth2", accessGroup: String? = nil) -> KeychainItemStore {
        KeychainItemStore(items: keychain, service: service, accessGroup: accessGroup)
    }

    @Test func passesTheSharedStoreSuites() async {
        let keychain = InMemoryKeychain()
        let sessions = await StoreConformance.run(store(keychain))
        #expect(sessions.isEmpty, "\(sessions)")
        let registrations = await RegistrationStoreConformance.run(store(keychain))
        #expect(registrations.isEmpty, "\(registrations)")
        #expect(keychain.items.isEmpty, "both suites clean up after themselves: \(keychain.items.map(\.account))")
    }

    @Test func aSessionIsOneDeviceOnlyItemOfTheServiceNamedByItsKey() async throws {
        let keychain = InMemoryKeychain(accessGroups: ["TEAM.first", group])
        let keychainStore = store(keychain, accessGroup: group)
        try await keychainStore.save(StoreConformance.record(alice, access: "at-1"))

        let item = try #require(keychain.items.first)
        #expect(keychain.items.count == 1)
        #expect(item.service == "swift-oauth2")
        #expect(item.account == #"["https://id.example.com","cli","alice"]"#, "a JSON array, slashes unescaped")
        #expect(item.accessGroup == group)
        #expect(item.accessibility == .afterFirstUnlockThisDeviceOnly)
        #expect(!item.synchronizable, "tokens never leave the device through iCloud Keychain")
        #expect(item.label == "cli (https://id.example.com)")
        #expect(!item.label.contains("at-1"))
        let json = try #require(try JSONSerialization.jsonObject(with: item.data) as? [String: Any])
        #expect(json["version"] as? Int == TokenDocument.currentVersion)

        try await keychainStore.save(StoreConformance.record(alice, access: "at-2"))
        #expect(keychain.items.count == 1, "a second save updates the item")
        #expect(keychain.count(.add) == 1)
        #expect(try await keychainStore.load(alice)?.tokens.accessToken == "at-2")
    }

    @Test func storesOfOtherServicesOrGroupsDoNotSeeEachOther() async throws {
        let keychain = InMemoryKeychain(accessGroups: [group, "TEAM.shared"])
        let mine = store(keychain)
        let other = store(keychain, service: "another-app")
        let shared = store(keychain, accessGroup: "TEAM.shared")
        try await mine.save(StoreConformance.record(alice, access: "mine"))
        try await shared.save(StoreConformance.record(alice, access: "shared"))

        #expect(try await other.load(alice) == nil)
        #expect(try await other.list() == [])
        #expect(try await shared.load(alice)?.tokens.accessToken == "shared")
        #expect(try await store(keychain, accessGroup: group).load(alice)?.tokens.accessToken == "mine")
        // A store without a group searches every group the app may use, as the Keychain does.
        #expect(try await mine.list() == [alice, alice])
        try await shared.remove(alice)
        #expect(try await store(keychain, accessGroup: group).load(alice)?.tokens.accessToken == "mine", "the other group's item is left")
    }

    @Test func listingSkipsItemsThatAreNotSessionsAndSortsTheKeys() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        let bob = TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "bob")
        let other = TokenSessionKey(issuer: "https://a.example.com", clientID: "z", account: "alice")
        for key in [bob, alice, other] { try await keychainStore.save(StoreConformance.record(key, access: "at")) }
        keychain.plant(service: "swift-oauth2", account: "not json", data: Data("x".utf8))
        keychain.plant(service: "swift-oauth2", account: #"["two","parts"]"#, data: Data("x".utf8))
        keychain.plant(service: "swift-oauth2", account: #"["https://id.example.com","cli","carol"]"#, data: Data(), synchronizable: true)
        #expect(try await keychainStore.list() == [other, alice, bob])
        #expect(try await keychainStore.registeredClientIDs(issuer: "https://id.example.com") == [])
    }

    @Test func readsWhatItCannotParseAsCorruptAndLeavesItInPlaceUntilASave() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        keychain.plant(service: "swift-oauth2", account: KeychainItemStore.account(alice), data: Data("{not json".utf8))
        await #expect(throws: TokenStoreError.self) { try await keychainStore.load(alice) }
        do {
            _ = try await keychainStore.load(alice)
        } catch let error as TokenStoreError {
            #expect(error.code == .corrupt)
        }
        #expect(keychain.items.first?.data == Data("{not json".utf8), "left in place")
        try await keychainStore.save(StoreConformance.record(alice, access: "fresh"))
        #expect(try await keychainStore.load(alice)?.tokens.accessToken == "fresh", "a save replaces an unreadable item")
    }

    @Test func anItemHoldingAnotherKeyIsAConflictOnLoadAndSave() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        let mallory = TokenSessionKey(issuer: "https://evil.example", clientID: "cli", account: "alice")
        let data = try TokenDocument(session: StoreConformance.record(mallory, access: "planted")).encoded()
        keychain.plant(service: "swift-oauth2", account: KeychainItemStore.account(alice), data: data)
        #expect(try await code { try await keychainStore.load(alice) } == .conflict)
        #expect(try await code { try await keychainStore.save(StoreConformance.record(alice, access: "mine")) } == .conflict)
        #expect(keychain.items.first?.data == data, "neither read as alice's nor replaced")
    }

    @Test func aNewerIncompatibleItemIsRefusedAndKept() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        let data = Data(#"{"version": 99, "key": {"issuer": "https://id.example.com", "client_id": "cli", "account": "alice"}}"#.utf8)
        keychain.plant(service: "swift-oauth2", account: KeychainItemStore.account(alice), data: data)
        #expect(try await code { try await keychainStore.load(alice) } == .unsupportedVersion)
        #expect(try await code { try await keychainStore.save(StoreConformance.record(alice, access: "mine")) } == .unsupportedVersion)
        #expect(keychain.items.first?.data == data)
    }

    @Test func keepsTheMembersOfANewerCompatibleItem() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        var session = StoreConformance.record(alice, access: "at-1")
        let future = TokenDocument(session: session, additionalFields: ["from_the_future": "kept"])
        keychain.plant(service: "swift-oauth2", account: KeychainItemStore.account(alice), data: try future.encoded())
        session.tokens = TokenSet(accessToken: "at-2", tokenType: .bearer, issuedAt: session.updatedAt)
        try await keychainStore.save(session)
        let written = try #require(keychain.items.first)
        let json = try #require(try JSONSerialization.jsonObject(with: written.data) as? [String: Any])
        #expect(json["from_the_future"] as? String == "kept")
        #expect(try await keychainStore.load(alice)?.tokens.accessToken == "at-2")
    }

    @Test func aVersion1ItemLoadsAndIsRewrittenInTheCurrentLayout() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        let old = Data("""
            {"issuer": "https://id.example.com", "client_id": "cli", "account": "alice",
             "access_token": "old-access", "token_type": "bearer", "refresh_token": "old-refresh",
             "expires_at": 1767225600, "scope": "openid offline_access", "obtained_at": 1767222000,
             "sub": "248289761001", "client_secret": "s3cret"}
            """.utf8)
        keychain.plant(service: "swift-oauth2", account: KeychainItemStore.account(alice), data: old)
        #expect(try await keychainStore.list() == [alice])
        #expect(keychain.items.first?.data == old, "listing does not rewrite")

        let session = try #require(try await keychainStore.load(alice))
        #expect(session.tokens.accessToken == "old-access")
        #expect(session.tokens.refreshToken == "old-refresh")
        #expect(session.subject == "248289761001")
        #expect(session.additionalFields["client_secret"] == .string("s3cret"))
        let rewritten = try #require(keychain.items.first)
        let json = try #require(try JSONSerialization.jsonObject(with: rewritten.data) as? [String: Any])
        #expect(json["version"] as? Int == TokenDocument.currentVersion, "rewritten once it loaded")
        #expect(json["access_token"] == nil)
        #expect(keychain.count(.add) == 0, "the item in place is updated, not added again")
        #expect(try await keychainStore.load(alice) == session)
    }

    @Test func aFailedRewriteOfAnOldItemStillLoadsIt() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        let old = Data(#"{"issuer": "https://id.example.com", "client_id": "cli", "account": "alice", "access_token": "old", "token_type": "bearer"}"#.utf8)
        keychain.plant(service: "swift-oauth2", account: KeychainItemStore.account(alice), data: old)
        keychain.fail(.update, with: KeychainStatus.interactionNotAllowed)
        #expect(try await keychainStore.load(alice)?.tokens.accessToken == "old")
        #expect(keychain.items.first?.data == old, "left as it was")
    }

    @Test func aRegistrationKeptAsASessionItemMovesToARegistrationItem() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        let issuer = "https://id.example.com"
        let registration = RegistrationStoreConformance.registration("dyn-1", secret: "dyn-secret")
        let old = try TokenDocument(session: LegacyRegistrationRecord.session(registration, issuer: issuer)).encoded()
        keychain.plant(service: "swift-oauth2", account: #"["https://id.example.com","dyn-1",".registration"]"#, data: old)

        #expect(try await keychainStore.registeredClientIDs(issuer: issuer) == ["dyn-1"])
        #expect(keychain.item(service: "swift-oauth2", account: #"["https://id.example.com","dyn-1",".registration"]"#) == nil, "the old item is gone")
        let moved = try #require(keychain.item(service: "swift-oauth2.registration", account: #"["https://id.example.com","dyn-1"]"#))
        #expect(moved.accessibility == .afterFirstUnlockThisDeviceOnly && !moved.synchronizable)
        #expect(moved.label == "dyn-1 registration (https://id.example.com)")
        #expect(try await keychainStore.loadRegistration(issuer: issuer, clientID: "dyn-1") == registration)
    }

    @Test func aRegistrationItemHoldingAnotherRegistrationIsAConflict() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        try await keychainStore.saveRegistration(RegistrationStoreConformance.registration("a", secret: nil), issuer: "https://id.example.com")
        let data = try #require(keychain.items.first).data
        keychain.plant(service: "swift-oauth2.registration", account: #"["https://id.example.com","b"]"#, data: data)
        #expect(try await code { try await keychainStore.loadRegistration(issuer: "https://id.example.com", clientID: "b") } == .conflict)
    }

    @Test func anItemAddedByAnotherProcessBetweenUpdateAndAddIsUpdated() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        let theirs = try TokenDocument(session: StoreConformance.record(alice, access: "theirs")).encoded()
        keychain.beforeNextAdd { keychain in
            keychain.plant(service: "swift-oauth2", account: KeychainItemStore.account(alice), data: theirs)
        }
        try await keychainStore.save(StoreConformance.record(alice, access: "mine"))
        #expect(keychain.items.count == 1)
        #expect(keychain.count(.update) == 2, "update, add (errSecDuplicateItem), update")
        #expect(try await keychainStore.load(alice)?.tokens.accessToken == "mine")
    }

    @Test(arguments: [
        (KeychainStatus.missingEntitlement, TokenStoreError.Code.unavailable, "entitlement"),
        (KeychainStatus.notAvailable, .unavailable, "no Keychain"),
        (KeychainStatus.interactionNotAllowed, .backend, "locked"),
        (KeychainStatus.userCanceled, .backend, "did not allow"),
        (KeychainStatus.authFailed, .backend, "did not allow"),
        (Int32(-25_243), .backend, "refused"),
    ])
    func statusCodesBecomeTypedErrorsWithTheStatus(status: Int32, code: TokenStoreError.Code, says: String) async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        try await keychainStore.save(StoreConformance.record(alice, access: "at-1"))
        for (operation, call) in [
            (InMemoryKeychain.Operation.copy, { _ = try await keychainStore.load(alice) }),
            (.copy, { _ = try await keychainStore.list() }),
            (.update, { try await keychainStore.save(StoreConformance.record(alice, access: "at-2")) }),
            (.delete, { try await keychainStore.remove(alice) }),
            (.copy, { _ = try await keychainStore.loadRegistration(issuer: "https://id.example.com", clientID: "cli") }),
        ] as [(InMemoryKeychain.Operation, () async throws -> Void)] {
            keychain.fail(operation, with: status)
            do {
                try await call()
                Issue.record("OSStatus \(status) on \(operation) did not throw")
            } catch let error as TokenStoreError {
                #expect(error.code == code)
                #expect(error.systemError == status)
                #expect(error.message.contains(says), "\(error.message)")
                #expect(error.message.contains("OSStatus \(status)"))
                #expect(!error.message.contains("at-1") && !error.message.contains("at-2"))
            }
        }
        #expect(try await keychainStore.load(alice)?.tokens.accessToken == "at-1", "nothing was lost")
    }

    @Test func anAccessGroupTheAppMayNotUseIsUnavailable() async throws {
        let keychainStore = store(InMemoryKeychain(), accessGroup: "OTHERTEAM.stolen")
        #expect(try await code { try await keychainStore.save(StoreConformance.record(alice, access: "at")) } == .unavailable)
        #expect(try await code { _ = try await keychainStore.list() } == .unavailable)
    }

    @Test func aMissingItemIsNotAnErrorToRemove() async throws {
        let keychain = InMemoryKeychain()
        let keychainStore = store(keychain)
        try await keychainStore.remove(alice)
        try await keychainStore.removeRegistration(issuer: "https://id.example.com", clientID: "cli")
        #expect(keychain.count(.delete) == 3)
    }

    private func code(_ body: () async throws -> Any?) async throws -> TokenStoreError.Code? {
        do {
            _ = try await body()
            return nil
        } catch let error as TokenStoreError {
            return error.code
        }
    }
}
