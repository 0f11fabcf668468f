import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct RedactorTests {
    @Test func urlsKeepOnlyHarmlessValues() {
        let url = URL(string: "https://user:pw@as.example.com/cb?code=SECRET1&state=SECRET2&scope=read&unknown=SECRET3#access_token=SECRET4&token_type=Bearer")!
        let text = Redactor.url(url)
        #expect(!text.contains("SECRET"))
        #expect(!text.contains("user:pw"))
        #expect(text.contains("scope=read"))
        #expect(text.contains("token_type=Bearer"))
        #expect(text.contains("code=%3Credacted%3E"))
        #expect(Redactor.url(URL(string: "https://a.example/cb?%zz=SECRET#%41%")!).contains("redacted"), "odd escapes are redacted, not a crash")
    }

    @Test func parametersAndHeaders() {
        #expect(Redactor.parameters([("grant_type", "password"), ("password", "SECRET"), ("username", "alice")]) ==
            "grant_type=password&password=<redacted>&username=<redacted>")
        let headers: HTTPFields = [.authorization: "Basic SECRET", .contentType: "application/json", .cookie: "sid=SECRET", HTTPField.Name("DPoP")!: "SECRET"]
        let text = Redactor.headers(headers)
        #expect(!text.contains("SECRET"))
        #expect(text.contains("application/json"))
    }

    @Test func errorsCarryNoSecrets() {
        let error = OAuth2Error(.network, source: .transport, message: "failed", underlyingError: URLError(.cannotConnectToHost, userInfo: [NSURLErrorFailingURLStringErrorKey: "https://x/?token=SECRET"]))
        #expect(!error.description.contains("SECRET"))
    }
}
