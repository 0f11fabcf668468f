import Foundation

extension MemoryTokenStore: RegistrationStore {
    /// The registration of `clientID` at `issuer`, or `nil`. A record of an earlier version
    /// (a session under the account `.registration`) becomes a registration record here.
    ///
    /// - Throws: ``TokenStoreError/Code/corrupt`` for an old record that holds no readable
    ///   registration.
    public func loadRegistration(issuer: String, clientID: String) throws -> ClientRegistration? {
        if let registration = registrations[issuer]?[clientID] { return registration }
        let legacyKey = LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID)
        guard let record = load(legacyKey) else { return nil }
        let registration = try LegacyRegistrationRecord.registration(from: record)
        registrations[issuer, default: [:]][clientID] = registration
        remove(legacyKey)
        return registration
    }

    /// Keeps `registration`.
    public func saveRegistration(_ registration: ClientRegistration, issuer: String) {
        registrations[issuer, default: [:]][registration.clientID] = registration
    }

    /// Forgets the registration of `clientID` at `issuer` (and a record of an earlier version).
    public func removeRegistration(issuer: String, clientID: String) {
        registrations[issuer]?[clientID] = nil
        if registrations[issuer]?.isEmpty == true { registrations[issuer] = nil }
        remove(LegacyRegistrationRecord.key(issuer: issuer, clientID: clientID))
    }

    /// The client ids with a registration at `issuer`, sorted; records of an earlier
    /// version among them become registration records.
    ///
    /// - Throws: ``TokenStoreError/Code/corrupt`` for an old record that holds no readable
    ///   registration.
    public func registeredClientIDs(issuer: String) throws -> [String] {
        for key in list() where key.issuer == issuer && key.account == LegacyRegistrationRecord.account {
            _ = try loadRegistration(issuer: issuer, clientID: key.clientID)
        }
        return (registrations[issuer]?.keys).map { $0.sorted() } ?? []
    }
}
