import Foundation
import Testing
@testable import OAuth2
import OAuth2TestSupport

@Suite("RegistrationDocument: the stored form of a registration")
struct RegistrationDocumentTests {
    static let registration = RegistrationStoreConformance.registration("c-1", secret: "sec-ret")

    static func object(_ document: RegistrationDocument) throws -> [String: JSONValue] {
        try #require(JSONValue.parseObject(try document.encoded()))
    }

    static func data(_ object: [String: JSONValue]) throws -> Data { try JSONEncoder().encode(object) }

    @Test func roundTripsEveryMember() throws {
        let document = RegistrationDocument(issuer: "https://id.example.com", registration: Self.registration, updatedAt: Date(timeIntervalSince1970: 1_767_222_000))
        let read = try RegistrationDocument(data: try document.encoded())
        #expect(read == document)
        #expect(read.registration.metadata.additionalMembers["server_own"] == .object(["n": .integer(1)]), "unknown registration members are kept")
    }

    @Test func unknownTopLevelMembersAreKept() throws {
        var object = try Self.object(RegistrationDocument(issuer: "https://id.example.com", registration: Self.registration))
        object["later"] = .array(["x"])
        let read = try RegistrationDocument(data: try Self.data(object))
        #expect(read.additionalFields == ["later": .array(["x"])])
        #expect(try Self.object(read)["later"] == .array(["x"]))
    }

    @Test func aTokenDocumentIsNotARegistrationNorTheOtherWayRound() throws {
        let session = StoredTokenSession(key: TokenSessionKey(issuer: "i", clientID: "c"), tokens: TokenSet(accessToken: "a"))
        let error = #expect(throws: TokenStoreError.self) { _ = try RegistrationDocument(data: try TokenDocument(session: session).encoded()) }
        #expect(error?.code == .corrupt)
        let other = #expect(throws: TokenStoreError.self) {
            _ = try TokenDocument(data: try RegistrationDocument(issuer: "i", registration: Self.registration).encoded())
        }
        #expect(other?.code == .corrupt)
    }

    @Test func aNewerVersionIsReadOnlyWhenItSaysItIsCompatible() throws {
        var object = try Self.object(RegistrationDocument(issuer: "i", registration: Self.registration))
        object["version"] = .integer(3)
        let refused = #expect(throws: TokenStoreError.self) { _ = try RegistrationDocument(data: try Self.data(object)) }
        #expect(refused?.code == .unsupportedVersion)
        object["compatible_version"] = .integer(1)
        let read = try RegistrationDocument(data: try Self.data(object))
        #expect(read.version == 3)
        let written = try Self.object(read)
        #expect(written["version"] == .integer(3))
        #expect(written["compatible_version"] == .integer(1))
    }

    @Test func malformedDocumentsAreCorrupt() throws {
        let good = try Self.object(RegistrationDocument(issuer: "i", registration: Self.registration))
        var cases: [[String: JSONValue]] = []
        for member in ["kind", "version", "key", "registration", "updated_at"] {
            var object = good
            object[member] = nil
            cases.append(object)
        }
        var otherClient = good
        otherClient["key"] = .object(["issuer": "i", "client_id": "c-2"])
        cases.append(otherClient)
        var badMember = good
        badMember["registration"] = .object(["client_id": "c-1", "redirect_uris": "not a list"])
        cases.append(badMember)
        for object in cases {
            let error = #expect(throws: TokenStoreError.self) { _ = try RegistrationDocument(data: try Self.data(object)) }
            #expect(error?.code == .corrupt)
        }
        let duplicate = Data(#"{"kind":"registration","kind":"registration"}"#.utf8)
        #expect(throws: TokenStoreError.self) { _ = try RegistrationDocument(data: duplicate) }
    }

    @Test func errorsNeverCarryTheSecrets() throws {
        var object = try Self.object(RegistrationDocument(issuer: "i", registration: Self.registration))
        var members = try #require(object["registration"]?.objectValue)
        members["client_secret"] = .integer(5)
        object["registration"] = .object(members)
        let error = #expect(throws: TokenStoreError.self) { _ = try RegistrationDocument(data: try Self.data(object)) }
        #expect(!"\(String(describing: error))".contains("rat-c-1"))
    }

    @Test func aDocumentStoredForAnotherRegistrationIsAConflict() throws {
        let data = try RegistrationDocument(issuer: "https://id.example.com", registration: Self.registration).encoded()
        let read = try RegistrationDocument(data: data, storedFor: "c-1", at: "https://id.example.com", record: "the item")
        #expect(read.clientID == "c-1")
        for (clientID, issuer) in [("c-2", "https://id.example.com"), ("c-1", "https://other.example.com")] {
            let error = #expect(throws: TokenStoreError.self) {
                _ = try RegistrationDocument(data: data, storedFor: clientID, at: issuer, record: "the item")
            }
            #expect(error?.code == .conflict)
            #expect(error?.message.hasPrefix("the item of the registration of \(clientID)") == true)
        }
    }

    @Test func updatingKeepsTheUnknownMembersAndReplacesAnUnreadableDocument() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var object = try Self.object(RegistrationDocument(issuer: "i", registration: Self.registration, updatedAt: Date(timeIntervalSince1970: 1)))
        object["later"] = .string("kept")
        let renewed = RegistrationStoreConformance.registration("c-1", secret: "new-secret")
        let updated = try RegistrationDocument.updating(try Self.data(object), with: renewed, issuer: "i", at: now)
        #expect(updated.registration == renewed)
        #expect(updated.updatedAt == now)
        #expect(updated.additionalFields == ["later": .string("kept")])

        for existing in [nil, Data("not json".utf8)] {
            let fresh = try RegistrationDocument.updating(existing, with: renewed, issuer: "i", at: now)
            #expect(fresh == RegistrationDocument(issuer: "i", registration: renewed, updatedAt: now))
        }

        object["version"] = .integer(9)  // a newer, incompatible writer: refused, not overwritten
        let error = #expect(throws: TokenStoreError.self) {
            _ = try RegistrationDocument.updating(try Self.data(object), with: renewed, issuer: "i", at: now)
        }
        #expect(error?.code == .unsupportedVersion)
    }
}
