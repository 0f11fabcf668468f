// The fuzzer calls LLVMFuzzerTestOneInput; built without --sanitize=fuzzer this program does nothing.
import Dispatch
import Foundation
import HTTPTypes
import OAuth2

// The formats the other harnesses leave out. The first byte picks the parser — a
// `WWW-Authenticate` challenge, a device authorization response, a registration response,
// a `DPoP-Nonce`, a stored token or registration document, a settings file (each of its three formats,
// and detected) — and the status and content type; the rest is the input. A parser must
// return or throw its own typed error: a crash, a hang or another error is a bug.
private enum Fixture {
    static let statuses = [200, 201, 400, 401, 429, 503]
    static let contentTypes: [String?] = ["application/json", "application/x-www-form-urlencoded", "text/plain", nil]
    static let endpoint = URL(string: "https://as.example.com/register")!
    static let api = URL(string: "https://api.example.com/resource")!
}

/// Runs `body` to its end on this thread (the fuzzer's callback is synchronous).
private func wait(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}

/// Equal sessions, dates within a microsecond: a date is stored as seconds since 1970 and
/// `Date` counts from 2001, so the conversion back may differ in the last bit of the double.
private func sameSession(_ a: StoredTokenSession, _ b: StoredTokenSession) -> Bool {
    func close(_ x: Date?, _ y: Date?) -> Bool {
        guard let x, let y else { return x == nil && y == nil }
        return abs(x.timeIntervalSince(y)) < 1e-6
    }
    var a = a, b = b
    guard close(a.updatedAt, b.updatedAt), close(a.tokens.expiresAt, b.tokens.expiresAt), close(a.tokens.issuedAt, b.tokens.issuedAt) else {
        return false
    }
    a.updatedAt = b.updatedAt
    a.tokens.expiresAt = b.tokens.expiresAt
    a.tokens.issuedAt = b.tokens.issuedAt
    return a == b
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let selector = Int(bytes[0])
    let body = Data(bytes.dropFirst())
    let text = String(decoding: body, as: UTF8.self)
    var fields = HTTPFields()
    if let type = Fixture.contentTypes[(selector >> 3) % Fixture.contentTypes.count] { fields[.contentType] = type }
    let response = HTTPResponse(status: .init(code: Fixture.statuses[(selector >> 5) % Fixture.statuses.count]), headerFields: fields)
    do {
        switch selector % 8 {
        case 0:
            if let challenge = WWWAuthenticate(text) {
                // A parsed challenge names a scheme, and its parameters are names it read.
                if challenge.scheme.isEmpty { fatalError("a challenge without a scheme") }
            }
        case 1:
            _ = try DeviceAuthorization.parse(response: response, body: body, requestedScopes: ["openid"], sentAt: Date())
        case 2:
            _ = try ClientRegistration.parse(response: response, body: body, endpoint: Fixture.endpoint, management: selector & 0x40 != 0)
        case 3:
            let cache = DPoPNonceCache()
            wait {
                await cache.remember(text, for: Fixture.api)
                // Only a valid nonce is kept, and it is kept as it was given.
                if let kept = await cache.nonce(for: Fixture.api) {
                    if kept != text || kept.isEmpty || kept.utf8.count > DPoPNonceCache.maximumLength
                        || kept.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E || $0 == 0x22 || $0 == 0x5C })
                    {
                        fatalError("an invalid nonce was kept")
                    }
                }
            }
        case 4 where selector & 0x80 != 0:
            // A stored registration document: what parses is written back and read again.
            let document = try RegistrationDocument(data: body)
            let again = try RegistrationDocument(data: try document.encoded())
            if again.issuer != document.issuer || again.clientID != document.clientID || again.additionalFields != document.additionalFields {
                fatalError("a stored registration reads differently once written back")
            }
        case 4:
            // A stored token document: what parses is written back (in the current version)
            // and read again, the same session and members.
            let document = try TokenDocument(data: body)
            let again = try TokenDocument(data: try document.encoded())
            if !sameSession(document.session, again.session) || document.additionalFields != again.additionalFields {
                fatalError("a stored document reads differently once written back")
            }
        default:
            let formats: [SettingsFile.Format?] = [nil, .swiftOAuth2, .p2, .oktaOIDC]
            _ = try SettingsFile(data: body, format: formats[selector % 8 - 5 + (selector & 0x40 != 0 ? 1 : 0)])
        }
    } catch is OAuth2Error {
    } catch is TokenStoreError {
    } catch {
        fatalError("unexpected error type: \(type(of: error))")
    }
    return 0
}
