#if Postgres
import Crypto
import Foundation
@testable import OAuth2Postgres
import Testing

@Suite("PostgresTokenStore.EncryptionKeys: keys written as text")
struct KeyRingTests {
    static let first = Data((0..<32).map { UInt8($0) })
    static let second = Data((0..<32).map { UInt8(255 - $0) })

    @Test("Comma-separated id:base64 entries, current first; standard and URL-safe base64, padded or not")
    func parsing() throws {
        let urlSafe = Self.second.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let ring = try PostgresTokenStore.EncryptionKeys(parsing: " 2026-11:\(Self.first.base64EncodedString()), 2026-10:\(urlSafe)\n")
        #expect(ring.current.id == "2026-11")
        #expect(ring.previous.map(\.id) == ["2026-10"])
        #expect(ring.key("2026-11") == SymmetricKey(data: Self.first))
        #expect(ring.key("2026-10") == SymmetricKey(data: Self.second))
        // An id may hold colons: the key is after the last one.
        #expect(try PostgresTokenStore.EncryptionKeys(parsing: "kms:v3:\(Self.first.base64EncodedString())").current.id == "kms:v3")
    }

    @Test("Malformed rings are refused without repeating a key", arguments: [
        "", "no-colon", ":\(first.base64EncodedString())", "k1:not base64!", "k1:\(Data(count: 16).base64EncodedString())",
        "k1:\(first.base64EncodedString()),k1:\(second.base64EncodedString())", "k1:\(first.base64EncodedString()),",
    ])
    func malformed(_ text: String) {
        let error = #expect(throws: PostgresTokenStoreError.self) { try PostgresTokenStore.EncryptionKeys(parsing: text) }
        #expect(error?.code == .invalidConfiguration)
        for secret in [Self.first.base64EncodedString(), Self.second.base64EncodedString()] {
            #expect(error.map { !"\($0)".contains(secret) } == true)
        }
    }
}
#endif
