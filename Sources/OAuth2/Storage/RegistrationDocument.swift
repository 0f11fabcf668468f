import Foundation

/// The JSON document in which the persistent stores keep one client registration (a
/// ``RegistrationStore`` record): a versioned document of its own kind, beside the token
/// documents of sessions (``TokenDocument``), that keeps every member it does not know.
///
/// Version 1, the one this library writes:
///
/// ```json
/// {
///   "kind": "registration",
///   "version": 1,
///   "key": { "issuer": "https://id.example.com", "client_id": "c-1" },
///   "registration": { "client_id": "c-1", "client_secret": "…", "registration_access_token": "…",
///                     "registration_client_uri": "https://id.example.com/register/c-1",
///                     "client_id_issued_at": 1767222000, "redirect_uris": ["http://127.0.0.1:8400/callback"], … },
///   "updated_at": 1767222000
/// }
/// ```
///
/// `registration` holds the members of the registration response (RFC 7591 §3.2.1): the
/// metadata the server recorded, the client secret and the registration access token.
/// Members this version does not know are kept: at the top level in ``additionalFields``,
/// inside `registration` among the metadata's ``RegistrationMetadata/additionalMembers``.
///
/// A document from a newer version is read when it declares, in `compatible_version`, that
/// a version-1 reader may read and rewrite it. Otherwise reading it throws
/// ``TokenStoreError/Code/unsupportedVersion``.
package struct RegistrationDocument: Sendable, Hashable {
    /// The value of the `kind` member, which tells a registration from a session document.
    package static let kind = "registration"
    /// The schema version this library writes.
    package static let currentVersion = 1

    /// The issuer the client was registered with.
    package var issuer: String
    /// The registration.
    package var registration: ClientRegistration
    /// When the document was last written.
    package var updatedAt: Date
    /// The schema version the document was read in (``currentVersion`` for a new one).
    package private(set) var version: Int
    /// The oldest schema version that may read and rewrite the document, as a newer writer
    /// declared it; `nil` when it did not.
    package private(set) var compatibleVersion: Int?
    /// Top-level members this version does not know, kept as they are.
    package var additionalFields: [String: JSONValue]

    /// A new document in the current version.
    package init(issuer: String, registration: ClientRegistration, updatedAt: Date = Date()) {
        self.issuer = issuer
        self.registration = registration
        self.updatedAt = updatedAt
        self.version = Self.currentVersion
        self.compatibleVersion = nil
        self.additionalFields = [:]
    }

    /// The issuer and client id the document is stored under.
    package var clientID: String { registration.clientID }

    /// `true` when the document was read in an older schema version (never, yet).
    package var isLegacy: Bool { version < Self.currentVersion }

    private static let topLevelMembers: Set<String> = ["kind", "version", "compatible_version", "key", "registration", "updated_at"]

    /// Reads a document.
    ///
    /// - Throws: ``TokenStoreError`` with ``TokenStoreError/Code/corrupt`` when `data` is not
    ///   a registration document or a member is missing or of the wrong type, and
    ///   ``TokenStoreError/Code/unsupportedVersion`` when a newer version wrote it in a format
    ///   this one cannot read.
    package init(data: Data) throws {
        do {
            _ = try StrictJSON.parseObject(data)
        } catch .duplicateMember(let name) {
            throw TokenStoreError.corrupt("the member \"\(name.prefix(40))\" appears twice")
        } catch {}
        guard let object = JSONValue.parseObject(data) else { throw TokenStoreError.corrupt("not a JSON object") }
        guard object["kind"]?.stringValue == Self.kind else { throw TokenStoreError.corrupt("not a registration document") }
        guard let number = object["version"]?.integerValue, number >= 1, number <= Int64(Int32.max) else {
            throw TokenStoreError.corrupt("\"version\" is not a positive integer")
        }
        let version = Int(number)
        let compatible = try TokenDocument.compatibleVersion(of: version, readsUpTo: Self.currentVersion, what: "a registration written") {
            object["compatible_version"].flatMap { $0 == .null ? nil : $0 }
        }
        guard let key = object["key"]?.objectValue, let issuer = key["issuer"]?.stringValue,
            let clientID = key["client_id"]?.stringValue
        else { throw TokenStoreError.corrupt("\"key\" lacks issuer or client_id") }
        guard let members = object["registration"]?.objectValue else {
            throw TokenStoreError.corrupt("\"registration\" is missing or not an object")
        }
        guard let seconds = object["updated_at"]?.doubleValue, seconds.isFinite else {
            throw TokenStoreError.corrupt("\"updated_at\" is not a number of seconds")
        }
        let registration: ClientRegistration
        do {
            registration = try ClientRegistration(storedMembers: members)
        } catch {
            throw TokenStoreError.corrupt("\"registration\" is not a readable registration: \(error.message ?? error.code.rawValue)")
        }
        guard registration.clientID == clientID else {
            throw TokenStoreError.corrupt("\"registration.client_id\" is not the key's client id")
        }
        self.issuer = issuer
        self.registration = registration
        self.updatedAt = Date(timeIntervalSince1970: seconds)
        self.version = version
        self.compatibleVersion = compatible
        self.additionalFields = object.filter { !Self.topLevelMembers.contains($0.key) }
    }

    /// Reads the document a store keeps for `clientID` at `issuer`.
    ///
    /// - Parameter record: what held it, for the message (`"the Keychain item"`).
    /// - Throws: as ``init(data:)``, and ``TokenStoreError/Code/conflict`` when the document
    ///   holds another registration.
    package init(data: Data, storedFor clientID: String, at issuer: String, record: String) throws {
        try self.init(data: data)
        guard self.issuer == issuer, self.clientID == clientID else {
            throw TokenStoreError(.conflict, "\(record) of the registration of \(clientID) holds another one")
        }
    }

    /// The document to write for `registration` where `existing` (the bytes in place, if
    /// any) is: `existing` with its registration replaced and the members this version does
    /// not know kept, or a new document when there is none or it is unreadable.
    ///
    /// - Throws: ``TokenStoreError/Code/unsupportedVersion`` when `existing` comes from a
    ///   newer, incompatible version.
    package static func updating(
        _ existing: Data?, with registration: ClientRegistration, issuer: String, at date: Date = Date()
    ) throws -> RegistrationDocument {
        if let existing {
            do {
                return try RegistrationDocument(data: existing).replacing(registration, at: date)
            } catch let error as TokenStoreError where error.code == .corrupt {
                // Unreadable: replaced by the new registration.
            }
        }
        return RegistrationDocument(issuer: issuer, registration: registration, updatedAt: date)
    }

    /// This document with `registration` in place of its own, written at `date`.
    package func replacing(_ registration: ClientRegistration, at date: Date) -> RegistrationDocument {
        var document = self
        document.registration = registration
        document.updatedAt = date
        return document
    }

    /// The document as JSON (keys sorted): version 1, or the newer version it was read in
    /// when that version declared itself compatible.
    ///
    /// - Throws: an `EncodingError` only if a number among the members is not finite.
    package func encoded() throws -> Data {
        var object = additionalFields
        object["kind"] = .string(Self.kind)
        object["version"] = .integer(Int64(max(version, Self.currentVersion)))
        if version > Self.currentVersion, let compatibleVersion {
            object["compatible_version"] = .integer(Int64(compatibleVersion))
        }
        object["key"] = .object(["issuer": .string(issuer), "client_id": .string(registration.clientID)])
        object["registration"] = .object(registration.storedMembers)
        object["updated_at"] = .number(updatedAt.timeIntervalSince1970)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(object)
    }
}

extension ClientRegistration {
    /// Every member of the registration as a store keeps it: the registration response's
    /// members (RFC 7591 §3.2.1), the client secret and the registration access token
    /// among them. Only for stores: never logged, never printed.
    package var storedMembers: [String: JSONValue] {
        var members = metadata.members
        members["client_id"] = .string(clientID)
        members["client_secret"] = clientSecret.map(JSONValue.string)
        members["registration_access_token"] = registrationAccessToken.map(JSONValue.string)
        members["registration_client_uri"] = registrationClientURI.map { .string($0.absoluteString) }
        members["client_id_issued_at"] = clientIDIssuedAt.map { .number($0.timeIntervalSince1970) }
        members["client_secret_expires_at"] = clientSecretExpiresAt.map { .number($0.timeIntervalSince1970) }
        return members
    }

    /// Reads a registration back from ``storedMembers``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` for a missing or empty `client_id` or a
    ///   member of the wrong type.
    package init(storedMembers members: [String: JSONValue]) throws(OAuth2Error) {
        let reader = RegistrationMetadata.Reader(members: members)
        guard let clientID = try reader.string("client_id"), !clientID.isEmpty else {
            throw .invalidResponse("The stored registration has no client_id.")
        }
        self.init(clientID: clientID, metadata: try RegistrationMetadata.parse(members))
        clientSecret = try reader.string("client_secret")
        registrationAccessToken = try reader.string("registration_access_token")
        registrationClientURI = try reader.url("registration_client_uri")
        clientIDIssuedAt = try reader.date("client_id_issued_at")
        clientSecretExpiresAt = try reader.date("client_secret_expires_at")
    }
}
