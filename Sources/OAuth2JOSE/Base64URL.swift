import Foundation

/// base64url without padding (RFC 4648 §5), as JOSE and PKCE use it.
///
/// Written here rather than taken from Foundation or a package for two reasons: it is strict
/// where JOSE needs it (padding, characters outside the alphabet and non-zero trailing bits
/// are refused, so one token has one encoding), and it decodes straight from the bytes of a
/// compact JWS into the buffer swift-crypto takes, with no padded copy in between — the JWS
/// parser's hot path (BENCHMARKS.md). FuzzJWS and the round-trip tests keep it honest.
package enum Base64URL {
    package static func encode<D: DataProtocol>(_ data: D) -> String {
        let bytes = Array(data)
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
            output.append(alphabet[Int(value & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let value = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
        case 2:
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Strict decoding: only the base64url alphabet, no padding, no whitespace, and no
    /// stray bits in the last character (so that every byte string has exactly one
    /// encoding, as JOSE comparisons assume).
    package static func decode(_ text: some StringProtocol) -> Data? {
        var text = String(text)
        return text.withUTF8 { decodeBytes(UnsafeRawBufferPointer($0)).map { Data($0) } }
    }

    /// The same rules over raw ASCII bytes; the hot path of JWS parsing.
    package static func decodeBytes(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        if input.count % 4 == 1 { return nil }
        let capacity = input.count * 3 / 4
        var valid = false
        let output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            valid = decode(input, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = valid ? capacity : 0
        }
        return valid ? output : nil
    }

    /// The same rules, decoding into a temporary buffer that `body` reads (on the stack when
    /// small); `nil` when `input` is not strict base64url.
    package static func withDecoded<R>(_ input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        if input.count % 4 == 1 { return nil }
        return withUnsafeTemporaryAllocation(byteCount: input.count * 3 / 4, alignment: 1) { buffer in
            decode(input, into: buffer) ? body(UnsafeRawBufferPointer(buffer)) : nil
        }
    }

    /// The same rules, decoding straight into `Data` (one buffer, no copy afterwards): for
    /// signatures, which swift-crypto keeps as `Data`.
    package static func decodeData(_ input: UnsafeRawBufferPointer) -> Data? {
        if input.count % 4 == 1 { return nil }
        let count = input.count * 3 / 4
        guard count > 0 else { return Data() }  // no characters (one alone was refused above)
        // Decoded into a buffer that `Data` then owns: no zero-filling first, no copy after.
        guard let memory = malloc(count) else { return nil }
        guard decode(input, into: UnsafeMutableRawBufferPointer(start: memory, count: count)) else {
            free(memory)
            return nil
        }
        return Data(bytesNoCopy: memory, count: count, deallocator: .free)
    }

    /// Decodes `input` into `output`, which holds exactly `input.count * 3 / 4` bytes: four
    /// characters (three bytes) at a time, through ``quadTable``, which holds each
    /// character's six bits already shifted to its place in the quad, so a quad's 24 bits are
    /// the OR of four lookups; every quad but the last is stored as one 4-byte write whose
    /// fourth byte the next quad overwrites. A character outside the alphabet has bit 31 set
    /// in the quad table (bit 7 in ``decodeTable``, for the last 2 or 3 characters), so the
    /// OR of every value read shows it: checked once at the end (`output` is then garbage,
    /// and the caller drops it).
    private static func decode(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        guard let source = input.baseAddress, !input.isEmpty else { return true }
        // No room at all: only an input of fewer than 2 characters decodes to nothing.
        guard let target = output.baseAddress else { return false }
        let count = input.count
        let quads = count / 4
        var seen: UInt32 = 0
        var written = 0
        var offset = 0
        quadTable.withUnsafeBufferPointer { quad in
            @inline(__always) func bits(_ offset: Int) -> UInt32 {
                quad[Int(source.load(fromByteOffset: offset, as: UInt8.self))]
                    | quad[256 + Int(source.load(fromByteOffset: offset + 1, as: UInt8.self))]
                    | quad[512 + Int(source.load(fromByteOffset: offset + 2, as: UInt8.self))]
                    | quad[768 + Int(source.load(fromByteOffset: offset + 3, as: UInt8.self))]
            }
            // All quads but the last: 4-byte stores (the next quad's first byte overwrites the
            // fourth, so each stays inside `output`).
            while offset + 4 < quads * 4 {
                let value = bits(offset)
                seen |= value
                target.storeBytes(of: (value << 8).bigEndian, toByteOffset: written, as: UInt32.self)
                offset += 4
                written += 3
            }
            if quads > 0 {
                let value = bits(offset)
                seen |= value
                target.storeBytes(of: UInt8(truncatingIfNeeded: value >> 16), toByteOffset: written, as: UInt8.self)
                target.storeBytes(of: UInt8(truncatingIfNeeded: value >> 8), toByteOffset: written + 1, as: UInt8.self)
                target.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: written + 2, as: UInt8.self)
                offset += 4
                written += 3
            }
        }
        // The last 2 or 3 characters (a count of 4n+1 was refused by the callers): their
        // leftover bits must be zero (RFC 4648 §3.5, canonical encoding).
        let valid: Bool = decodeTable.withUnsafeBufferPointer { table in
            @inline(__always) func value(_ offset: Int) -> UInt32 {
                UInt32(table[Int(source.load(fromByteOffset: offset, as: UInt8.self))])
            }
            switch count - offset {
            case 2:
                let a = value(offset), b = value(offset + 1)
                if (a | b) & 0x80 != 0 || b & 0x0F != 0 { return false }
                target.storeBytes(of: UInt8(truncatingIfNeeded: a << 2 | b >> 4), toByteOffset: written, as: UInt8.self)
            case 3:
                let a = value(offset), b = value(offset + 1), c = value(offset + 2)
                if (a | b | c) & 0x80 != 0 || c & 0x03 != 0 { return false }
                let bits = a << 12 | b << 6 | c
                target.storeBytes(of: UInt8(truncatingIfNeeded: bits >> 10), toByteOffset: written, as: UInt8.self)
                target.storeBytes(of: UInt8(truncatingIfNeeded: bits >> 2), toByteOffset: written + 1, as: UInt8.self)
            case 0:
                break
            default:
                return false
            }
            return true
        }
        return valid && seen & 0x8000_0000 == 0
    }

    /// Encodes `input` into `output` (room for `(input.count * 4 + 2) / 3` bytes) and
    /// returns how many bytes it wrote; allocates nothing.
    package static func encode(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        alphabet.withUnsafeBufferPointer { alphabet in
            var written = 0
            var index = 0
            func put(_ value: UInt32) {
                output[written] = alphabet[Int(value & 63)]
                written += 1
            }
            while index + 3 <= input.count {
                let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                put(value >> 18)
                put(value >> 12)
                put(value >> 6)
                put(value)
                index += 3
            }
            switch input.count - index {
            case 1:
                let value = UInt32(input[index]) << 16
                put(value >> 18)
                put(value >> 12)
            case 2:
                let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
                put(value >> 18)
                put(value >> 12)
                put(value >> 6)
            default:
                break
            }
            return written
        }
    }

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        return table
    }()

    /// ``decodeTable`` for the four positions of a quad, each value shifted to its place in
    /// the quad's 24 bits (position `p` at index `p * 256 + character`); a character outside
    /// the alphabet is `0x8000_0000` at every position.
    private static let quadTable: [UInt32] = {
        var table = [UInt32](repeating: 0x8000_0000, count: 1024)
        for (character, value) in decodeTable.enumerated() where value != 0xFF {
            for position in 0..<4 { table[position * 256 + character] = UInt32(value) << (18 - 6 * position) }
        }
        return table
    }()
}
