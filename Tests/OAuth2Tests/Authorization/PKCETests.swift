import Foundation
import Testing
@testable import OAuth2

@Suite struct PKCETests {
    @Test func matchesRFC7636AppendixB() throws {
        let pkce = try PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(pkce.method == "S256")
    }

    @Test(arguments: [43, 64, 128])
    func generatesVerifiersOfTheAskedLength(_ length: Int) throws {
        let pkce = try PKCE(length: length)
        #expect(pkce.verifier.count == length)
        #expect(try PKCE(verifier: pkce.verifier).challenge == pkce.challenge)
    }

    @Test func verifiersAreUnique() throws {
        let verifiers = try (0..<100).map { _ in try PKCE().verifier }
        #expect(Set(verifiers).count == 100)
    }

    @Test(arguments: [42, 129])
    func refusesBadLengths(_ length: Int) {
        #expect(throws: OAuth2Error.self) { try PKCE(length: length) }
    }

    @Test func refusesCharactersOutsideUnreserved() {
        #expect(throws: OAuth2Error.self) { try PKCE(verifier: String(repeating: "a", count: 42) + "+") }
    }

    @Test func descriptionHidesTheVerifier() throws {
        let pkce = try PKCE()
        #expect(!pkce.description.contains(pkce.verifier))
    }
}
