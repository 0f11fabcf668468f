import ArgumentParser
import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// `oauth2 token --format bare|header|json|env`.
@Suite struct TokenOutputTests {
    let expiry = Date(timeIntervalSince1970: 1_800_000_123.75)

    @Test func bareIsTheTokenAsToday() {
        #expect(TokenOutput.bare.render(TokenSet(accessToken: "at-1")) == "at-1")
        let token = try? OAuth2Command.parseAsRoot(["token"]) as? TokenCommand
        #expect(token?.format == .bare, "the default")
    }

    @Test func headerNamesTheTokenType() {
        #expect(TokenOutput.header.render(TokenSet(accessToken: "at-1")) == "Authorization: Bearer at-1")
        #expect(TokenOutput.header.render(TokenSet(accessToken: "at-2", tokenType: .dpop)) == "Authorization: DPoP at-2")
    }

    @Test func jsonHasTheTokenItsTypeExpiryAndScope() throws {
        let tokens = TokenSet(accessToken: "at-1", refreshToken: "rt-secret", idToken: "id-secret", expiresAt: expiry, scopes: ["openid", "api"], issuedAt: expiry.addingTimeInterval(-3600))
        let text = TokenOutput.json.render(tokens)
        let object = try #require(JSONValue.parseObject(Data(text.utf8)))
        #expect(object == [
            "access_token": "at-1", "token_type": "Bearer", "expires_at": "2027-01-15T08:02:03Z", "scope": "openid api",
        ])
        #expect(!text.contains("rt-secret") && !text.contains("id-secret"), "only the access token")
        let unknown = try #require(JSONValue.parseObject(Data(TokenOutput.json.render(TokenSet(accessToken: "at-2", tokenType: .dpop)).utf8)))
        #expect(unknown["expires_at"] == .null && unknown["scope"] == .null && unknown["token_type"] == "DPoP")
    }

    @Test func jsonReadsAJWTsExpiryAsTheSessionDoes() throws {
        let exp = Int(expiry.timeIntervalSince1970)
        let jwt = "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(Data(#"{"exp":\#(exp)}"#.utf8)) + ".c2ln"
        let object = try #require(JSONValue.parseObject(Data(TokenOutput.json.render(TokenSet(accessToken: jwt)).utf8)))
        #expect(object["expires_at"] == "2027-01-15T08:02:03Z")
    }

    @Test func envIsOneLineAShellReadsBackAsItWas() throws {
        #expect(TokenOutput.env.render(TokenSet(accessToken: "at-1")) == "OAUTH2_ACCESS_TOKEN='at-1'")
        #expect(TokenOutput.env.render(TokenSet(accessToken: "at-1"), variable: "GH_TOKEN") == "GH_TOKEN='at-1'")
        let nasty = #"a'b"c$(touch x)`id`\n$HOME *;"#
        #expect(TokenOutput.shellQuoted(nasty) == #"'a'\''b"c$(touch x)`id`\n$HOME *;'"#)
        // In single quotes nothing is special but the quote itself, which ends the quoted
        // part, is escaped, and opens a new one: the POSIX shell rule (XCU 2.2.2).
        #expect(TokenOutput.shellQuoted("") == "''")
    }

    @Test func variableNamesAreWhatAShellAccepts() {
        for name in ["OAUTH2_ACCESS_TOKEN", "GH_TOKEN", "_x", "a1"] { #expect(TokenOutput.isVariableName(name), "\(name)") }
        for name in ["", "1A", "A-B", "A B", "A=B", "É", "$A"] { #expect(!TokenOutput.isVariableName(name), "\(name)") }
    }

    @Test func envVarGoesWithFormatEnvAndAName() throws {
        #expect((try OAuth2Command.parseAsRoot(["token", "--format", "env", "--env-var", "T"]) as? TokenCommand)?.envVar == "T")
        for arguments in [["token", "--env-var", "T"], ["token", "--format", "json", "--env-var", "T"], ["token", "--format", "env", "--env-var", "1T"], ["token", "--format", "yaml"]] {
            #expect(throws: (any Error).self, "\(arguments)") { try OAuth2Command.parseAsRoot(arguments) }
        }
    }
}
