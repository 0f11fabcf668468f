import Foundation
import Testing
@testable import OAuth2
import OAuth2TestSupport

/// Registrations in a `FileTokenStore`: documents of their own kind in `registrations/`,
/// written and encrypted as session documents are.
@Suite("FileTokenStore: registrations")
struct FileTokenStoreRegistrationTests {
    static let issuer = "https://id.example.com"
    static let key = Data((0..<32).map { UInt8($0) })

    @Test func aRegistrationIsADocumentOfItsOwnKindInItsOwnDirectory() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let registration = RegistrationStoreConformance.registration("c-1", secret: "sec-ret")
            try await store.saveRegistration(registration, issuer: Self.issuer)
            let folder = directory.appendingPathComponent("registrations")
            #expect(try permissions(folder) == 0o700)
            let names = try fileNames(folder).filter { !$0.hasPrefix(".") }
            #expect(names == [FileTokenStore.registrationFileName(issuer: Self.issuer, clientID: "c-1")])
            let file = folder.appendingPathComponent(names[0])
            #expect(try permissions(file) == 0o600)
            let object = try #require(JSONValue.parseObject(try Data(contentsOf: file)))
            #expect(object["kind"] == "registration")
            #expect(object["version"] == .integer(1))
            #expect(object["key"] == .object(["issuer": .string(Self.issuer), "client_id": "c-1"]))
            #expect(object["registration"]?.objectValue?["client_secret"] == "sec-ret")
            #expect(object["registration"]?.objectValue?["registration_access_token"] == "rat-c-1")
            #expect(try await store.list().isEmpty, "no session document")
            #expect(try fileNames(directory).filter { $0.hasSuffix(".json") }.isEmpty, "nothing beside the sessions")
        }
    }

    @Test func unknownMembersOfTheDocumentAreKeptOnSave() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            var registration = RegistrationStoreConformance.registration("c-1", secret: "sec-ret")
            try await store.saveRegistration(registration, issuer: Self.issuer)
            let path = store.registrationPath(issuer: Self.issuer, clientID: "c-1")
            var object = try #require(JSONValue.parseObject(try Data(contentsOf: URL(fileURLWithPath: path))))
            object["future_member"] = .string("kept")
            try JSONEncoder().encode(object).write(to: URL(fileURLWithPath: path))
            registration.clientSecret = "rotated"
            try await store.saveRegistration(registration, issuer: Self.issuer)
            let written = try #require(JSONValue.parseObject(try Data(contentsOf: URL(fileURLWithPath: path))))
            #expect(written["future_member"] == "kept")
            #expect(try await store.loadRegistration(issuer: Self.issuer, clientID: "c-1") == registration)
        }
    }

    @Test func anEncryptedRegistrationIsBoundToItsDocument() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory, encryption: .key(Self.key))
            try await store.saveRegistration(RegistrationStoreConformance.registration("c-1", secret: "sec-ret"), issuer: Self.issuer)
            try await store.saveRegistration(RegistrationStoreConformance.registration("c-2", secret: "other"), issuer: Self.issuer)
            let first = store.registrationPath(issuer: Self.issuer, clientID: "c-1")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: first))
            #expect(!String(decoding: bytes, as: UTF8.self).contains("sec-ret"), "encrypted")
            // The first document's ciphertext over the second's does not open.
            try bytes.write(to: URL(fileURLWithPath: store.registrationPath(issuer: Self.issuer, clientID: "c-2")))
            let error = await #expect(throws: TokenStoreError.self) { _ = try await store.loadRegistration(issuer: Self.issuer, clientID: "c-2") }
            #expect(error?.code == .corrupt)
            #expect(error?.preservedPath != nil, "moved aside, not lost")
            // A plain store cannot read an encrypted one.
            let plain = try FileTokenStore(directory: directory)
            let refused = await #expect(throws: TokenStoreError.self) { _ = try await plain.loadRegistration(issuer: Self.issuer, clientID: "c-1") }
            #expect(refused?.code == .wrongKey)
        }
    }

    @Test func encryptingPlainDocumentsCoversRegistrations() async throws {
        try await withTemporaryDirectory { directory in
            let registration = RegistrationStoreConformance.registration("c-1", secret: "sec-ret")
            try await FileTokenStore(directory: directory).saveRegistration(registration, issuer: Self.issuer)
            let store = try FileTokenStore(directory: directory, encryption: .key(Self.key))
            let refused = await #expect(throws: TokenStoreError.self) { _ = try await store.loadRegistration(issuer: Self.issuer, clientID: "c-1") }
            #expect(refused?.code == .unencrypted)
            #expect(try await store.encryptPlainDocuments() == 1)
            #expect(try await store.loadRegistration(issuer: Self.issuer, clientID: "c-1") == registration)
        }
    }

    @Test func anOldRecordMovesOnFirstLoadAndLeavesTheSessionsAlone() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory, encryption: .key(Self.key))
            let registration = RegistrationStoreConformance.registration("c-1", secret: "sec-ret")
            let old = LegacyRegistrationRecord.session(registration, issuer: Self.issuer)
            let session = StoreConformance.record(TokenSessionKey(issuer: Self.issuer, clientID: "c-1", account: "alice"), access: "at")
            try await store.save(old)
            try await store.save(session)
            #expect(try await store.list() == [old.key, session.key])
            #expect(try await store.loadRegistration(issuer: Self.issuer, clientID: "c-1") == registration)
            #expect(try await store.list() == [session.key], "the old record is gone; the session stays")
            #expect(!FileManager.default.fileExists(atPath: store.fileURL(for: old.key).path))
            // A second process (another store over the same directory) finds the moved one.
            let other = try FileTokenStore(directory: directory, encryption: .key(Self.key))
            #expect(try await other.loadRegistration(issuer: Self.issuer, clientID: "c-1") == registration)
        }
    }

    @Test func aCorruptOldRecordIsAnErrorAndStaysInPlace() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory)
            let key = TokenSessionKey(issuer: Self.issuer, clientID: "c-1", account: ".registration")
            try await store.save(StoredTokenSession(key: key, tokens: TokenSet(accessToken: "")))
            let error = await #expect(throws: TokenStoreError.self) { _ = try await store.loadRegistration(issuer: Self.issuer, clientID: "c-1") }
            #expect(error?.code == .corrupt)
            #expect(try await store.load(key) != nil, "not removed")
        }
    }
}
