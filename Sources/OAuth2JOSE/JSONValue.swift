import Foundation

/// A JSON value, used wherever a message may carry members the library does not model:
/// unknown metadata fields, extra token-response members, introspection claims.
public enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `null`
    case null
    /// `true` or `false`
    case bool(Bool)
    /// A whole number that fits in 64 bits. Decoding gives this for every number whose value,
    /// as read, is whole — `3600`, `3600.0`, `1e3` — so what is decoded, encoded and decoded
    /// again is the same value.
    case integer(Int64)
    /// Any other number: one with a fraction, or one too large for 64 bits.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            // A fraction the double cannot hold (10000000215810202.2154926) leaves a whole
            // number, which the encoder writes without one: read it as the integer it will be.
            if let whole = Int64(exactly: value) { self = .integer(whole) } else { self = .number(value) }
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as JSON.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        default: return nil
        }
    }

    /// The number as an `Int64`, if this is an integral number.
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): return value
        case .number(let value) where value.rounded() == value && abs(value) < 9.0e18: return Int64(value)
        default: return nil
        }
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Compact JSON text of the value.
    public var description: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Parses a JSON object, or returns `nil` when `data` is not one.
    package static func parseObject(_ data: Data) -> [String: JSONValue]? {
        guard let first = data.first(where: { !" \t\r\n".utf8.contains($0) }), first == UInt8(ascii: "{")
        else { return nil }
        // StrictJSON first, for speed (BENCHMARKS.md). What it refuses (duplicate members, deep
        // nesting, invalid UTF-8) and numbers with a fraction or an exponent (which JSONDecoder
        // reads as an integer when they are integral) still go to JSONDecoder, so the result
        // does not depend on which parser read it.
        if let object = try? StrictJSON.parseObject(data), !object.values.contains(where: \.hasFractionalNumber) {
            return object
        }
        return try? JSONDecoder().decode([String: JSONValue].self, from: data)
    }

    /// `true` when this is, or holds, a ``number(_:)``.
    private var hasFractionalNumber: Bool {
        switch self {
        case .number: return true
        case .array(let elements): return elements.contains(where: \.hasFractionalNumber)
        case .object(let members): return members.values.contains(where: \.hasFractionalNumber)
        default: return false
        }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// A string member; numbers are accepted and rendered as text (lenient parsing).
    package func string(_ key: String) -> String? {
        switch self[key] {
        case .string(let value): return value
        case .integer(let value): return String(value)
        default: return nil
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}
