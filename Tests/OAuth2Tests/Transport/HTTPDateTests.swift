import Foundation
import Testing
@testable import OAuth2

@Suite struct HTTPDateTests {
    /// 1994-11-06T08:49:37Z, RFC 9110's example instant.
    let example = Date(timeIntervalSince1970: 784_111_777)

    @Test func parsesTheThreeFormsOfRFC9110() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == example)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == example)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == example)
        #expect(HTTPDate.parse("Tue, 14 Nov 2023 22:14:20 GMT") == Date(timeIntervalSince1970: 1_700_000_060))
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
        #expect(HTTPDate.parse("Tue, 29 Feb 2028 23:59:59 GMT") == Date(timeIntervalSince1970: 1_835_481_599))
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT") == Date(timeIntervalSince1970: 253_402_300_799))
    }

    @Test func readsATwoDigitYearAsTheNearestPastOrNearFuture() throws {
        let date = try #require(HTTPDate.parse("Monday, 01-Jan-01 00:00:00 GMT"))
        #expect(Calendar(identifier: .gregorian).component(.year, from: date) == 2001)
    }

    @Test(arguments: [
        "", "0", "-5", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 GMT ",
        "sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1969 08:49:37 GMT", "Sun Nov 6 08:49:37 1994",
        "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37", "\u{97}t\u{651}t\u{3}?\u{9f}\u{b9}dU\u{1b}:\",",
        "Sun, 06 Nov 1994 08:49:37 GMT\u{0}", "Sün, 06 Nov 1994 08:49:37 GMT", String(repeating: "Sun, ", count: 100),
    ])
    func refusesAnythingElse(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func aLeapSecondCountsAsTheSecondBefore() {
        #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == Date(timeIntervalSince1970: 1_483_228_799))
    }
}
