import Foundation
import Testing
@testable import OAuth2JOSE

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

    /// Found by FuzzFormats: a fraction beyond a double's precision decoded as `.number`, was
    /// written back without a fraction and read again as `.integer`.
    @Test(arguments: ["10000000215810202.2154926", "1.0000000215810202e+16", "-2.5e1", "3600.0", "1.5", "1e300", "-9223372036854775808.0"])
    func aNumberReadsTheSameOnceWrittenBack(_ number: String) throws {
        let first = try #require(JSONValue.parseObject(Data(#"{"n":\#(number)}"#.utf8)))
        let again = try #require(JSONValue.parseObject(try JSONEncoder().encode(first)))
        #expect(again == first)
    }

    @Test func aWholeDoubleIsAnInteger() throws {
        let object = try #require(JSONValue.parseObject(Data(#"{"a":10000000215810202.2154926,"b":1e300}"#.utf8)))
        #expect(object["a"] == .integer(10_000_000_215_810_202))
        #expect(object["b"] == .number(1e300))
    }

    @Test(arguments: ["", "[1]", "\"x\"", "{", "<html>", "{\"a\":}"])
    func parseObjectRejectsNonObjects(_ text: String) {
        #expect(JSONValue.parseObject(Data(text.utf8)) == nil)
    }
}
