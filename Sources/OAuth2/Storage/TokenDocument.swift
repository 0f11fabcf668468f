import Foundation

/// The JSON document in which the persistent stores keep one ``StoredTokenSession``: a
/// versioned envelope that keeps every member it does not know.
///
/// Version 2, the one this library writes:
///
/// ```json
/// {
///   "version": 2,
///   "key": { "issuer": "https://id.example.com", "client_id": "cli", "account": "default" },
///   "session": {
///     "tokens": { "access_token": "…", "token_type": "Bearer", "refresh_token": "…",
///                 "id_token": "…", "expires_at": 1767225600, "scope": ["openid"],
///                 "issued_at": 1767222000, "server_date": 1767221999, "refresh_expires_in": 86400 },
///     "subject": "248289761001", "updated_at": 1767222000
///   }
/// }
/// ```
///
/// Dates are seconds since 1970, as JSON numbers: a date reads back within a microsecond
/// of the one written (exactly, for whole seconds). Members this version does not know are kept where they
/// were found — at the top level in ``additionalFields``, in `session` in
/// ``StoredTokenSession/additionalFields``, in `tokens` in ``TokenSet/additionalFields`` — and
/// written back unchanged. One that bears the name of a member the document itself uses
/// (a server's `issued_at` among a token response's members, say) is kept inside a
/// `shadowed_members` object at the same level, and read back from there.
///
/// Version 1 is the flat layout of the 0.0.x development snapshots: one object with the
/// token-response members (`access_token`, `token_type`, `refresh_token`, `id_token`,
/// `scope` as a space-separated string, `expires_at`), `obtained_at`, `sub`,
/// `client_secret`, and the key as `issuer`, `client_id` and `account`; it has no
/// `version` member, or `"version": 1`. It is read, and written back as version 2 (its
/// `client_secret` as a member of `session` in ``StoredTokenSession/additionalFields``).
///
/// A document from a newer version is read when it declares, in `compatible_version`,
/// that a version-2 reader may read and rewrite it; it then keeps its version number and
/// all its members. Otherwise reading it throws ``TokenStoreError/Code/unsupportedVersion``.
package struct TokenDocument: Sendable, Hashable {
    /// The schema version this library writes.
    public static let currentVersion = 2

    /// The session the document holds.
    public var session: StoredTokenSession
    /// The schema version the document was read in (``currentVersion`` for a new one).
    public private(set) var version: Int
    /// The oldest schema version that may read and rewrite the document, as a newer
    /// writer declared it; `nil` when it did not.
    public private(set) var compatibleVersion: Int?
    /// Top-level members this version does not know, kept as they are.
    public var additionalFields: [String: JSONValue]

    /// `true` when the document was read in an older schema version and should be written
    /// back in the current one.
    public var isLegacy: Bool { version < Self.currentVersion }

    /// A new document in the current version.
    public init(session: StoredTokenSession, additionalFields: [String: JSONValue] = [:]) {
        self.session = session
        self.version = Self.currentVersion
        self.compatibleVersion = nil
        self.additionalFields = additionalFields
    }

    /// Reads a document of any supported version.
    ///
    /// - Throws: ``TokenStoreError`` with ``TokenStoreError/Code/corrupt`` when `data` is
    ///   not a JSON object or lacks a required member, and
    ///   ``TokenStoreError/Code/unsupportedVersion`` when a newer version wrote it in a
    ///   format this one cannot read.
    public init(data: Data) throws {
        // A member named twice is ambiguous (which one counts?) and never written by a
        // store: refused, not read one way now and another way after a rewrite.
        do {
            _ = try StrictJSON.parseObject(data)
        } catch .duplicateMember(let name) {
            throw TokenStoreError.corrupt("the member \"\(name.prefix(40))\" appears twice")
        } catch {}
        guard let object = JSONValue.parseObject(data) else {
            throw TokenStoreError.corrupt("not a JSON object")
        }
        var top = Members(object, "document")
        let version: Int
        switch top.take("version") {
        case nil: version = 1
        case .some(let value):
            guard let number = value.integerValue, number >= 1, number <= Int64(Int32.max) else {
                throw TokenStoreError.corrupt("\"version\" is not a positive integer")
            }
            version = Int(number)
        }
        if version == 1 {
            self.session = try Self.decodeVersion1(&top)
            self.version = 1
            self.compatibleVersion = nil
            self.additionalFields = [:]
            return
        }
        let compatible = try Self.compatibleVersion(of: version, readsUpTo: Self.currentVersion, what: "written") {
            top.take("compatible_version")
        }
        self.session = try Self.decodeVersion2(&top)
        self.version = version
        self.compatibleVersion = compatible
        self.additionalFields = try top.remainder()
    }

    /// The document as JSON (keys sorted): version 2, or the newer version it was read in
    /// when that version declared itself compatible.
    ///
    /// - Throws: an `EncodingError` only if a number in ``additionalFields`` is not finite.
    public func encoded() throws -> Data {
        var object = Self.unshadowed(additionalFields, reserved: Self.topLevelMembers)
        object["version"] = .integer(Int64(max(version, Self.currentVersion)))
        if version > Self.currentVersion, let compatibleVersion {
            object["compatible_version"] = .integer(Int64(compatibleVersion))
        }
        object["key"] = .object([
            "issuer": .string(session.key.issuer),
            "client_id": .string(session.key.clientID),
            "account": .string(session.key.account),
        ])
        object["session"] = .object(Self.encodeSession(session))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(object)
    }

    // MARK: - Version 2

    /// The members each level of a version-2 document uses itself.
    private static let topLevelMembers: Set<String> = ["version", "compatible_version", "key", "session"]
    private static let sessionMembers: Set<String> = ["tokens", "subject", "updated_at"]
    private static let tokenMembers: Set<String> = [
        "access_token", "token_type", "refresh_token", "id_token", "expires_at", "scope", "issued_at", "server_date",
    ]

    /// `additional`, with the members named like one of `reserved` (or like the
    /// `shadowed_members` object itself) moved into a `shadowed_members` object.
    private static func unshadowed(_ additional: [String: JSONValue], reserved: Set<String>) -> [String: JSONValue] {
        var object = additional
        var shadowed: [String: JSONValue] = [:]
        for name in additional.keys where reserved.contains(name) || name == Members.shadowedMembers {
            shadowed[name] = object.removeValue(forKey: name)
        }
        if !shadowed.isEmpty { object[Members.shadowedMembers] = .object(shadowed) }
        return object
    }

    private static func encodeSession(_ session: StoredTokenSession) -> [String: JSONValue] {
        let tokens = session.tokens
        var tokenObject = unshadowed(tokens.additionalFields, reserved: tokenMembers)
        tokenObject["access_token"] = .string(tokens.accessToken)
        tokenObject["token_type"] = .string(tokens.tokenType.rawValue)
        tokenObject["refresh_token"] = tokens.refreshToken.map(JSONValue.string)
        tokenObject["id_token"] = tokens.idToken.map(JSONValue.string)
        tokenObject["expires_at"] = tokens.expiresAt.map(date)
        tokenObject["scope"] = tokens.scopes.map { .array($0.map(JSONValue.string)) }
        tokenObject["issued_at"] = date(tokens.issuedAt)
        tokenObject["server_date"] = tokens.serverDate.map(date)

        var object = unshadowed(session.additionalFields, reserved: sessionMembers)
        object["tokens"] = .object(tokenObject)
        object["subject"] = session.subject.map(JSONValue.string)
        object["updated_at"] = date(session.updatedAt)
        return object
    }

    private static func decodeVersion2(_ top: inout Members) throws -> StoredTokenSession {
        var keyMembers = try top.object("key")
        let key = TokenSessionKey(
            issuer: try keyMembers.requiredString("issuer"),
            clientID: try keyMembers.requiredString("client_id"),
            account: try keyMembers.requiredString("account"))

        var members = try top.object("session")
        var tokenMembers = try members.object("tokens")
        let scopes: [String]?
        switch tokenMembers.take("scope") {
        case nil: scopes = nil
        case .array(let values)?:
            scopes = try values.map {
                guard let scope = $0.stringValue else { throw TokenStoreError.corrupt("\"tokens.scope\" holds a non-string") }
                return scope
            }
        case .some:
            throw TokenStoreError.corrupt("\"tokens.scope\" is not an array")
        }
        let tokens = TokenSet(
            accessToken: try tokenMembers.requiredString("access_token"),
            tokenType: try tokenMembers.tokenType("token_type", required: true),
            refreshToken: try tokenMembers.string("refresh_token"),
            idToken: try tokenMembers.string("id_token"),
            expiresAt: try tokenMembers.date("expires_at"),
            scopes: scopes,
            issuedAt: try tokenMembers.requiredDate("issued_at"),
            serverDate: try tokenMembers.date("server_date"),
            additionalFields: try tokenMembers.remainder())
        return StoredTokenSession(
            key: key,
            tokens: tokens,
            subject: try members.string("subject"),
            updatedAt: try members.requiredDate("updated_at"),
            additionalFields: try members.remainder())
    }

    // MARK: - Version 1

    private static func decodeVersion1(_ flat: inout Members) throws -> StoredTokenSession {
        let key = TokenSessionKey(
            issuer: try flat.requiredString("issuer"),
            clientID: try flat.requiredString("client_id"),
            account: try flat.string("account") ?? "default")
        let obtainedAt = try flat.date("obtained_at")
        let scopes = try flat.string("scope").map { $0.split(separator: " ").map(String.init) }
        let accessToken = try flat.requiredString("access_token")
        let tokenType = try flat.tokenType("token_type", required: false)
        let refreshToken = try flat.string("refresh_token")
        let idToken = try flat.string("id_token")
        let expiresAt = try flat.date("expires_at")
        let subject = try flat.string("sub")
        let clientSecret = try flat.string("client_secret")
        let now = Date()
        return StoredTokenSession(
            key: key,
            tokens: TokenSet(
                accessToken: accessToken, tokenType: tokenType, refreshToken: refreshToken, idToken: idToken,
                expiresAt: expiresAt, scopes: scopes, issuedAt: obtainedAt ?? now,
                // The flat layout was the token response: what it did not model belongs there.
                additionalFields: flat.rest),
            subject: subject,
            updatedAt: obtainedAt ?? now,
            additionalFields: clientSecret.map { ["client_secret": .string($0)] } ?? [:])
    }

    private static func date(_ date: Date) -> JSONValue { .number(date.timeIntervalSince1970) }
}

/// The members of one JSON object, taken one by one; what is left over is ``rest``.
/// A `null` member counts as absent.
private struct Members {
    private(set) var rest: [String: JSONValue]
    let context: String

    init(_ object: [String: JSONValue], _ context: String) {
        self.rest = object
        self.context = context
    }

    /// The object in which a writer keeps the unknown members named like known ones.
    static let shadowedMembers = "shadowed_members"

    /// What is left over, the members kept in `shadowed_members` among them.
    mutating func remainder() throws -> [String: JSONValue] {
        guard let shadowed = take(Self.shadowedMembers) else { return rest }
        guard let object = shadowed.objectValue else {
            throw TokenStoreError.corrupt("\"\(name(Self.shadowedMembers))\" is not an object")
        }
        return rest.merging(object) { _, kept in kept }
    }

    mutating func take(_ name: String) -> JSONValue? {
        guard let value = rest.removeValue(forKey: name), value != .null else { return nil }
        return value
    }

    private func name(_ member: String) -> String { context == "document" ? member : "\(context).\(member)" }

    mutating func string(_ member: String) throws -> String? {
        guard let value = take(member) else { return nil }
        guard let string = value.stringValue else { throw TokenStoreError.corrupt("\"\(name(member))\" is not a string") }
        return string
    }

    mutating func requiredString(_ member: String) throws -> String {
        guard let string = try string(member) else { throw TokenStoreError.corrupt("\"\(name(member))\" is missing") }
        return string
    }

    mutating func date(_ member: String) throws -> Date? {
        guard let value = take(member) else { return nil }
        guard let seconds = value.doubleValue, seconds.isFinite else {
            throw TokenStoreError.corrupt("\"\(name(member))\" is not a number of seconds")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    mutating func requiredDate(_ member: String) throws -> Date {
        guard let date = try date(member) else { throw TokenStoreError.corrupt("\"\(name(member))\" is missing") }
        return date
    }

    mutating func tokenType(_ member: String, required: Bool) throws -> TokenType {
        guard let raw = try string(member) else {
            if required { throw TokenStoreError.corrupt("\"\(name(member))\" is missing") }
            return .bearer
        }
        guard let type = TokenType(rawValue: raw) else {
            throw TokenStoreError.corrupt("\"\(name(member))\" is not Bearer or DPoP")
        }
        return type
    }

    mutating func object(_ member: String) throws -> Members {
        guard let value = take(member) else { throw TokenStoreError.corrupt("\"\(name(member))\" is missing") }
        guard let object = value.objectValue else { throw TokenStoreError.corrupt("\"\(name(member))\" is not an object") }
        return Members(object, name(member))
    }
}

extension TokenDocument {
    /// The `compatible_version` rule of the stores' documents: a document of a version above
    /// `current` is read only when it declares, in `compatible_version` (read by `declared`,
    /// only then), a version this one reads. Returns that declared version, or `nil` for a
    /// document of a version this one knows.
    ///
    /// - Throws: ``TokenStoreError`` `.corrupt` for a `compatible_version` that is not a
    ///   version number, `.unsupportedVersion` when none this version reads is declared.
    package static func compatibleVersion(
        of version: Int, readsUpTo current: Int, what: String, declared: () -> JSONValue?
    ) throws -> Int? {
        guard version > current else { return nil }
        var compatible: Int?
        if let value = declared() {
            guard let number = value.integerValue, number >= 1, number <= Int64(version) else {
                throw TokenStoreError.corrupt("\"compatible_version\" is not a version number")
            }
            compatible = Int(number)
        }
        guard let compatible, compatible <= current else {
            throw TokenStoreError(
                .unsupportedVersion,
                "\(what) in schema version \(version) by a newer version of swift-oauth2; this one reads up to \(current)",
                version: version)
        }
        return compatible
    }
}
