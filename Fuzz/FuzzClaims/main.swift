// libFuzzer harness for the strict JSON parser and ID-token claims decoding and checks;
// built without --sanitize=fuzzer this program does nothing.
import Foundation
import OAuth2

// Static members, initialized on first use (libFuzzer provides `main`: top-level code never runs).
private enum Fixture {
    static let validator = IDTokenValidator(issuer: "https://op.example", clientID: "c", allowedAlgorithms: [.rs256])
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    do {
        // A claims set is a JWS payload: go through the same strict parser.
        let compact = "eyJhbGciOiJSUzI1NiJ9." + data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "") + ".AA"
        let jws = try JWS(compact: compact)
        // The validator reads claims in one pass (IDTokenClaims(payload:)) and decodes the raw
        // set lazily; it must agree with the full strict parser on every input: the same
        // error, or equal claims (reading `claims` re-parses the bytes, which asserts).
        let eager: Result<IDTokenClaims, JOSEError>
        do throws(JOSEError) { eager = .success(try IDTokenClaims(jws.claims())) } catch { eager = .failure(error) }
        let onePass: Result<IDTokenClaims, JOSEError>
        do throws(JOSEError) { onePass = .success(try IDTokenClaims(payload: Array(data))) } catch { onePass = .failure(error) }
        switch (eager, onePass) {
        case (.success(let eager), .success(let onePass)):
            precondition(onePass.claims == eager.claims && onePass == eager, "the one-pass claims differ")
            precondition(onePass.issuer == eager.issuer && onePass.audiences == eager.audiences && onePass.nonce == eager.nonce
                && onePass.authTime == eager.authTime && onePass.accessTokenHash == eager.accessTokenHash, "the typed claims differ")
        case (.failure(let eager), .failure(let onePass)):
            precondition(eager == onePass, "the one-pass reader fails differently")
        default:
            fatalError("the one-pass reader and the full parser disagree")
        }
        let claims = try onePass.get()
        _ = (claims.email, claims.authTime, claims.claimNames, claims.authenticationMethods, claims.updatedAt, claims.picture)
        try Fixture.validator.check(claims, algorithm: .rs256, expecting: .init(nonce: "n", maxAge: 60, accessToken: "a", authorizationCode: "c", previous: claims), now: Fixture.now)
    } catch _ as JOSEError {
    } catch {
        fatalError("unexpected error type: \(type(of: error))")
    }
    return 0
}
