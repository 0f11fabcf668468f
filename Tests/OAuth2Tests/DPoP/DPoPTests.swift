import Crypto
import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Reads a compact JWS back: header, claims, and whether the header's own `jwk` verifies it.
struct DecodedProof {
    let jws: JWS
    let header: [String: JSONValue]
    let claims: [String: JSONValue]
    let jwk: JSONWebKey

    init(_ compact: String) throws {
        jws = try JWS(compact: compact)
        header = jws.header
        claims = try jws.claims()
        jwk = try JSONWebKey(try #require(header["jwk"]?.objectValue))
    }

    var verifiesWithItsOwnKey: Bool { jws.isSigned(by: jwk) }
}

@Suite struct DPoPProofTests {
    static let url = URL(string: "https://server.example.com/token")!

    @Test(arguments: DPoPKey.supportedAlgorithms)
    func aProofHasTheRFC9449HeaderAndVerifiesWithItsJWK(algorithm: JWSAlgorithm) throws {
        let key = try DPoPKey.generate(algorithm)
        let proof = try DecodedProof(key.proof(method: .post, url: Self.url))
        #expect(proof.header["typ"] == "dpop+jwt")
        #expect(proof.header["alg"]?.stringValue == algorithm.rawValue)
        #expect(proof.header["kid"] == nil)
        #expect(proof.verifiesWithItsOwnKey)
        // The jwk header holds the RFC 7638 required members and nothing private.
        let members = Set(try #require(proof.header["jwk"]?.objectValue).keys)
        let expected: Set<String> = switch algorithm {
        case .es256, .es384, .es512: ["kty", "crv", "x", "y"]
        case .edDSA: ["kty", "crv", "x"]
        default: ["kty", "n", "e"]
        }
        #expect(members == expected)
        #expect(proof.jwk.thumbprint == key.thumbprint)
    }

    @Test func theClaimsNameTheRequest() throws {
        let key = try DPoPKey.generate()
        let issued = Date(timeIntervalSince1970: 1_700_000_000.7)
        let proof = try DecodedProof(key.proof(method: .post, url: Self.url, nonce: "n-1", issuedAt: issued))
        #expect(proof.claims["htm"] == "POST")
        #expect(proof.claims["htu"] == "https://server.example.com/token")
        #expect(proof.claims["iat"] == .integer(1_700_000_000))
        #expect(proof.claims["nonce"] == "n-1")
        #expect(proof.claims["ath"] == nil, "no access token, no ath")
        #expect(try #require(proof.claims["jti"]?.stringValue).count >= 22)
        #expect(Set(proof.claims.keys) == ["jti", "htm", "htu", "iat", "nonce"])
    }

    @Test func everyProofHasItsOwnJTI() throws {
        let key = try DPoPKey.generate()
        let ids = try (0..<200).map { _ in try DecodedProof(key.proof(method: .get, url: Self.url)).claims["jti"]?.stringValue }
        #expect(Set(ids.compactMap { $0 }).count == 200)
    }

    /// RFC 9449 §7.1: the example access token and its `ath`.
    @Test func athIsTheBase64urlSHA256OfTheAccessToken() throws {
        let token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
        #expect(DPoPProof.accessTokenHash(token) == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
        let proof = try DecodedProof(DPoPKey.generate().proof(method: .get, url: URL(string: "https://resource.example.org/protectedresource")!, accessToken: token))
        #expect(proof.claims["ath"] == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
        #expect(proof.claims["htm"] == "GET")
    }

    @Test(arguments: [
        ("https://server.example.com/token", "https://server.example.com/token"),
        ("HTTPS://Server.Example.COM:443/token?x=1#frag", "https://server.example.com/token"),
        ("http://127.0.0.1:80", "http://127.0.0.1/"),
        ("http://127.0.0.1:4593/api/oidc/token", "http://127.0.0.1:4593/api/oidc/token"),
        ("https://user:pw@api.example.com:8443/a/b?q", "https://api.example.com:8443/a/b"),
        ("https://api.example.com/p%7e/%2f/%7A", "https://api.example.com/p~/%2F/z"),
        ("https://api.example.com/a/./b/../c", "https://api.example.com/a/c"),
        ("https://api.example.com/Case/Kept", "https://api.example.com/Case/Kept"),
        ("https://[::1]:8443/x", "https://[::1]:8443/x"),
        // No host: only query and fragment go; the path is not normalised into an authority.
        ("http:a//b:80http://c/./x?q#f", "http:a//b:80http://c/./x"),
        ("TPS://]r@Ex%5f\u{651}", "tps://xn--ex_-okh/"),
        ("https://B%c3%a4r.example/", "https://b%C3%A4r.example/"),
    ])
    func htuIsNormalisedWithoutQueryAndFragment(url: String, htu: String) throws {
        let normalised = DPoPProof.targetURI(for: try #require(URL(string: url)))
        #expect(normalised == htu)
        // Idempotent: normalising the htu again changes nothing (found by fuzzing).
        #expect(DPoPProof.targetURI(for: try #require(URL(string: normalised))) == normalised)
    }

    @Test func theHeadersCarryTheProofAndTheDPoPAuthorization() throws {
        let key = try DPoPKey.generate()
        let fields = try key.headers(method: .get, url: URL(string: "https://api.example.com/me?x=1")!, accessToken: "at-1")
        #expect(fields[.authorization] == "DPoP at-1")
        let proof = try DecodedProof(try #require(fields[HTTPField.Name("DPoP")!]))
        #expect(proof.claims["htu"] == "https://api.example.com/me")
        #expect(proof.claims["ath"]?.stringValue == DPoPProof.accessTokenHash("at-1"))
    }

    /// The thumbprint, computed here from the RFC 7638 recipe: SHA-256 of the required
    /// members in lexical order, no whitespace.
    @Test(arguments: [JWSAlgorithm.es256, .edDSA, .rs256])
    func theThumbprintFollowsRFC7638(algorithm: JWSAlgorithm) throws {
        let key = try DPoPKey.generate(algorithm)
        let jwk = key.publicJWK
        let json = "{" + jwk.keys.sorted().map { "\"\($0)\":\"\(jwk[$0]!.stringValue!)\"" }.joined(separator: ",") + "}"
        let expected = Data(SHA256.hash(data: Data(json.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(key.thumbprint == expected)
    }

    /// RFC 7638 §3.1's example key and its thumbprint (`kid`, `alg` and other members do not count).
    @Test func theRFC7638ExampleThumbprint() throws {
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        let publicKey = try JSONWebKey(["kty": "RSA", "n": .string(n), "e": "AQAB", "alg": "RS256", "kid": "2011-04-29"])
        #expect(publicKey.thumbprint == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    @Test func aKeyRoundTripsThroughItsPrivateJWK() throws {
        for algorithm in [JWSAlgorithm.es256, .es384, .es512, .edDSA, .ps256] {
            let key = try DPoPKey.generate(algorithm)
            let jwk = key.privateJWK
            #expect(jwk["d"] != nil)
            #expect(jwk["alg"]?.stringValue == algorithm.rawValue)
            let reloaded = try DPoPKey(jwk: jwk)
            #expect(reloaded.thumbprint == key.thumbprint)
            #expect(reloaded.algorithm == algorithm)
            // A proof by the reloaded key verifies with the original public key.
            let proof = try DecodedProof(reloaded.proof(method: .post, url: Self.url))
            #expect(proof.jws.isSigned(by: try JSONWebKey(key.publicJWK)))
        }
    }

    @Test func aDPoPKeyIsAsymmetric() {
        #expect(throws: JOSEError.self) { try DPoPKey.generate(.hs256) }
        #expect(throws: JOSEError.self) { try DPoPKey(JWSSigningKey(secret: "0123456789abcdef0123456789abcdef")) }
    }

    @Test func theServersAlgorithmsChooseTheKey() throws {
        func metadata(_ algorithms: [String]?) -> ServerMetadata {
            ServerMetadata(issuer: URL(string: "https://as.example.com")!,
                additionalFields: algorithms.map { ["dpop_signing_alg_values_supported": .array($0.map(JSONValue.string))] } ?? [:])
        }
        #expect(try DPoPKey.generate(for: metadata(nil)).algorithm == .es256)
        #expect(try DPoPKey.generate(for: metadata(["RS256", "ES256"])).algorithm == .es256)
        #expect(try DPoPKey.generate(for: metadata(["EdDSA", "RS256"])).algorithm == .edDSA)
        #expect(throws: JOSEError.self) { try DPoPKey.generate(for: metadata(["HS256"])) }
    }

    @Test func theDescriptionShowsNoPrivateKey() throws {
        let key = try DPoPKey.generate()
        let d = try #require(key.privateJWK["d"]?.stringValue)
        #expect(!key.description.contains(d))
        #expect(key.description.contains(key.thumbprint))
    }
}

@Suite struct DPoPNonceCacheTests {
    @Test func noncesAreKeptPerOrigin() async {
        let cache = DPoPNonceCache()
        await cache.remember("n-as", for: URL(string: "https://AS.example.com:443/token")!)
        #expect(await cache.nonce(for: URL(string: "https://as.example.com/par")!) == "n-as")
        #expect(await cache.nonce(for: URL(string: "https://as.example.com:8443/token")!) == nil)
        #expect(await cache.nonce(for: URL(string: "http://as.example.com/token")!) == nil)
        await cache.remember("n-as-2", for: URL(string: "https://as.example.com/token")!)
        #expect(await cache.nonce(for: URL(string: "https://as.example.com/token")!) == "n-as-2", "the latest wins")
    }

    @Test(arguments: ["", "a b", "quote\"d", "back\\slash", "new\nline", String(repeating: "x", count: 1025), "é"])
    func anInvalidNonceIsIgnored(nonce: String) async {
        let cache = DPoPNonceCache()
        await cache.remember(nonce, for: URL(string: "https://as.example.com")!)
        #expect(await cache.nonce(for: URL(string: "https://as.example.com")!) == nil)
    }

    @Test func theOldestServerIsForgottenBeyondCapacity() async {
        let store = MemoryDPoPNonceStore()
        #expect(store.capacity == 64)
        let cache = DPoPNonceCache(store: store)
        for index in 0...store.capacity {
            await cache.remember("n\(index)", for: URL(string: "https://s\(index).example.com")!)
        }
        #expect(await cache.nonce(for: URL(string: "https://s0.example.com")!) == nil)
        #expect(await cache.nonce(for: URL(string: "https://s1.example.com")!) == "n1")
    }

    @Test func theStoreIsKeyedByOrigin() async {
        let store = MemoryDPoPNonceStore(capacity: 0)
        #expect(store.capacity == 1)
        let cache = DPoPNonceCache(store: store)
        await cache.remember("n-1", for: URL(string: "HTTPS://AS.example.com/token")!)
        #expect(await store.nonce(forOrigin: "https://as.example.com:443") == "n-1")
        await cache.remember("n-2", for: URL(string: "http://127.0.0.1:8080/api")!)
        #expect(await store.nonce(forOrigin: "http://127.0.0.1:8080") == "n-2")
        #expect(await store.nonce(forOrigin: "https://as.example.com:443") == nil, "one server at most")
    }
}
