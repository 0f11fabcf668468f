import Foundation
import HTTPTypes

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, plus the two obsolete forms a recipient must
/// accept (RFC 850 and asctime).
///
/// Parsed by hand over ASCII bytes: Foundation's `DateFormatter` on Linux traps on some
/// non-ASCII input (found by fuzzing a `Retry-After` header), and a header is untrusted text.
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count <= 64, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        var scanner = Scanner(bytes: bytes)
        if let date = imfFixdate(&scanner) { return date }
        scanner = Scanner(bytes: bytes)
        if let date = rfc850(&scanner) { return date }
        scanner = Scanner(bytes: bytes)
        return asctime(&scanner)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ s: inout Scanner) -> Date? {
        guard s.word(in: shortDays) != nil, s.literal(", "),
            let day = s.digits(2), s.literal(" "), let month = s.month(), s.literal(" "),
            let year = s.digits(4), s.literal(" "), let time = s.time(), s.literal(" GMT"), s.atEnd
        else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years ahead is taken
    /// to be in the past (RFC 9110 §5.6.7).
    private static func rfc850(_ s: inout Scanner) -> Date? {
        guard s.word(in: longDays) != nil, s.literal(", "),
            let day = s.digits(2), s.literal("-"), let month = s.month(), s.literal("-"),
            let shortYear = s.digits(2), s.literal(" "), let time = s.time(), s.literal(" GMT"), s.atEnd
        else { return nil }
        let currentYear = Calendar(identifier: .gregorian).component(.year, from: Date())
        var year = currentYear - currentYear % 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return date(year: year, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994`
    private static func asctime(_ s: inout Scanner) -> Date? {
        guard s.word(in: shortDays) != nil, s.literal(" "), let month = s.month(), s.literal(" ") else { return nil }
        let day: Int
        if s.literal(" ") {
            guard let digit = s.digits(1) else { return nil }
            day = digit
        } else {
            guard let digits = s.digits(2) else { return nil }
            day = digits
        }
        guard s.literal(" "), let time = s.time(), s.literal(" "), let year = s.digits(4), s.atEnd else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    private static func date(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date? {
        guard year >= 1970, (1...31).contains(day), time.hour < 24, time.minute < 60, time.second <= 60 else { return nil }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let monthLengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= monthLengths[month - 1] else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm), proleptic Gregorian, UTC.
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + time.hour * 3600 + time.minute * 60 + min(time.second, 59)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func literal(_ text: String) -> Bool {
            let expected = Array(text.utf8)
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected)
            else { return false }
            index += expected.count
            return true
        }

        /// Exactly `count` ASCII digits.
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count - index >= count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }

        /// One of `words` (case-sensitive, as the grammar says); its index.
        mutating func word(in words: [String]) -> Int? {
            for (position, word) in words.enumerated() where literal(word) { return position }
            return nil
        }

        /// A three-letter month name as 1...12.
        mutating func month() -> Int? { word(in: HTTPDate.months).map { $0 + 1 } }

        /// `HH:MM:SS`
        mutating func time() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = digits(2), literal(":"), let minute = digits(2), literal(":"), let second = digits(2)
            else { return nil }
            return (hour, minute, second)
        }
    }
}
