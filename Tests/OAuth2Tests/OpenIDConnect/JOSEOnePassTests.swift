import Foundation
import Testing
@testable import OAuth2

/// The one-pass readers of the ID-token hot path (`StrictJSON.scanObject`,
/// `JOSEJSON.members`, `IDTokenClaims(payload:)`, the lazily decoded header and claims)
/// against the full strict parser: the same documents accepted, the same errors, the same
/// values.
@Suite struct JOSEOnePassTests {
    /// Documents around every rule: plain, whitespace, nesting, escapes, non-ASCII names,
    /// canonically equivalent names, duplicates at every level, many members, not objects.
    static let documents: [String] = [
        #"{}"#, #" { } "#, #"{"alg":"RS256"}"#, "{\n\t\"alg\" : \"RS256\" ,\"kid\":\"k\"}\r\n",
        #"{"alg":"RS256","kid":7}"#, #"{"alg":"RS256","crit":[]}"#, #"{"typ":"JWT"}"#,
        #"{"alg":"RS256","alg":"none"}"#, #"{"x":1,"alg":"a","y":{"z":[1,{"q":null}]},"alg":"b"}"#,
        #"{"alg":"RS256","x":{"a":1,"a":2}}"#, #"{"x":[{"a":1,"a":2}],"alg":"RS256"}"#,
        #"{"\u0061lg":"RS256"}"#, #"{"alg":"RS256","\u0061lg":"none"}"#, #"{"é":1,"alg":"x"}"#,
        #"{"K":1,"\u212A":2}"#, "{\"K\":1,\"\u{212A}\":2}", "{\"e\u{301}\":1,\"\u{E9}\":2}",
        #"{"alg":"RS256","s":"a\"b\\c\u00e9\ud83d\ude00","n":-1.5e3,"t":true,"f":false,"z":null}"#,
        #"{"alg":"RS256","s":"é😀"}"#, #"{"alg":"x","big":123456789012345678901234567890}"#,
        #"{"alg":"RS256",}"#, #"{"alg" "RS256"}"#, #"{"alg":"RS256"} x"#, #"{"alg":"RS256""#, #"{"alg"#,
        #"{"alg":01}"#, #"{"alg":"\x"}"#, #"{"alg":"\ud800"}"#, "{\"alg\":\"a\u{01}\"}", "{\"a\u{01}\":1}",
        #"{alg:1}"#, #"["alg"]"#, #"[{"a":1,"a":2}]"#, #""alg""#, "", " ", "null", #"{"a":1}{"#,
        "\u{FEFF}{}", #"{"a":tru}"#, #"{"a":nul}"#, #"{"a":[1,]}"#,
        String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
        #"{"a":"# + String(repeating: "[", count: 31) + String(repeating: "]", count: 31) + "}",
        #"{"a":"# + String(repeating: "[", count: 32) + String(repeating: "]", count: 32) + "}",
        "{" + (0..<70).map { #""m\#($0)":\#($0)"# }.joined(separator: ",") + "}",
        "{" + (0..<70).map { #""m\#($0)":\#($0)"# }.joined(separator: ",") + #","m3":0}"#,
        "{" + (0..<64).map { #""m\#($0)":\#($0)"# }.joined(separator: ",") + #","alg":"x"}"#,
    ]

    static let names: JSONMemberNames = ["alg", "kid", "typ", "crit"]

    /// What `JOSEJSON.members` reads, or its error.
    func scanned(_ bytes: [UInt8]) -> Result<[String: JSONValue], JOSEError> {
        var found: [String: JSONValue] = [:]
        do throws(JOSEError) {
            _ = try JOSEJSON.members(bytes, named: Self.names, what: "doc") { slot, value in found[Self.names.names[slot].description] = value }
            return .success(found)
        } catch {
            return .failure(error)
        }
    }

    /// The same members read from the full parser's object, or its error.
    func parsed(_ bytes: [UInt8]) -> Result<[String: JSONValue], JOSEError> {
        do throws(JOSEError) {
            let object = try JOSEJSON.object(bytes, what: "doc")
            return .success(object.filter { member in Self.names.names.contains { $0.description == member.key } })
        } catch {
            return .failure(error)
        }
    }

    @Test(arguments: documents)
    func theOnePassReaderAgreesWithTheFullParser(_ document: String) {
        let bytes = Array(document.utf8)
        #expect(scanned(bytes) == parsed(bytes))
    }

    /// The packed lookup (length and first eight bytes, then the rest) finds exactly the
    /// names it holds: not a prefix, an extension, a name differing only after its eighth
    /// byte, nor one differing only in case.
    @Test func memberNamesFindExactlyTheirNames() {
        let names: JSONMemberNames = ["", "a", "iss", "client_id", "client_ix", "auth_time", "abcdefgh", "abcdefghijklmnopq"]
        func slot(_ name: String) -> Int? {
            var name = name
            return name.withUTF8 { names.slot(of: UnsafeRawBufferPointer($0)) }
        }
        for (expected, name) in names.names.enumerated() { #expect(slot(name.description) == expected, "\(name)") }
        for miss in ["b", "is", "isss", "ISS", "client_i", "client_id_", "client_iy", "auth_timf", "abcdefg", "abcdefghi", "abcdefghijklmnopr", "abcdefghijklmnop"] {
            #expect(slot(miss) == nil, "\(miss)")
        }
    }

    @Test func theOnePassReaderRefusesDuplicatesAtEveryDepth() {
        for document in [#"{"alg":"a","alg":"b"}"#, #"{"x":1,"x":2}"#, #"{"x":{"y":1,"y":2}}"#, #"{"\u0078":1,"x":2}"#, "{\"K\":1,\"\u{212A}\":2}"] {
            guard case .failure(let error) = scanned(Array(document.utf8)) else {
                Issue.record("accepted \(document)")
                continue
            }
            #expect(error.reason == .duplicateMember, "\(document)")
        }
    }

    @Test func invalidUTF8IsRefusedInNamesAndSkippedValues() {
        for bytes: [UInt8] in [
            Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),
            Array(#"{""#.utf8) + [0xC3, 0x28] + Array(#"":1}"#.utf8),
            Array(#"{"alg":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
        ] {
            #expect(scanned(bytes) == parsed(bytes))
            #expect(throws: JOSEError.self) { try JOSEJSON.members(bytes, named: Self.names, what: "doc") { _, _ in } }
        }
    }

    static let payloads: [String] = [
        #"{"iss":"https://op.example","sub":"alice","aud":"client","exp":1800000300,"iat":1800000000,"nonce":"n-1","at_hash":"x","c_hash":"y","azp":"client","auth_time":1799999000,"email":"a@example.com","amr":["pwd"],"address":{"country":"FR"}}"#,
        #"{"iss":"i","sub":"s","aud":["a","b"],"exp":1.5,"iat":0}"#,
        #"{"\u0069ss":"i","sub":"s","aud":"a","exp":1,"iat":0,"name":"Zoë"}"#,
        #"{"iss":"i","sub":"s","aud":"a","exp":1,"iat":0,"iss":"j"}"#,
        #"{"iss":"i","sub":"s","aud":"a","exp":1,"iat":0,"x":{"k":1,"k":2}}"#,
        #"{"iss":"i","sub":"s","aud":"a","exp":1,"iat":0,"nonce":3}"#,
        #"{"iss":"i","sub":"s","aud":[1],"exp":1,"iat":0}"#,
        #"{"iss":"i","sub":"","aud":"a","exp":1,"iat":0}"#,
        #"{"iss":"i","sub":"s","aud":"a","exp":"1","iat":0}"#,
        #"{"iss":"i","sub":"s","aud":"a","exp":1}"#,
        #"{"iss":"i","sub":"s","aud":"a","exp":1,"iat":0,"auth_time":"now"}"#,
        #"{"sub":"s"}"#, #"{"iss":"i","sub":"s","aud":"a","exp":1,"iat":0"#, "[]",
    ]

    @Test(arguments: payloads)
    func claimsFromBytesEqualClaimsFromTheDictionary(_ payload: String) {
        let bytes = Array(payload.utf8)
        let eager: Result<IDTokenClaims, JOSEError>
        do throws(JOSEError) { eager = .success(try IDTokenClaims(JOSEJSON.object(bytes, what: "claims set"))) } catch { eager = .failure(error) }
        let lazy: Result<IDTokenClaims, JOSEError>
        do throws(JOSEError) { lazy = .success(try IDTokenClaims(payload: bytes)) } catch { lazy = .failure(error) }
        switch (eager, lazy) {
        case (.success(let eager), .success(let lazy)):
            #expect(lazy == eager)
            #expect(lazy.hashValue == eager.hashValue)
            #expect(lazy.claims == eager.claims)
            #expect(lazy.issuer == eager.issuer && lazy.subject == eager.subject && lazy.audiences == eager.audiences)
            #expect(lazy.expiresAt == eager.expiresAt && lazy.issuedAt == eager.issuedAt && lazy.authTime == eager.authTime)
            #expect(lazy.nonce == eager.nonce && lazy.authorizedParty == eager.authorizedParty)
            #expect(lazy.accessTokenHash == eager.accessTokenHash && lazy.codeHash == eager.codeHash)
            #expect(lazy.email == eager.email && lazy.authenticationMethods == eager.authenticationMethods)
        case (.failure(let eager), .failure(let lazy)):
            #expect(lazy == eager)
        default:
            Issue.record("the paths disagree on \(payload): \(eager) vs \(lazy)")
        }
    }

    @Test func theRawClaimsAreDecodedOnceAndSharedAcrossTasks() async throws {
        let payload = Array(Self.payloads[0].utf8)
        let claims = try IDTokenClaims(payload: payload)
        let expected = try JOSEJSON.object(payload, what: "claims set")
        let results = await withTaskGroup(of: [String: JSONValue].self) { group in
            for _ in 0..<16 { group.addTask { claims.claims } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 16 && results.allSatisfy { $0 == expected })
        #expect(claims[claim: "address"] == .object(["country": "FR"]))
    }

    @Test func theHeaderIsReadInOnePassAndDecodedOnDemand() throws {
        let header = #"{"alg":"ES256","kid":"k1","typ":"JWT","x5t":"abc","nested":{"a":[1,2]}}"#
        let jws = try JWS(compact: Base64URL.encode(Data(header.utf8)) + ".e30.AA")
        #expect(jws.algorithm == .es256 && jws.keyID == "k1" && jws.type == "JWT")
        #expect(jws.header == (try JOSEJSON.object(Array(header.utf8), what: "JOSE header")))
        // An escaped name takes the full parser's path: still read, still checked.
        let escaped = try JWS(compact: Base64URL.encode(Data(#"{"\u0061lg":"ES256","k\u0069d":"k2"}"#.utf8)) + ".e30.AA")
        #expect(escaped.algorithm == .es256 && escaped.keyID == "k2" && escaped.header["alg"] == "ES256")
        for duplicate in [#"{"alg":"ES256","\u0061lg":"none"}"#, #"{"alg":"ES256","x":{"y":1,"y":2}}"#, #"{"alg":"ES256","kid":"a","kid":"b"}"#] {
            #expect(reason { try JWS(compact: Base64URL.encode(Data(duplicate.utf8)) + ".e30.AA") } == .duplicateMember, "\(duplicate)")
        }
        #expect(reason { try JWS(compact: Base64URL.encode(Data(#"{"\u0063rit":["x"],"alg":"ES256"}"#.utf8)) + ".e30.AA") } == .unsupportedCritical)
    }

    @Test func theValidatorRefusesDuplicateClaimsOnEveryPath() throws {
        let key = try JWSSigningKey.generate(.es256, keyID: "k")
        let keys = JSONWebKeySet(keys: [key.publicKey!])
        let validator = IDTokenValidator(issuer: "i", clientID: "c", allowedAlgorithms: [.es256])
        let base = #""iss":"i","sub":"s","aud":"c","exp":1800000300,"iat":1800000000"#
        for extra in [#","iss":"j""#, #","\u0069ss":"j""#, #","x":{"y":1,"y":2}"#, #","x":[{"y":1,"y":2}]"#, #","nonce":"a","nonce":"a""#] {
            let token = try key.sign(payload: Data(("{" + base + extra + "}").utf8))
            #expect(reason { try validator.validate(token, keys: keys, expecting: .init(), now: Date(timeIntervalSince1970: 1_800_000_000)) } == .duplicateMember, "\(extra)")
        }
        let token = try key.sign(payload: Data(("{" + base + #","\u006eonce":"n"}"#).utf8))
        let valid = try validator.validate(token, keys: keys, expecting: .init(nonce: "n"), now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(valid.claims.nonce == "n" && valid.header["kid"] == "k")
        #expect(reason { try validator.validate(token, keys: keys, expecting: .init(nonce: "m"), now: Date(timeIntervalSince1970: 1_800_000_000)) } == .nonceMismatch)
    }

    @Test(arguments: JWSAlgorithm.asymmetric + JWSAlgorithm.hmac + [.none])
    func halfHashMatchingAgreesWithTheEncodedHash(_ algorithm: JWSAlgorithm) throws {
        for text in ["", "a", "the-access-token-\(UUID().uuidString)", "é😀"] {
            guard let expected = algorithm.halfHash(of: text) else {
                #expect(algorithm.halfHashMatches("x", of: text) == nil)
                continue
            }
            #expect(algorithm.halfHashMatches(expected, of: text) == true)
            #expect(algorithm.halfHashMatches(String(expected.dropLast()), of: text) == false)
            #expect(algorithm.halfHashMatches(expected + "A", of: text) == false)
            #expect(algorithm.halfHashMatches("", of: text) == false)
        }
    }

    @Test func base64URLDecodesIntoDataAsIntoBytes() {
        for text in ["", "QQ", "QUI", "QUJD", "QR", "QUJ", "A", "QUJD=", "QU+D", "_-_-", String(repeating: "AQID", count: 100) + "BA"] {
            let bytes = Array(text.utf8)
            bytes.withUnsafeBytes { bytes in
                #expect(Base64URL.decodeData(bytes) == Base64URL.decodeBytes(bytes).map { Data($0) }, "\(text)")
            }
        }
    }
}
