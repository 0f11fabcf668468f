import Foundation
import Testing
@testable import OAuth2InteractiveSignIn

/// The terminal QR code: libqrencode loaded at run time, and the half-block rendering.
@Suite struct TerminalQRCodeTests {
    /// scripts/test installs libqrencode4 and sets this, so the test cannot quietly skip there.
    static let libraryExpected = TerminalQRCode.isAvailable()
        || ProcessInfo.processInfo.environment["OAUTH2_TEST_REQUIRE_QRENCODE"] == "1"

    static let text = "http://127.0.0.1:4593/api/oidc/device?code=1CPL-BJDB"

    @Test(.enabled(if: libraryExpected, "libqrencode4 is not installed"))
    func libqrencodeMakesARealQRCode() throws {
        let code = try #require(TerminalQRCode(encoding: Self.text), "libqrencode could not be loaded")
        #expect((1...40).contains(code.version))
        #expect(code.size == 17 + 4 * code.version)
        #expect(code.modules.count == code.size * code.size)
        // Finder patterns in three corners: a dark 7×7 ring, a light ring, a dark 3×3 core.
        for (left, top) in [(0, 0), (code.size - 7, 0), (0, code.size - 7)] {
            for y in 0..<7 {
                for x in 0..<7 {
                    let ring = max(abs(x - 3), abs(y - 3))
                    #expect(code.isDark(x: left + x, y: top + y) == (ring != 2), "finder at (\(left),\(top)) module (\(x),\(y))")
                }
            }
        }
        // Timing patterns: row 6 and column 6 alternate between the finders.
        for i in 8..<(code.size - 8) {
            #expect(code.isDark(x: i, y: 6) == i.isMultiple(of: 2))
            #expect(code.isDark(x: 6, y: i) == i.isMultiple(of: 2))
        }
        // The dark module beside the lower-left finder.
        #expect(code.isDark(x: 8, y: 4 * code.version + 9))
        // More error correction, more modules (or the same version at best).
        let high = try #require(TerminalQRCode(encoding: Self.text, errorCorrection: .high))
        #expect(high.version >= code.version)
        #expect(high.modules != code.modules)
    }

    @Test(.enabled(if: libraryExpected, "libqrencode4 is not installed"))
    func theRenderingShowsEveryModule() throws {
        let code = try #require(TerminalQRCode(encoding: Self.text))
        for style in [TerminalQRCode.Style.lightOnDark, .darkOnLight, .ansi] {
            let decoded = Self.decode(code.render(style: style, quietZone: 2), style: style)
            let span = code.size + 4
            #expect(decoded.count == span + span % 2, "\(style): two module rows per line")
            for y in 0..<span {
                #expect(decoded[y].count == span)
                for x in 0..<span {
                    #expect(decoded[y][x] == code.isDark(x: x - 2, y: y - 2), "\(style) module (\(x - 2),\(y - 2))")
                }
            }
        }
    }

    @Test func aMissingLibraryGivesNoCode() {
        #expect(TerminalQRCode(encoding: Self.text, libraries: ["libqrencode-does-not-exist.so.9"]) == nil)
        #expect(TerminalQRCode.isAvailable(libraries: ["libqrencode-does-not-exist.so.9", "/nonexistent/libqrencode.so.4"]) == false)
        // A library that loads but is not libqrencode.
        #expect(TerminalQRCode(encoding: Self.text, libraries: ["libc.so.6"]) == nil)
    }

    @Test func halfBlocksInEachStyle() throws {
        // 2×2: dark light / light dark.
        let code = try #require(TerminalQRCode(version: 1, size: 2, modules: [true, false, false, true]))
        #expect(code.render(style: .darkOnLight, quietZone: 0) == "▀▄\n")
        #expect(code.render(style: .lightOnDark, quietZone: 0) == "▄▀\n")
        #expect(code.render(style: .ansi, quietZone: 0) == "\u{1B}[30;107m▀▄\u{1B}[0m\n")
        #expect(code.render(style: .darkOnLight, quietZone: 1) == " ▄  \n  ▀ \n", "the quiet zone is light")
        #expect(code.render(style: .lightOnDark, quietZone: 1) == "█▀██\n██▄█\n")
        #expect(TerminalQRCode(version: 1, size: 2, modules: [true]) == nil)
    }

    /// Reads a rendering back into dark/light rows (a last half row of a line is the
    /// bottom edge: light).
    static func decode(_ rendering: String, style: TerminalQRCode.Style) -> [[Bool]] {
        var rows: [[Bool]] = []
        for var line in rendering.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) {
            if style == .ansi {
                line = line.replacingOccurrences(of: "\u{1B}[30;107m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "")
            }
            var top: [Bool] = []
            var bottom: [Bool] = []
            for character in line {
                let (t, b): (Bool, Bool)
                switch character {
                case "█": (t, b) = (true, true)
                case "▀": (t, b) = (true, false)
                case "▄": (t, b) = (false, true)
                default: (t, b) = (false, false)
                }
                // Drawn cells are dark, except when light modules are the ones drawn.
                top.append(style == .lightOnDark ? !t : t)
                bottom.append(style == .lightOnDark ? !b : b)
            }
            rows.append(top)
            rows.append(bottom)
        }
        return rows
    }
}
