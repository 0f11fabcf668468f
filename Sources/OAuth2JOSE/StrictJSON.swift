import Foundation

/// A strict JSON parser (RFC 8259) for security-relevant documents: JOSE headers, JWT
/// claim sets and JWK sets.
///
/// Written by hand because Foundation's parsers silently keep one of two members with the
/// same name, which RFC 7515 §5.2 and RFC 7519 §4 forbid relying on (two `alg` or two `aud`
/// members must not be read differently by two parties). It also bounds nesting depth,
/// refuses invalid UTF-8, lone surrogates and trailing data, and is faster than
/// `JSONDecoder` on the small documents it reads.
package enum StrictJSON {
    package enum Failure: Error, Equatable {
        case syntax(offset: Int)
        case duplicateMember(String)
        case tooDeep
    }

    package static let maximumDepth = 32

    /// Parses one JSON value that must span all of `bytes` (surrounding whitespace aside).
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> JSONValue {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw .syntax(offset: parser.index) }
        return value
    }

    /// Parses a JSON object.
    package static func parseObject(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> [String: JSONValue] {
        guard case .object(let object) = try parse(bytes) else { throw .syntax(offset: 0) }
        return object
    }

    package static func parseObject(_ data: some ContiguousBytes) throws(Failure) -> [String: JSONValue] {
        let result: Result<[String: JSONValue], Failure> = data.withUnsafeBytes { bytes in
            do throws(Failure) { return .success(try parseObject(bytes)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The largest number of members ``scanObject(_:select:found:)`` reads in one pass;
    /// an object with more is left to ``parseObject(_:)``.
    package static let maximumScannedMembers = 64

    /// Checks that `bytes` is one JSON object exactly as ``parseObject(_:)`` would (the same
    /// grammar, depth bound and duplicate-name rule, the same failure for the same input),
    /// without building it: only the top-level members `select` gives a slot to are
    /// decoded and handed to `found`; the others are validated and skipped.
    ///
    /// Duplicate names are found by comparing the names' bytes, which is String equality
    /// only for plain ASCII names without escapes. So the pass gives up, returning `false`,
    /// when the document is not an object, when a top-level name has an escape or a
    /// non-ASCII byte, or when it has more than ``maximumScannedMembers`` members; the
    /// caller then parses the document with ``parseObject(_:)``, which decides. `found` may
    /// have been called before a failure or a `false`; such values must be discarded.
    package static func scanObject(
        _ bytes: UnsafeRawBufferPointer, select: (UnsafeRawBufferPointer) -> Int?, found: (Int, consuming JSONValue) -> Void
    ) throws(Failure) -> Bool {
        let result: Result<Bool, Failure> = withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: maximumScannedMembers) { names in
            var parser = Parser(bytes: bytes)
            do throws(Failure) { return .success(try parser.scanObject(names: names, select: select, found: found)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Whether `count` bytes at `a` and `b` are equal: inline, eight at a time, for the short
    /// member names compared on every token (a `memcmp` call costs more than the comparison).
    @inline(__always)
    package static func equalBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        var index = 0
        while index + 8 <= count {
            if a.loadUnaligned(fromByteOffset: index, as: UInt64.self) != b.loadUnaligned(fromByteOffset: index, as: UInt64.self) { return false }
            index += 8
        }
        while index < count {
            if a.load(fromByteOffset: index, as: UInt8.self) != b.load(fromByteOffset: index, as: UInt8.self) { return false }
            index += 1
        }
        return true
    }

    private struct Parser {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func expect(_ literal: StaticString) throws(Failure) {
            let count = literal.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw .syntax(offset: index) }
            let pointer = literal.utf8Start
            for offset in 0..<count where bytes[index + offset] != pointer[offset] {
                throw .syntax(offset: index + offset)
            }
            index += count
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard let byte = current else { throw .syntax(offset: index) }
            switch byte {
            case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
            case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw .syntax(offset: index)
            }
        }

        /// The pass of ``StrictJSON/scanObject(_:select:found:)``; `names` holds the byte
        /// ranges of the member names read so far.
        mutating func scanObject(
            names: UnsafeMutableBufferPointer<Range<Int>>, select: (UnsafeRawBufferPointer) -> Int?, found: (Int, consuming JSONValue) -> Void
        ) throws(Failure) -> Bool {
            skipWhitespace()
            guard current == UInt8(ascii: "{") else { return false }
            index += 1
            skipWhitespace()
            var count = 0
            if current == UInt8(ascii: "}") {
                index += 1
                return try end()
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw .syntax(offset: index) }
                // The name: plain ASCII only (anything else is left to the full parser).
                let nameStart = index + 1
                var nameEnd = nameStart
                while true {
                    guard nameEnd < bytes.count else { return false }
                    let byte = bytes[nameEnd]
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return false }
                    nameEnd += 1
                }
                index = nameEnd + 1
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw .syntax(offset: index) }
                index += 1
                skipWhitespace()
                let name = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd])
                if let slot = select(name) {
                    found(slot, try value(depth: 1))
                } else {
                    try skipValue()
                }
                // After the value, as the full parser checks it (the same first failure).
                for earlier in names[..<count] where earlier.count == name.count {
                    if StrictJSON.equalBytes(bytes.baseAddress! + earlier.lowerBound, name.baseAddress!, count: name.count) {
                        throw .duplicateMember(String(decoding: name, as: UTF8.self))
                    }
                }
                guard count < names.count else { return false }
                names[count] = nameStart..<nameEnd
                count += 1
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return try end()
                default: throw .syntax(offset: index)
                }
            }
        }

        /// Only whitespace may follow the top-level value.
        mutating func end() throws(Failure) -> Bool {
            skipWhitespace()
            guard index == bytes.count else { throw .syntax(offset: index) }
            return true
        }

        /// Validates one member value (at depth 1) without keeping it: a plain string or
        /// a number is stepped over; anything else goes through ``value(depth:)``.
        mutating func skipValue() throws(Failure) {
            switch current ?? 0 {
            case UInt8(ascii: "\""):
                let start = index
                index += 1
                while index < bytes.count {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") {
                        index += 1
                        return
                    }
                    if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
                    index += 1
                }
                // Escapes, non-ASCII or an error: the string decoder decides.
                index = start
                _ = try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                _ = try number()
            default:
                _ = try value(depth: 1)
            }
        }

        mutating func object(depth: Int) throws(Failure) -> [String: JSONValue] {
            guard depth <= StrictJSON.maximumDepth else { throw .tooDeep }
            index += 1  // {
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                index += 1
                return members
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw .syntax(offset: index) }
                let name = try string()
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw .syntax(offset: index) }
                index += 1
                skipWhitespace()
                let member = try value(depth: depth)
                guard members.updateValue(member, forKey: name) == nil else { throw .duplicateMember(name) }
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): index += 1; return members
                default: throw .syntax(offset: index)
                }
            }
        }

        mutating func array(depth: Int) throws(Failure) -> [JSONValue] {
            guard depth <= StrictJSON.maximumDepth else { throw .tooDeep }
            index += 1  // [
            var elements: [JSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                return elements
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"): index += 1; return elements
                default: throw .syntax(offset: index)
                }
            }
        }

        mutating func number() throws(Failure) -> JSONValue {
            let start = index
            var isInteger = true
            if current == UInt8(ascii: "-") { index += 1 }
            // int = zero / ( digit1-9 *DIGIT )
            guard let first = current, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else {
                throw .syntax(offset: index)
            }
            index += 1
            if first != UInt8(ascii: "0") { skipDigits() }
            if current == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard try requireDigit() else { throw .syntax(offset: index) }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard try requireDigit() else { throw .syntax(offset: index) }
            }
            if isInteger, let integer = integer(start..<index) { return .integer(integer) }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let double = Double(text), double.isFinite else { throw .syntax(offset: start) }
            return .number(double)
        }

        /// The integer spelled by `range` (an optional minus and digits), or `nil` when it
        /// does not fit in 64 bits. Read in place: NumericDates are on the hot path.
        func integer(_ range: Range<Int>) -> Int64? {
            var index = range.lowerBound
            let negative = bytes[index] == UInt8(ascii: "-")
            if negative { index += 1 }
            var value: Int64 = 0
            while index < range.upperBound {
                let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                let digit = Int64(bytes[index] - UInt8(ascii: "0"))
                let (sum, overflow2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
                if overflow1 || overflow2 { return nil }
                value = sum
                index += 1
            }
            return value
        }

        mutating func skipDigits() {
            while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        }

        mutating func requireDigit() throws(Failure) -> Bool {
            guard let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
            skipDigits()
            return true
        }

        mutating func string() throws(Failure) -> String {
            index += 1  // opening quote
            let start = index
            // Fast path: no escapes.
            var ascii = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    // ASCII is valid UTF-8 as it is: decoding it cannot repair anything, and
                    // costs a fraction of the validating initializer (most JWT members are ASCII).
                    if ascii { return String(decoding: slice, as: UTF8.self) }
                    guard let text = String(validating: slice, as: UTF8.self) else { throw .syntax(offset: start) }
                    return text
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { throw .syntax(offset: index) }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
            // Slow path: unescape into a buffer.
            var buffer = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    guard let text = String(validating: buffer, as: UTF8.self) else { throw .syntax(offset: start) }
                    return text
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escape = current else { throw .syntax(offset: index) }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): buffer.append(0x22)
                    case UInt8(ascii: "\\"): buffer.append(0x5C)
                    case UInt8(ascii: "/"): buffer.append(0x2F)
                    case UInt8(ascii: "b"): buffer.append(0x08)
                    case UInt8(ascii: "f"): buffer.append(0x0C)
                    case UInt8(ascii: "n"): buffer.append(0x0A)
                    case UInt8(ascii: "r"): buffer.append(0x0D)
                    case UInt8(ascii: "t"): buffer.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            // A high surrogate must be followed by an escaped low surrogate.
                            try expect("\\u")
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw .syntax(offset: index) }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(scalar) {
                            throw .syntax(offset: index)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw .syntax(offset: index) }
                        buffer.append(contentsOf: String(Character(unicode)).utf8)
                    default:
                        throw .syntax(offset: index - 1)
                    }
                default:
                    if byte < 0x20 { throw .syntax(offset: index) }
                    buffer.append(byte)
                    index += 1
                }
            }
            throw .syntax(offset: index)
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard index + 4 <= bytes.count else { throw .syntax(offset: index) }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw .syntax(offset: index)
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
    }
}
