import Foundation
import Testing
@testable import OAuth2JOSE

@Suite struct Base64URLTests {
    @Test func encodesWithoutPadding() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode(Data("abc".utf8)) == "YWJj")
    }

    @Test func decodesStrictly() {
        #expect(Base64URL.decode("-_8") == Data([0xFB, 0xFF]))
        #expect(Base64URL.decode("YWJj=") == nil, "padding is not base64url")
        #expect(Base64URL.decode("YW Jj") == nil, "whitespace is refused")
        #expect(Base64URL.decode("+/8") == nil, "the base64 alphabet is refused")
        #expect(Base64URL.decode("Y") == nil, "a length of 4n+1 is impossible")
    }

    @Test func decodesWhatFoundationDecodesAndRefusesEveryBadCharacter() {
        var generator = SystemRandomNumberGenerator()
        for count in 0...70 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            let padded = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                + String(repeating: "=", count: (4 - encoded.utf8.count % 4) % 4)
            #expect(Data(base64Encoded: padded) == Data(bytes))
            #expect(Base64URL.decode(encoded) == Data(bytes), "\(count) bytes")
            var scalars = Array(encoded.utf8)
            // The three decoders the JWS parser uses agree.
            scalars.withUnsafeBytes { input in
                #expect(Base64URL.decodeData(input) == Data(bytes), "\(count) bytes into Data")
                #expect(Base64URL.withDecoded(input) { Array($0) } == bytes, "\(count) bytes into a temporary buffer")
            }
            for index in scalars.indices {
                for bad in [UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: " "), 0x00, 0x80, 0xFF] {
                    let kept = scalars[index]
                    scalars[index] = bad
                    scalars.withUnsafeBytes { input in
                        #expect(Base64URL.decodeBytes(input) == nil, "\(bad) at \(index) of \(count) bytes")
                        #expect(Base64URL.decodeData(input) == nil, "\(bad) at \(index) of \(count) bytes into Data")
                        #expect(Base64URL.withDecoded(input) { _ in true } == nil, "\(bad) at \(index) of \(count) bytes into a buffer")
                    }
                    scalars[index] = kept
                }
            }
        }
        // Non-zero leftover bits, in a two- and a three-character tail.
        #expect(Base64URL.decode("AAAAQR") == nil)
        #expect(Base64URL.decode("AAAAQUF") == nil)
        #expect(Base64URL.decode("AAAAQUE") == Data([0, 0, 0, 0x41, 0x41]))
    }
}
