import Foundation
import Testing
@testable import OAuth2

@Suite struct TokenDocumentTests {
    func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func aMemberNamedTwiceIsCorrupt() throws {
        // Found by FuzzFormats (seed token-document-duplicate-members): read one way, and
        // another way once rewritten. A store never writes one.
        let document = #"{"issuer":"https://id.example.com","client_id":"cli","client_id":"other","access_token":"a","token_type":"bearer"}"#
        let error = try #require(throws: TokenStoreError.self) { try TokenDocument(data: Data(document.utf8)) }
        #expect(error.code == .corrupt)
        #expect(error.message.contains("client_id"))
    }

    @Test func aVersion1MemberNamedLikeAVersion2OneSurvivesTheRewrite() throws {
        // Found by FuzzFormats (seed token-document-v1-round-trip): the flat layout's unknown
        // `issued_at` became a token member, then the written `issued_at` replaced it.
        let text = #"{"issuer":"https://id.example.com","client_id":"cli","access_token":"a","obtained_at":1700000000,"issued_at":1699999999,"server_date":"x","registered":1767.256}"#
        let first = try TokenDocument(data: Data(text.utf8))
        #expect(first.session.tokens.additionalFields["issued_at"] == .integer(1_699_999_999))
        #expect(first.session.tokens.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        let again = try TokenDocument(data: try first.encoded())
        #expect(again.session == first.session)
        let tokens = try #require((try object(try first.encoded())["session"] as? [String: Any])?["tokens"] as? [String: Any])
        #expect(tokens["issued_at"] as? Double == 1_700_000_000)
        let shadowed = try #require(tokens["shadowed_members"] as? [String: Any])
        #expect(shadowed["issued_at"] as? Int == 1_699_999_999)
        #expect(shadowed["server_date"] as? String == "x")
    }

    @Test func unknownMembersNamedLikeKnownOnesAreKeptAtEveryLevel() throws {
        // A server's `issued_at` in its token response (Salesforce sends one), and members
        // an application put in the session and the document, named like the document's own.
        var session = sampleSession(additionalFields: ["tokens": .string("app"), "shadowed_members": .integer(1)])
        session.tokens.additionalFields = ["issued_at": .string("1767222000000"), "scope": .bool(true), "plain": .null]
        let document = TokenDocument(session: session, additionalFields: ["version": .string("mine"), "key": .array([])])
        let decoded = try TokenDocument(data: try document.encoded())
        #expect(decoded.session == session)
        #expect(decoded.additionalFields == document.additionalFields)
        #expect(decoded.version == 2)
    }

    @Test func shadowedMembersMustBeAnObject() throws {
        let text = #"{"version": 2, "key": {"issuer": "i", "client_id": "c", "account": "a"}, "session": {"updated_at": 1, "tokens": {"access_token": "x", "token_type": "Bearer", "issued_at": 1, "shadowed_members": 5}}}"#
        let error = try #require(throws: TokenStoreError.self) { try TokenDocument(data: Data(text.utf8)) }
        #expect(error.code == .corrupt)
        #expect(error.message.contains("session.tokens.shadowed_members"))
    }

    @Test func roundTripsEverySessionMember() throws {
        let session = sampleSession(additionalFields: ["dpop_key": .object(["kty": .string("EC")])])
        let decoded = try TokenDocument(data: try TokenDocument(session: session).encoded())
        #expect(decoded.session == session)
        #expect(decoded.version == 2)
        #expect(!decoded.isLegacy)
    }

    @Test func writesTheVersion2Layout() throws {
        let json = try object(try TokenDocument(session: sampleSession()).encoded())
        #expect(json["version"] as? Int == 2)
        let key = try #require(json["key"] as? [String: Any])
        #expect(key["issuer"] as? String == "https://id.example.com")
        #expect(key["client_id"] as? String == "cli")
        #expect(key["account"] as? String == "alice")
        let session = try #require(json["session"] as? [String: Any])
        #expect(session["subject"] as? String == "248289761001")
        #expect(session["updated_at"] as? Double == 1_767_222_001)
        let tokens = try #require(session["tokens"] as? [String: Any])
        #expect(tokens["access_token"] as? String == "access-1")
        #expect(tokens["token_type"] as? String == "DPoP")
        #expect(tokens["scope"] as? [String] == ["openid", "profile"])
        #expect(tokens["expires_at"] as? Double == 1_767_225_600)
        #expect(tokens["refresh_expires_in"] as? Int == 86400, "a token-response extra sits among the tokens")
    }

    @Test func leavesOutAbsentMembersAndKeepsAnEmptyScopeList() throws {
        var session = sampleSession()
        session.tokens = TokenSet(accessToken: "a", scopes: [], issuedAt: Date(timeIntervalSince1970: 1))
        session.subject = nil
        session.additionalFields = [:]
        let json = try object(try TokenDocument(session: session).encoded())
        let stored = try #require(json["session"] as? [String: Any])
        let tokens = try #require(stored["tokens"] as? [String: Any])
        #expect(Set(tokens.keys) == ["access_token", "token_type", "scope", "issued_at"])
        #expect(Set(stored.keys) == ["tokens", "updated_at"])
        #expect(try TokenDocument(data: try TokenDocument(session: session).encoded()).session == session)
    }

    @Test func keepsUnknownMembersAtEveryLevel() throws {
        let text = """
            {"version": 2, "written_by": "oauth2 9.9", "profile": {"color": "blue"},
             "key": {"issuer": "https://id.example.com", "client_id": "cli", "account": "alice"},
             "session": {"updated_at": 1767222001, "dpop_key": {"kty": "EC", "crv": "P-256"},
                         "tokens": {"access_token": "a", "token_type": "bearer", "issued_at": 1767222000,
                                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}}}
            """
        var document = try TokenDocument(data: Data(text.utf8))
        #expect(document.additionalFields["written_by"] == .string("oauth2 9.9"))
        #expect(document.session.additionalFields["dpop_key"]?.objectValue?["crv"] == .string("P-256"))
        #expect(document.session.tokens.additionalFields["issued_token_type"] != nil)
        #expect(document.session.tokens.tokenType == .bearer)

        document.session.tokens.accessToken = "b"
        let json = try object(try document.encoded())
        #expect(json["written_by"] as? String == "oauth2 9.9")
        #expect((json["profile"] as? [String: String]) == ["color": "blue"])
        let session = try #require(json["session"] as? [String: Any])
        #expect((session["dpop_key"] as? [String: String])?["kty"] == "EC")
        let tokens = try #require(session["tokens"] as? [String: Any])
        #expect(tokens["access_token"] as? String == "b")
        #expect(tokens["issued_token_type"] as? String == "urn:ietf:params:oauth:token-type:access_token")
    }

    static let version1 = """
        {"issuer": "https://id.example.com", "client_id": "cli", "account": "alice",
         "access_token": "old-access", "token_type": "bearer", "refresh_token": "old-refresh",
         "id_token": "old.id.token", "expires_at": 1767225600, "scope": "openid profile",
         "obtained_at": 1767222000, "sub": "248289761001", "client_secret": "s3cret",
         "refresh_expires_in": 86400}
        """

    @Test func readsTheFlatVersion1Layout() throws {
        let document = try TokenDocument(data: Data(Self.version1.utf8))
        #expect(document.version == 1)
        #expect(document.isLegacy)
        let session = document.session
        #expect(session.key == TokenSessionKey(issuer: "https://id.example.com", clientID: "cli", account: "alice"))
        #expect(session.tokens.accessToken == "old-access")
        #expect(session.tokens.tokenType == .bearer)
        #expect(session.tokens.refreshToken == "old-refresh")
        #expect(session.tokens.idToken == "old.id.token")
        #expect(session.tokens.expiresAt == Date(timeIntervalSince1970: 1_767_225_600))
        #expect(session.tokens.scopes == ["openid", "profile"])
        #expect(session.tokens.issuedAt == Date(timeIntervalSince1970: 1_767_222_000))
        #expect(session.tokens.additionalFields == ["refresh_expires_in": .integer(86400)])
        #expect(session.subject == "248289761001")
        #expect(session.additionalFields["client_secret"] == "s3cret", "a 0.0.x secret is kept as a member of the session")
        #expect(session.updatedAt == Date(timeIntervalSince1970: 1_767_222_000))

        let rewritten = try TokenDocument(data: try document.encoded())
        #expect(rewritten.version == 2)
        #expect(rewritten.session == session)
    }

    @Test func readsVersion1WithAnExplicitVersionAndDefaults() throws {
        let text = #"{"version": 1, "issuer": "https://i", "client_id": "c", "access_token": "a"}"#
        let session = try TokenDocument(data: Data(text.utf8)).session
        #expect(session.key.account == "default")
        #expect(session.tokens.tokenType == .bearer)
        #expect(session.tokens.scopes == nil)
    }

    @Test func readsANewerVersionThatDeclaresItselfCompatible() throws {
        let text = """
            {"version": 3, "compatible_version": 2, "sessions_shared_with": ["b"],
             "key": {"issuer": "https://i", "client_id": "c", "account": "a"},
             "session": {"updated_at": 1, "tokens": {"access_token": "x", "token_type": "Bearer", "issued_at": 1}}}
            """
        var document = try TokenDocument(data: Data(text.utf8))
        #expect(document.version == 3)
        #expect(document.compatibleVersion == 2)
        #expect(!document.isLegacy)
        document.session.tokens.accessToken = "y"
        let json = try object(try document.encoded())
        #expect(json["version"] as? Int == 3, "rewriting keeps the newer version")
        #expect(json["compatible_version"] as? Int == 2)
        #expect(json["sessions_shared_with"] as? [String] == ["b"])
    }

    @Test(arguments: [
        (#"{"version": 3, "key": {}, "session": {}}"#, 3),
        (#"{"version": 7, "compatible_version": 5}"#, 7),
    ])
    func refusesANewerIncompatibleVersion(_ text: String, version: Int) throws {
        let error = try #require(throws: TokenStoreError.self) { try TokenDocument(data: Data(text.utf8)) }
        #expect(error.code == .unsupportedVersion)
        #expect(error.version == version)
    }

    @Test(arguments: [
        "",
        "[]",
        "{",
        "null",
        #"{"version": 2}"#,
        #"{"version": "two"}"#,
        #"{"version": 0}"#,
        #"{"version": 2, "key": {"issuer": "i", "client_id": "c", "account": "a"}, "session": {"updated_at": 1, "tokens": {"token_type": "Bearer", "issued_at": 1}}}"#,
        #"{"version": 2, "key": {"issuer": "i", "client_id": "c", "account": "a"}, "session": {"updated_at": 1, "tokens": {"access_token": "x", "token_type": "MAC", "issued_at": 1}}}"#,
        #"{"version": 2, "key": {"issuer": "i", "client_id": "c", "account": "a"}, "session": {"updated_at": 1, "tokens": {"access_token": "x", "token_type": "Bearer", "issued_at": 1, "scope": "openid"}}}"#,
        #"{"version": 2, "key": {"issuer": "i", "client_id": "c", "account": "a"}, "session": {"updated_at": "yesterday", "tokens": {"access_token": "x", "token_type": "Bearer", "issued_at": 1}}}"#,
        #"{"version": 2, "key": "i c a", "session": {}}"#,
        #"{"issuer": "i", "client_id": "c", "access_token": 42}"#,
        #"{"client_id": "c", "access_token": "x"}"#,
    ])
    func callsUnreadableDocumentsCorrupt(_ text: String) throws {
        let error = try #require(throws: TokenStoreError.self) { try TokenDocument(data: Data(text.utf8)) }
        #expect(error.code == .corrupt)
    }

    @Test func errorsNameMembersButNeverTheirValues() throws {
        let text = #"{"issuer": "i", "client_id": "c", "access_token": "top-secret-token", "refresh_token": ["top-secret-refresh"]}"#
        let error = try #require(throws: TokenStoreError.self) { try TokenDocument(data: Data(text.utf8)) }
        #expect(error.description.contains("refresh_token"))
        #expect(!error.description.contains("top-secret"))
    }
}
