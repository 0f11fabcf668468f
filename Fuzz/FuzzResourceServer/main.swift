// libFuzzer harness for what an API receives from outside: the Authorization header, a JWT
// access token (signature and RFC 9068 claims) and a DPoP proof. The first byte picks which;
// the rest is the input. Built without --sanitize=fuzzer this program does nothing.
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
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard let selector = bytes.first else { return 0 }
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    // Every failure is an AccessTokenError (typed throws): the harness looks for crashes,
    // hangs and leaks, and for an accepted input where none can be.
    do throws(AccessTokenError) {
        switch selector % 3 {
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
        default:
            _ = try Fixture.dpop.check(text, method: .get, path: "/r", accessToken: "t")
            fatalError("a proof without the server's nonce was accepted")
        }
    } catch {
        precondition(!error.message.isEmpty, "an error without a message")
    }
    return 0
}
