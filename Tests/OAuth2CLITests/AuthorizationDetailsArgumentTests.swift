import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// `oauth2 login --authorization-details FILE` (RFC 9396): what the file may hold, and the
/// usage errors for what it may not.
@Suite struct AuthorizationDetailsArgumentTests {
    func parse(_ text: String) throws -> [AuthorizationDetail] {
        try AuthorizationDetailsArgument.parse(Data(text.utf8), path: "details.json")
    }

    @Test func anArrayOrOneObjectIsRead() throws {
        let details = try parse(#"[{"type":"payment_initiation","actions":["initiate"],"instructedAmount":{"currency":"EUR","amount":"1"}},{"type":"b"}]"#)
        #expect(details.map(\.type) == ["payment_initiation", "b"])
        #expect(details[0].actions == ["initiate"])
        #expect(details[0].members["instructedAmount"] == .object(["currency": "EUR", "amount": "1"]))
        #expect(try parse(#"{"type":"one"}"#) == [AuthorizationDetail(type: "one")])
    }

    @Test func whatIsNotDetailsIsAUsageError() throws {
        for text in ["not json", "[]", #"[{"actions":["x"]}]"#, #"[{"type":1}]"#, #""text""#, String(repeating: " ", count: 70_000) + "[]"] {
            let error = #expect(throws: CLIError.self) { try parse(text) }
            #expect(error?.status == .usage, "\(text.prefix(20))")
        }
        let missing = #expect(throws: CLIError.self) { try AuthorizationDetailsArgument.load("/nonexistent/details.json") }
        #expect(missing?.status == .usage)
    }

    @Test func loginTakesTheOption() throws {
        let command = try LoginCommand.parse(["--issuer", "https://id.example.com", "--authorization-details", "details.json"])
        #expect(command.authorizationDetailsFile == "details.json")
    }
}
