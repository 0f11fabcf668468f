// The fuzzer calls LLVMFuzzerTestOneInput; built without --sanitize=fuzzer this program does nothing.
import Foundation
import HTTPTypes
import OAuth2

// The first byte picks the parser (token, introspection, metadata, callback query, URL
// redaction and DPoP htu, callback fragment) and the status/content type; the rest is the input.
// Every parser must return or throw OAuth2Error: a crash, a hang or another error is a bug.
// Fixtures are static members, initialized on first use: libFuzzer provides `main`, so the
// top-level code of this file never runs and top-level globals would stay uninitialized.
private enum Fixture {
    static let statuses = [200, 400, 401, 403, 429, 500, 503]
    static let contentTypes: [String?] = [
        "application/json", "application/x-www-form-urlencoded", "text/html", nil, "application/json; charset=utf-8",
    ]
    static let request: AuthorizationRequest? = {
        guard let metadata = try? ServerMetadata(fields: [
            "issuer": .string("https://as.example.com"),
            "authorization_endpoint": .string("https://as.example.com/authorize"),
            "token_endpoint": .string("https://as.example.com/token"),
        ]) else { return nil }
        let configuration = ClientConfiguration(clientID: "fuzz", redirectURI: URL(string: "http://127.0.0.1:9/cb"), scopes: ["openid"])
        return try? OAuth2Client(metadata: metadata, configuration: configuration).authorizationRequest()
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let selector = Int(bytes[0])
    let body = Data(bytes.dropFirst())
    var fields = HTTPFields()
    if let type = Fixture.contentTypes[(selector >> 3) % Fixture.contentTypes.count] { fields[.contentType] = type }
    if selector & 0x80 != 0 {
        // The same untrusted text as the HTTP dates a response carries (Retry-After, Date).
        let header = String(decoding: body.prefix(40), as: UTF8.self)
        fields[.retryAfter] = header
        fields[.date] = header
    }
    let response = HTTPResponse(status: .init(code: Fixture.statuses[(selector >> 4) % Fixture.statuses.count]), headerFields: fields)
    do {
        switch selector % 6 {
        case 0: _ = try TokenSet.parse(response: response, body: body, sentAt: Date())
        case 1: _ = try IntrospectionResponse.parse(response: response, body: body)
        case 2: _ = try JSONDecoder().decode(ServerMetadata.self, from: body)
        case 3:
            if let request = Fixture.request, let url = URL(string: "http://127.0.0.1:9/cb?" + String(decoding: body, as: UTF8.self)) {
                _ = try AuthorizationResponse(callbackURL: url, request: request)
            }
        case 4:
            if let url = URL(string: String(decoding: body, as: UTF8.self)) {
                _ = Redactor.url(url)
                // DPoP's htu normalisation must be idempotent: a server normalising our htu
                // again has to get the same text.
                let htu = DPoPProof.targetURI(for: url)
                if let again = URL(string: htu), DPoPProof.targetURI(for: again) != htu {
                    fatalError("htu normalisation is not idempotent")
                }
            }
        default:
            if let request = Fixture.request, let url = URL(string: "http://127.0.0.1:9/cb#" + String(decoding: body, as: UTF8.self)) {
                _ = try AuthorizationResponse(callbackURL: url, request: request)
            }
        }
    } catch is OAuth2Error {
    } catch is DecodingError {
    } catch {
        fatalError("unexpected error type: \(type(of: error))")
    }
    return 0
}
