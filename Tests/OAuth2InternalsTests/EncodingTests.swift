import OAuth2Internals
import Testing

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

@Suite struct ConstantTimeTests {
    @Test func comparesContent() {
        #expect(constantTimeEquals("abc", "abc"))
        #expect(!constantTimeEquals("abc", "abd"))
        #expect(!constantTimeEquals("abc", "abcd"))
        #expect(!constantTimeEquals("", "a"))
        #expect(constantTimeEquals("", ""))
    }
}
