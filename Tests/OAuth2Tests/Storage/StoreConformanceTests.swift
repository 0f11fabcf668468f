import Foundation
import Testing
@testable import OAuth2
import OAuth2TestSupport

/// The shared store suite (`StoreConformance`) against the stores of this module; the
/// keyring and PostgreSQL stores run it in their own test targets, against the real thing.
@Suite("Store conformance: memory and file, sessions and registrations")
struct StoreConformanceTests {
    @Test func memoryStore() async {
        let failures = await StoreConformance.run(MemoryTokenStore())
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test func fileStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let failures = await StoreConformance.run(try FileTokenStore(directory: directory))
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test func encryptedFileStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileTokenStore(directory: directory, encryption: .key(Data((0..<32).map { UInt8($0) })))
        let failures = await StoreConformance.run(store)
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test func memoryRegistrationStore() async {
        let failures = await RegistrationStoreConformance.run(MemoryTokenStore())
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test func fileRegistrationStore() async throws {
        try await withTemporaryDirectory { directory in
            let failures = await RegistrationStoreConformance.run(try FileTokenStore(directory: directory))
            #expect(failures.isEmpty, "\(failures)")
        }
    }

    @Test func encryptedFileRegistrationStore() async throws {
        try await withTemporaryDirectory { directory in
            let store = try FileTokenStore(directory: directory, encryption: .key(Data((0..<32).map { UInt8($0) })))
            let failures = await RegistrationStoreConformance.run(store)
            #expect(failures.isEmpty, "\(failures)")
        }
    }
}
