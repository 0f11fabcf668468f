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
}
