import Foundation
import Testing
@testable import OAuth2

/// `OAuth2Error.Code.isDeclared` tells the library's own codes from any other word a server
/// (or a callback URL anyone can write) puts in `error`: a page names the first, never the
/// second.
@Suite struct DeclaredCodeTests {
    @Test("the codes of RFC 6749, OpenID Connect, DPoP and the library's own are declared")
    func registeredAndOwnCodesAreDeclared() {
        for code: OAuth2Error.Code in [.invalidGrant, .accessDenied, .loginRequired, .useDPoPNonce, .stateMismatch, .timeout, .signInRequired] {
            #expect(code.isDeclared, "\(code.rawValue)")
        }
    }

    @Test("a word a server or a callback URL made up is not declared, even when it looks like one")
    func otherWordsAreNotDeclared() {
        for word in ["", "invalid_grant ", "Invalid_Grant", "scope_invalid", "<script>alert(1)</script>", "please_call_555_0100"] {
            #expect(!OAuth2Error.Code(rawValue: word).isDeclared, "\(word)")
        }
    }

    @Test("every code the type declares is in the declared set")
    func theSetListsEveryDeclaration() throws {
        // The declarations, counted in the source: a code added without joining the set fails here.
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/OAuth2/Errors/OAuth2Error.swift")
        let text = try String(contentsOf: source, encoding: .utf8)
        let declarations = text.split(separator: "\n").filter { $0.contains("public static let ") && $0.contains(": Code = \"") }
        #expect(declarations.count == OAuth2Error.Code.declared.count)
        #expect(declarations.count >= 44)
    }
}
