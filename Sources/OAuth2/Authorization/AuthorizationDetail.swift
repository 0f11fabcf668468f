import Foundation

/// A type of your own for one kind of `authorization_details` entry (RFC 9396 §2): a
/// `Codable` value whose members are the entry's, and the `type` it is sent under.
///
/// ```swift
/// struct PaymentInitiation: AuthorizationDetailType {
///     static let type = "payment_initiation"
///     var locations: [String]
///     var actions: [String]
///     var instructedAmount: Amount
/// }
/// let options = AuthorizationOptions(authorizationDetails: [try AuthorizationDetail(PaymentInitiation(...))])
/// let granted: [PaymentInitiation] = try tokens.authorizationDetails(of: PaymentInitiation.self)
/// ```
///
/// The value needs no `type` member of its own: ``AuthorizationDetail/init(_:)`` adds it, and
/// decoding ignores it (a `type` member it has must hold ``type``).
public protocol AuthorizationDetailType: Codable, Sendable {
    /// The `type` of the entries this type encodes and decodes.
    static var type: String { get }
}

/// One entry of `authorization_details` (Rich Authorization Requests, RFC 9396 §2): a JSON
/// object with a `type` and the members that type defines.
///
/// Build one from a type of your own (``AuthorizationDetailType``) or from its members
/// (the common ones of §2.2 have parameters of their own); read one back with
/// ``decode(as:)``, or its members from ``members``.
public struct AuthorizationDetail: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `type`: which kind of authorization this entry asks for or grants.
    public var type: String
    /// Every member but `type`: the common ones (`locations`, `actions`, `datatypes`,
    /// `identifier`, `privileges`) and the type's own.
    public var members: [String: JSONValue]

    /// An entry from its members; the common ones of RFC 9396 §2.2 are sent only when given.
    ///
    /// - Parameters:
    ///   - type: the entry's `type`.
    ///   - locations: `locations`: where the resources are (URIs).
    ///   - actions: `actions`: what may be done.
    ///   - datatypes: `datatypes`: which kinds of data may be reached.
    ///   - identifier: `identifier`: one resource.
    ///   - privileges: `privileges`: the levels of privilege.
    ///   - members: the type's other members; these names win over the parameters above.
    public init(
        type: String, locations: [String]? = nil, actions: [String]? = nil, datatypes: [String]? = nil, identifier: String? = nil,
        privileges: [String]? = nil, members: [String: JSONValue] = [:]
    ) {
        var all: [String: JSONValue] = [:]
        if let locations { all["locations"] = .array(locations.map(JSONValue.string)) }
        if let actions { all["actions"] = .array(actions.map(JSONValue.string)) }
        if let datatypes { all["datatypes"] = .array(datatypes.map(JSONValue.string)) }
        if let identifier { all["identifier"] = .string(identifier) }
        if let privileges { all["privileges"] = .array(privileges.map(JSONValue.string)) }
        all.merge(members.filter { $0.key != "type" }) { _, new in new }
        self.type = type
        self.members = all
    }

    /// An entry holding `value`'s members under its type's ``AuthorizationDetailType/type``.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when `value` does not encode to a
    ///   JSON object, or has a `type` member other than its type's.
    public init<Value: AuthorizationDetailType>(_ value: Value) throws(OAuth2Error) {
        let json: JSONValue
        do {
            json = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The authorization detail \(Value.type) cannot be encoded.", underlyingError: error)
        }
        guard var object = json.objectValue else {
            throw .client(.invalidConfiguration, "The authorization detail \(Value.type) does not encode to a JSON object.")
        }
        if let own = object.removeValue(forKey: "type"), own != .string(Value.type) {
            throw .client(.invalidConfiguration, "The authorization detail \(Value.type) encodes another type member.")
        }
        self.init(type: Value.type, members: object)
    }

    /// An entry from a JSON object with a string `type`; `nil` for anything else.
    public init?(json: JSONValue) {
        guard var object = json.objectValue, let type = object.removeValue(forKey: "type")?.stringValue, !type.isEmpty else { return nil }
        self.type = type
        members = object
    }

    /// `locations`, when it is an array of strings.
    public var locations: [String]? { strings("locations") }
    /// `actions`, when it is an array of strings.
    public var actions: [String]? { strings("actions") }
    /// `datatypes`, when it is an array of strings.
    public var datatypes: [String]? { strings("datatypes") }
    /// `identifier`, when it is a string.
    public var identifier: String? { members["identifier"]?.stringValue }
    /// `privileges`, when it is an array of strings.
    public var privileges: [String]? { strings("privileges") }

    /// The entry as one JSON object, `type` included.
    public var json: JSONValue {
        var object = members
        object["type"] = .string(type)
        return .object(object)
    }

    /// The entry read as a type of your own.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when the entry is of another type or
    ///   its members do not decode as `Value`.
    public func decode<Value: AuthorizationDetailType>(as _: Value.Type = Value.self) throws(OAuth2Error) -> Value {
        guard type == Value.type else {
            throw .invalidResponse("The authorization detail is of type \(Redactor.sanitizeServerText(type, limit: 60)), not \(Value.type).")
        }
        do {
            return try JSONDecoder().decode(Value.self, from: JSONEncoder().encode(json))
        } catch {
            throw OAuth2Error(.invalidResponse, source: .client, message: "The authorization detail \(Value.type) does not decode: \(Redactor.sanitizeServerText(String(describing: error), limit: 200))", underlyingError: error)
        }
    }

    /// Decodes a JSON object with a string `type`.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        guard let detail = AuthorizationDetail(json: value) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "An authorization detail is an object with a string type."))
        }
        self = detail
    }

    /// Encodes the entry as one JSON object, `type` included.
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

    /// The type and the names of its members (values may be personal data: not shown).
    public var description: String {
        "AuthorizationDetail(\(type): \(members.keys.sorted().joined(separator: ", ")))"
    }

    private func strings(_ name: String) -> [String]? {
        guard let values = members[name]?.arrayValue else { return nil }
        let strings = values.compactMap(\.stringValue)
        return strings.count == values.count ? strings : nil
    }
}

extension AuthorizationDetail {
    /// The `authorization_details` parameter's value: the entries as one JSON array
    /// (RFC 9396 §2), keys sorted.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when a member cannot be written
    ///   as JSON (a number that is not finite).
    public static func parameter(_ details: [AuthorizationDetail]) throws(OAuth2Error) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(details), as: UTF8.self)
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The authorization details cannot be written as JSON.", underlyingError: error)
        }
    }

    /// The entries of an `authorization_details` member: a JSON array of objects (or, from a
    /// lenient reading, a string holding one); `nil` when absent or malformed.
    static func entries(of value: JSONValue?) -> [AuthorizationDetail]? {
        var value = value
        if let text = value?.stringValue { value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }
        guard let array = value?.arrayValue else { return nil }
        let entries = array.compactMap(AuthorizationDetail.init(json:))
        return entries.count == array.count ? entries : nil
    }
}

extension Array where Element == AuthorizationDetail {
    /// The entries of type `Value`, decoded.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidResponse`` when one of them does not decode.
    public func decoded<Value: AuthorizationDetailType>(as _: Value.Type) throws(OAuth2Error) -> [Value] {
        var values: [Value] = []
        for entry in self where entry.type == Value.type { values.append(try entry.decode(as: Value.self)) }
        return values
    }
}

// MARK: - Matching what was granted against what is required

extension AuthorizationDetail {
    /// Whether this (granted) entry covers `required`: the same `type`, and each member of
    /// `required` present here and covered — equal, or for an array every required element
    /// covered by one of these, or for an object each required member covered by this one's.
    /// A required entry with no members asks for the type only.
    ///
    /// ```swift
    /// let granted = AuthorizationDetail(type: "account_information", actions: ["list_accounts", "read_balances"])
    /// granted.covers(AuthorizationDetail(type: "account_information", actions: ["read_balances"]))  // true
    /// ```
    public func covers(_ required: AuthorizationDetail) -> Bool {
        type == required.type && required.members.allSatisfy { name, value in
            members[name].map { Self.value($0, covers: value) } ?? false
        }
    }

    static func value(_ granted: JSONValue, covers required: JSONValue) -> Bool {
        switch (granted, required) {
        case (.array(let granted), .array(let required)):
            return required.allSatisfy { element in granted.contains { value($0, covers: element) } }
        case (.object(let granted), .object(let required)):
            return required.allSatisfy { name, element in granted[name].map { value($0, covers: element) } ?? false }
        case (.integer, .number), (.number, .integer):
            return granted.doubleValue == required.doubleValue
        default:
            return granted == required
        }
    }
}

extension Array where Element == AuthorizationDetail {
    /// Whether these (granted) entries cover every entry of `required`, each by one of them
    /// (see ``AuthorizationDetail/covers(_:)``).
    public func covers(_ required: [AuthorizationDetail]) -> Bool {
        required.allSatisfy { needed in contains { $0.covers(needed) } }
    }
}
