// libFuzzer harness for what a web service receives from outside: the Authorization header, a
// JWT access token (signature and RFC 9068 claims), a DPoP proof, and a back-channel logout
// request's body (its form, then the logout token's signature and claims), and what a web
// app's sign-in reads: `Cookie` header fields, a `returnTo`, a callback's query. The first
// byte picks which (its high bit: the web sign-in's inputs); the rest is the input. Built without --sanitize=fuzzer this program does nothing.
import Foundation
import HTTPTypes
import OAuth2
import OAuth2Web

// Static members, initialized on first use (libFuzzer provides `main`: top-level code never runs).
private enum Fixture {
    static let key = try! JWSSigningKey.generate(.es256, keyID: "e")
    static let keys = JSONWebKeySet(keys: [key.publicKey!])
    static let issuer = TrustedIssuer(issuer: "https://op.example", audiences: ["api"], keys: .fixed(keys))
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let dpop: DPoPProofVerifier = {
        var verifier = DPoPProofVerifier(publicBaseURL: URL(string: "https://api.example")!, nonces: DPoPServerNonces())
        verifier.now = { now }
        return verifier
    }()
    static let logout = LogoutTokenVerifier(issuer: "https://op.example", clientID: "app", keys: .fixed(keys))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard let selector = bytes.first else { return 0 }
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    if selector >= 0x80 {
        webSignInInput(text, selector: selector)
        return 0
    }
    if selector % 4 == 3 {
        // Every failure is a LogoutTokenError.
        do throws(LogoutTokenError) {
            let token = try BackChannelLogoutEndpoint.logoutToken(method: .post, contentType: "application/x-www-form-urlencoded", body: bytes.dropFirst())
            guard let jws = try? JWS(compact: token) else { return 0 }
            if IssuerSignatureCheck.failure(jws, keys: Fixture.keys) == nil {
                fatalError("a logout token not signed by the fixture's key verified")
            }
            if let claims = try? jws.claims() { _ = try Fixture.logout.check(claims, now: Fixture.now) }
        } catch {
            precondition(!error.message.isEmpty, "an error without a message")
        }
        return 0
    }
    // Every failure is an AccessTokenError (typed throws): the harness looks for crashes,
    // hangs and leaks, and for an accepted input where none can be.
    do throws(AccessTokenError) {
        switch selector % 4 {
        case 0:
            let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example", path: "/r?\(text.prefix(64))", headerFields: [.authorization: text])
            if let credentials = try ResourceServer.credentials(in: request) {
                precondition(!credentials.token.isEmpty, "an empty credential was accepted")
            }
        case 1:
            guard let jws = try? JWS(compact: text) else { return 0 }
            if AccessTokenVerifier.signatureFailure(jws, keys: Fixture.keys) == nil {
                fatalError("a token not signed by the fixture's key verified")
            }
            if let claims = try? jws.claims() { _ = try AccessTokenVerifier.check(claims, issuer: Fixture.issuer, now: Fixture.now) }
        default:  // 2
            _ = try Fixture.dpop.check(text, method: .get, path: "/r", accessToken: "t")
            fatalError("a proof without the server's nonce was accepted")
        }
    } catch {
        precondition(!error.message.isEmpty, "an error without a message")
    }
    return 0
}

private enum WebFixture {
    static let configuration: WebSignInConfiguration = {
        var configuration = WebSignInConfiguration(publicBaseURL: URL(string: "https://app.example")!)
        configuration.allowedReturnOrigins = [URL(string: "https://shop.example")!]
        return configuration
    }()
}

/// Cookies (no value carries a separator; only 43-character base64url values count as session
/// ids), `returnTo` (never another origin, a scheme-relative URL or a backslash), a callback's
/// query and a form body (decoded or refused, never a crash).
private func webSignInInput(_ text: String, selector: UInt8) {
    switch selector % 3 {
    case 0:
        var fields = HTTPFields()
        for line in text.split(separator: "\n", maxSplits: 3) { fields.append(HTTPField(name: .cookie, value: String(line))) }
        for value in WebCookies.values(named: WebFixture.configuration.cookieName, in: fields) {
            precondition(!value.contains(";"), "a cookie value with a separator")
            if WebCookies.isWellFormedID(value) { precondition(value.utf8.count == 43, "a session id of another length") }
        }
    case 1:
        guard let checked = ReturnTo.checked(text, configuration: WebFixture.configuration) else { return }
        precondition(!checked.contains("\\") && !checked.unicodeScalars.contains { $0.value < 0x20 }, "a returnTo with a backslash or control character")
        if checked.hasPrefix("/") {
            precondition(!checked.hasPrefix("//"), "a scheme-relative returnTo")
            precondition(WebFixture.configuration.url(checked).host == "app.example", "a path of the app that leaves it")
        } else {
            let host = URL(string: checked)?.host?.lowercased()
            precondition(host == "app.example" || host == "shop.example", "a returnTo to another origin")
        }
    default:
        let request = HTTPRequest(method: .get, scheme: "https", authority: "app.example", path: "/auth/callback?" + text)
        _ = WebSignIn.query(of: request)
        _ = WebSignIn.form(Array(text.utf8))
    }
}
