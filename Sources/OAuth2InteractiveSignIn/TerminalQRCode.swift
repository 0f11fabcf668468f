import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A QR code drawn with Unicode half blocks, two modules per character cell, for a
/// terminal.
///
/// The code is made by libqrencode (Debian's `libqrencode4`, Homebrew's `qrencode`), loaded
/// at run time with `dlopen`: nothing is needed to build, and where the library is missing
/// ``init(encoding:errorCorrection:libraries:)`` returns `nil` and the caller simply shows
/// no QR code.
///
/// ```swift
/// if let qr = TerminalQRCode(encoding: authorization.preferredVerificationURI.absoluteString) {
///     FileHandle.standardError.write(Data(qr.render().utf8))
/// }
/// ```
public struct TerminalQRCode: Sendable, Hashable {
    /// The error correction level (QR codes can be read with this share of them damaged).
    public enum ErrorCorrection: Int32, Sendable, Hashable {
        /// About 7%.
        case low = 0
        /// About 15%.
        case medium = 1
        /// About 25%.
        case quartile = 2
        /// About 30%.
        case high = 3
    }

    /// How modules become characters.
    public enum Style: Sendable, Hashable {
        /// Light modules (and the quiet zone) are drawn, dark ones are the terminal's
        /// background: right for the usual light-on-dark terminal.
        case lightOnDark
        /// Dark modules are drawn: right for a dark-on-light terminal.
        case darkOnLight
        /// Black on white forced with ANSI colours, right on any colour terminal.
        case ansi
    }

    /// The QR code's version (1…40).
    public let version: Int
    /// Modules per side (21 for version 1, 4 more per version).
    public let size: Int
    /// The modules, row by row: `true` is dark.
    public let modules: [Bool]

    /// The library names tried by default: `libqrencode.so.4` on Linux; the Homebrew and
    /// MacPorts paths of `libqrencode.4.dylib` on macOS.
    public static var defaultLibraries: [String] {
        #if os(macOS)
        return ["libqrencode.4.dylib", "/opt/homebrew/lib/libqrencode.4.dylib", "/usr/local/lib/libqrencode.4.dylib", "/opt/local/lib/libqrencode.4.dylib"]
        #else
        return ["libqrencode.so.4"]
        #endif
    }

    /// `true` when libqrencode can be loaded from one of `libraries`.
    public static func isAvailable(libraries: [String] = TerminalQRCode.defaultLibraries) -> Bool {
        LibQREncode.load(libraries) != nil
    }

    /// Encodes `text` (bytes of its UTF-8, mode 8 bit, case kept).
    ///
    /// - Parameters:
    ///   - text: the text to encode.
    ///   - errorCorrection: the error correction level (``ErrorCorrection/medium`` by default).
    ///   - libraries: the library names or paths to try with `dlopen`, in order.
    /// - Returns: `nil` when libqrencode cannot be loaded from any of `libraries`, or cannot
    ///   encode the text (empty, or too long for a QR code).
    public init?(encoding text: String, errorCorrection: ErrorCorrection = .medium, libraries: [String] = TerminalQRCode.defaultLibraries) {
        guard !text.isEmpty, let library = LibQREncode.load(libraries) else { return nil }
        defer { library.close() }
        guard let matrix = library.encode(text, level: errorCorrection.rawValue) else { return nil }
        self.init(version: matrix.version, size: matrix.size, modules: matrix.modules)
    }

    /// Creates a code from its modules (`size`² of them, row by row, `true` dark).
    public init?(version: Int, size: Int, modules: [Bool]) {
        guard size > 0, modules.count == size * size else { return nil }
        self.version = version
        self.size = size
        self.modules = modules
    }

    /// `true` when the module at column `x`, row `y` is dark; outside the code (the quiet
    /// zone) is light.
    public func isDark(x: Int, y: Int) -> Bool {
        guard (0..<size).contains(x), (0..<size).contains(y) else { return false }
        return modules[y * size + x]
    }

    /// The code as lines of text, each ending in a newline: half blocks (`▀`, `▄`, `█`, space)
    /// covering two rows of modules per line, with a quiet zone of `quietZone` modules
    /// around the code (2 by default; the standard asks 4, most readers need less).
    public func render(style: Style = .lightOnDark, quietZone: Int = 2) -> String {
        let margin = max(0, quietZone)
        // lightOnDark draws the light modules: the terminal's dark background shows the dark ones.
        let drawsLight = style == .lightOnDark
        var text = ""
        for y in stride(from: -margin, to: size + margin, by: 2) {
            if style == .ansi { text += "\u{1B}[30;107m" }
            for x in -margin..<(size + margin) {
                let top = isDark(x: x, y: y) != drawsLight
                let bottom = y + 1 < size + margin && isDark(x: x, y: y + 1) != drawsLight
                switch (top, bottom) {
                case (true, true): text += "█"
                case (true, false): text += "▀"
                case (false, true): text += "▄"
                case (false, false): text += " "
                }
            }
            if style == .ansi { text += "\u{1B}[0m" }
            text += "\n"
        }
        return text
    }
}

/// libqrencode's two functions, loaded with `dlopen`.
///
/// Written by hand rather than through a C module so that nothing is needed at build time:
/// `QRcode *QRcode_encodeString(const char *, int version, QRecLevel, QRencodeMode, int
/// casesensitive)` and `void QRcode_free(QRcode *)`, where `QRcode` is
/// `{ int version; int width; unsigned char *data; }` and bit 0 of each data byte is 1 for
/// a dark module (libqrencode's `qrencode.h`, stable since version 3).
struct LibQREncode {
    private typealias EncodeString = @convention(c) (UnsafePointer<CChar>?, Int32, Int32, Int32, Int32) -> UnsafeMutableRawPointer?
    private typealias Free = @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// `QR_MODE_8`: bytes.
    private static let mode8: Int32 = 2

    private let handle: UnsafeMutableRawPointer
    private let encodeString: EncodeString
    private let free: Free

    /// The first of `names` that loads and has both functions.
    static func load(_ names: [String]) -> LibQREncode? {
        for name in names {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else { continue }
            guard let encode = dlsym(handle, "QRcode_encodeString"), let free = dlsym(handle, "QRcode_free") else {
                dlclose(handle)
                continue
            }
            return LibQREncode(
                handle: handle, encodeString: unsafeBitCast(encode, to: EncodeString.self), free: unsafeBitCast(free, to: Free.self))
        }
        return nil
    }

    func close() { dlclose(handle) }

    /// Encodes `text`; `nil` when libqrencode refuses it.
    func encode(_ text: String, level: Int32) -> (version: Int, size: Int, modules: [Bool])? {
        guard let code = text.withCString({ encodeString($0, 0, level, Self.mode8, 1) }) else { return nil }
        defer { free(code) }
        let version = Int(code.load(fromByteOffset: 0, as: Int32.self))
        let width = Int(code.load(fromByteOffset: MemoryLayout<Int32>.stride, as: Int32.self))
        // `data` follows the two ints, aligned as a pointer.
        let dataOffset = (2 * MemoryLayout<Int32>.stride + MemoryLayout<UnsafeRawPointer>.alignment - 1)
            / MemoryLayout<UnsafeRawPointer>.alignment * MemoryLayout<UnsafeRawPointer>.alignment
        guard width > 0, width <= 177, let data = code.load(fromByteOffset: dataOffset, as: UnsafePointer<UInt8>?.self) else {
            return nil
        }
        let modules = (0..<(width * width)).map { data[$0] & 1 == 1 }
        return (version, width, modules)
    }
}
