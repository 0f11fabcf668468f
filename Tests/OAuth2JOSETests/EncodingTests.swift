import Foundation
import OAuth2Internals
import Testing
@testable import OAuth2JOSE

@Suite struct FormURLEncodingTests {
    @Test func encodesLikeWHATWG() {
        #expect(FormURLEncoding.encode("a b+c&d=e/é*~") == "a+b%2Bc%26d%3De%2F%C3%A9*%7E")
        #expect(FormURLEncoding.encode("AZaz09-._*") == "AZaz09-._*")
    }

    @Test func roundTripsPairsInOrder() throws {
        let pairs = [("grant_type", "authorization_code"), ("code", "x y+z"), ("redirect_uri", "http://127.0.0.1:9/cb?q=1")]
        let decoded = try #require(FormURLEncoding.decode(FormURLEncoding.encode(pairs)))
        #expect(decoded.map(\.0) == pairs.map(\.0))
        #expect(decoded.map(\.1) == pairs.map(\.1))
    }

    @Test(arguments: ["a=%", "a=%4", "a=%zz", "a=%C3%28"])
    func rejectsMalformedEscapes(_ input: String) {
        #expect(FormURLEncoding.decode(input) == nil)
    }
}

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

@Suite struct ConstantTimeTests {
    @Test func comparesContent() {
        #expect(constantTimeEquals("abc", "abc"))
        #expect(!constantTimeEquals("abc", "abd"))
        #expect(!constantTimeEquals("abc", "abcd"))
        #expect(!constantTimeEquals("", "a"))
        #expect(constantTimeEquals("", ""))
    }
}

@Suite struct JSONValueTests {
    @Test func keepsIntegersExact() throws {
        let object = try #require(JSONValue.parseObject(Data(#"{"big": 9007199254740993, "f": 1.5, "s": "x", "n": null, "b": true}"#.utf8)))
        #expect(object["big"] == .integer(9_007_199_254_740_993))
        #expect(object["f"] == .number(1.5))
        #expect(object["n"] == .null)
        #expect(object["b"] == .bool(true))
    }

    /// The fast path (StrictJSON) gives what JSONDecoder gives, including for what StrictJSON
    /// refuses or reads differently.
    @Test(arguments: [
        #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"scope":"read write"}"#,
        #"{"a":1,"a":2}"#,
        #"{"n":1.0,"e":1e3,"f":-2.5,"nested":{"x":[1,2.0,{"y":3E1}]}}"#,
        #"{"s":"caf\u00e9 \ud83d\ude00","t":"\"\\\/\b\f\n\r\t","empty":{},"list":[]}"#,
        #"  {"b":false,"z":null,"big":-9223372036854775808}  "#,
        #"{"lone":"\ud800"}"#,
    ])
    func parseObjectMatchesJSONDecoder(_ text: String) throws {
        let data = Data(text.utf8)
        let decoded = try? JSONDecoder().decode([String: JSONValue].self, from: data)
        #expect(JSONValue.parseObject(data) == decoded)
    }

    @Test func parseObjectReadsAnIntegralFractionAsJSONDecoderDoes() throws {
        let object = try #require(JSONValue.parseObject(Data(#"{"expires_in":3600.0}"#.utf8)))
        let decoded = try JSONDecoder().decode([String: JSONValue].self, from: Data(#"{"expires_in":3600.0}"#.utf8))
        #expect(object == decoded)
        #expect(object["expires_in"]?.integerValue == 3600)
    }

    @Test(arguments: ["", "[1]", "\"x\"", "{", "<html>", "{\"a\":}"])
    func parseObjectRejectsNonObjects(_ text: String) {
        #expect(JSONValue.parseObject(Data(text.utf8)) == nil)
    }
}
