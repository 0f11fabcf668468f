import Crypto
import Foundation
@testable import OAuth2JOSE
import Testing

@Suite("JWE (RFC 7516, 7518): decryption, encryption, and what is refused")
struct JWETests {
    static let plaintext = Data("{\"sub\":\"alice\"}".utf8)
    static let pairs: [(JWEKeyAlgorithm, String)] = [
        (.rsaOAEP256, "RSA"), (.rsaOAEP, "RSA"), (.ecdhES, "P-256"), (.ecdhESA128KW, "P-256"),
        (.ecdhESA192KW, "P-384"), (.ecdhESA256KW, "P-521"),
    ]
    static let everything = JWEPolicy(keyAlgorithms: JWEKeyAlgorithm.supported, contentEncryptions: JWEContentEncryption.supported)

    @Test("Every supported alg and enc: what we encrypt to a key decrypts with it")
    func roundTrips() throws {
        for (algorithm, curve) in Self.pairs {
            let key = try JWEDecryptionKey.generate(algorithm, curve: curve, keyID: "k-\(algorithm)")
            for encryption in JWEContentEncryption.supported.sorted(by: { $0.rawValue < $1.rawValue }) {
                let compact = try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: algorithm, encryption: encryption, contentType: "JWT")
                let jwe = try JWE(compact: compact)
                #expect(jwe.keyAlgorithm == algorithm && jwe.contentEncryption == encryption)
                #expect(jwe.keyID == key.keyID && jwe.contentType == "JWT")
                #expect(try jwe.decrypt(with: [key], policy: Self.everything) == Self.plaintext, "\(algorithm) \(encryption)")
                #expect(JWE.isCompact(compact))
            }
        }
    }

    @Test("ECDH-ES sends no encrypted key; its header carries the ephemeral key on the recipient's curve")
    func ecdhHeader() throws {
        let key = try JWEDecryptionKey.generate(.ecdhES, curve: "P-384")
        let compact = try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: .ecdhES, encryption: .a256GCM)
        #expect(compact.split(separator: ".", omittingEmptySubsequences: false)[1].isEmpty)
        let epk = try #require(try JWE(compact: compact).header["epk"]?.objectValue)
        #expect(epk["crv"]?.stringValue == "P-384" && epk["d"] == nil)
    }

    @Test("The policy is checked before any key is used: alg or enc outside it, and RSA1_5 always")
    func policy() throws {
        let key = try JWEDecryptionKey.generate(.rsaOAEP256)
        let compact = try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: .rsaOAEP256, encryption: .a256CBCHS512)
        #expect(throws: JOSEError(.algorithmNotAllowed, "The JWE's content encryption A256CBC-HS512 is not accepted.")) {
            try JWE(compact: compact).decrypt(with: [key])   // the default policy has no A256CBC-HS512
        }
        let narrow = JWEPolicy.registered(.ecdhES, .a256CBCHS512)
        #expect(throws: JOSEError(.algorithmNotAllowed, "The JWE's key algorithm RSA-OAEP-256 is not accepted.")) {
            try JWE(compact: compact).decrypt(with: [key], policy: narrow)
        }
        #expect(JWEPolicy(keyAlgorithms: [.rsa1_5, .rsaOAEP256], contentEncryptions: [.a128GCM]).keyAlgorithms == [.rsaOAEP256])
        #expect(JWEPolicy.registered(.rsaOAEP256).contentEncryptions == [.a128CBCHS256])
        #expect(throws: JOSEError.self) { try JWEDecryptionKey.generate(.rsa1_5) }
        #expect(throws: JOSEError.self) {
            try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: .rsa1_5, encryption: .a128GCM)
        }
    }

    @Test("The kid picks the key; without one every fitting key is tried; none fitting is keyNotFound")
    func keySelection() throws {
        let old = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "old")
        let new = try JWEDecryptionKey.generate(.rsaOAEP256, keyID: "new")
        let ec = try JWEDecryptionKey.generate(.ecdhES, keyID: "ec")
        let toOld = try JWE.encrypt(Self.plaintext, to: old.publicKey, algorithm: .rsaOAEP256, encryption: .a128GCM)
        #expect(try JWE(compact: toOld).decrypt(with: [new, ec, old]) == Self.plaintext)
        #expect(throws: JOSEError(.keyNotFound, "No decryption key fits the JWE's kid and alg.")) {
            try JWE(compact: toOld).decrypt(with: [new, ec])
        }
        // No kid in the header: each RSA key is tried in turn.
        let withoutKid = try JWE.encrypt(
            Self.plaintext, to: JWEDecryptionKey.generate(.rsaOAEP256).publicKey, algorithm: .rsaOAEP256, encryption: .a128GCM)
        #expect(try JWE(compact: withoutKid).keyID == nil)
        #expect(throws: JOSEError(.decryptionFailed, "The JWE cannot be decrypted with this client's keys.")) {
            try JWE(compact: withoutKid).decrypt(with: [old, new])
        }
        // A key stated for one algorithm is not used for another.
        let ecdhOnly = try JWEDecryptionKey.generate(.ecdhESA128KW, keyID: "kw")
        #expect(!ecdhOnly.fits(.ecdhES) && ecdhOnly.fits(.ecdhESA128KW) && !ec.fits(.rsaOAEP256))
    }

    @Test("Any changed part, or another key of the right shape, is decryptionFailed — one reason for every cause")
    func tampering() throws {
        for (algorithm, curve) in Self.pairs {
            let key = try JWEDecryptionKey.generate(algorithm, curve: curve, keyID: "k")
            let impostor = try JWEDecryptionKey.generate(algorithm, curve: curve, keyID: "k")
            for encryption in [JWEContentEncryption.a128GCM, .a128CBCHS256] {
                let compact = try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: algorithm, encryption: encryption)
                #expect(throws: JOSEError(.decryptionFailed, "The JWE cannot be decrypted with this client's keys.")) {
                    try JWE(compact: compact).decrypt(with: [impostor], policy: Self.everything)
                }
                var parts = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                for index in 1...4 where !parts[index].isEmpty {
                    let original = parts[index]
                    var bytes = Array(Base64URL.decode(original)!)
                    bytes[bytes.count / 2] ^= 0x01
                    parts[index] = Base64URL.encode(bytes)
                    let changed = parts.joined(separator: ".")
                    #expect(throws: JOSEError.self, "\(algorithm) \(encryption) part \(index)") {
                        try JWE(compact: changed).decrypt(with: [key], policy: Self.everything)
                    }
                    #expect((try? JWE(compact: changed).decrypt(with: [key], policy: Self.everything)) == nil)
                    parts[index] = original
                }
                // The header is the additional authenticated data: a changed typ fails too.
                var header = try JWE(compact: compact).header
                header["typ"] = "JWT"
                parts[0] = Base64URL.encode(Data(JSONValue.object(header).description.utf8))
                #expect(throws: JOSEError(.decryptionFailed, "The JWE cannot be decrypted with this client's keys.")) {
                    try JWE(compact: parts.joined(separator: ".")).decrypt(with: [key], policy: Self.everything)
                }
            }
        }
    }

    @Test("An ephemeral key on another curve, missing, or off its curve is refused")
    func ephemeralKeys() throws {
        let key = try JWEDecryptionKey.generate(.ecdhES, curve: "P-256")
        let other = try JWEDecryptionKey.generate(.ecdhES, curve: "P-384")
        let compact = try JWE.encrypt(Self.plaintext, to: other.publicKey, algorithm: .ecdhES, encryption: .a128GCM)
        #expect(throws: JOSEError(.decryptionFailed, "The JWE cannot be decrypted with this client's keys.")) {
            try JWE(compact: compact).decrypt(with: [key])
        }
        var parts = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var header = try JWE(compact: compact).header
        header["epk"] = nil
        parts[0] = Base64URL.encode(Data(JSONValue.object(header).description.utf8))
        #expect(throws: JOSEError(.malformed, "The JWE header's epk is missing or not an EC key.")) {
            try JWE(compact: parts.joined(separator: ".")).decrypt(with: [other])
        }
        var epk = try #require(try JWE(compact: compact).header["epk"]?.objectValue)
        epk["y"] = epk["x"]   // almost surely not on the curve
        header["epk"] = .object(epk)
        parts[0] = Base64URL.encode(Data(JSONValue.object(header).description.utf8))
        #expect(throws: JOSEError(.malformed, "The JWE header's epk is not a valid EC public key.")) {
            try JWE(compact: parts.joined(separator: ".")).decrypt(with: [other])
        }
    }

    @Test("Parsing refuses what is not a strict five-part JWE, crit, zip, and oversize input")
    func parsing() throws {
        let key = try JWEDecryptionKey.generate(.rsaOAEP256)
        let compact = try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: .rsaOAEP256, encryption: .a128GCM)
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        func header(_ change: (inout [String: JSONValue]) -> Void) throws -> String {
            var object = try JWE(compact: compact).header
            change(&object)
            return ([Base64URL.encode(Data(JSONValue.object(object).description.utf8))] + parts.dropFirst()).joined(separator: ".")
        }
        #expect(throws: JOSEError(.malformed, "The token is not a compact JWE (five parts).")) { try JWE(compact: parts.prefix(3).joined(separator: ".")) }
        #expect(throws: JOSEError(.malformed, "A part of the JWE is not strict base64url.")) { try JWE(compact: compact + "=") }
        #expect(throws: JOSEError(.unsupportedCritical, "The JWE header lists critical extensions this client does not understand.")) {
            try JWE(compact: try header { $0["crit"] = .array(["exp"]) })
        }
        #expect(throws: JOSEError(.malformed, "Compressed JWEs (zip) are refused.")) { try JWE(compact: try header { $0["zip"] = "DEF" }) }
        #expect(throws: JOSEError(.malformed, "The JWE header lacks alg or enc.")) { try JWE(compact: try header { $0["enc"] = nil }) }
        #expect(throws: JOSEError(.malformed, "The JWE header's kid is not a string.")) { try JWE(compact: try header { $0["kid"] = 7 }) }
        let duplicate = Base64URL.encode(Data(#"{"alg":"RSA-OAEP-256","alg":"ECDH-ES","enc":"A128GCM"}"#.utf8))
        #expect(throws: JOSEError.self) { try JWE(compact: ([duplicate] + parts.dropFirst()).joined(separator: ".")) }
        let huge = String(repeating: "A", count: JWE.maximumSize) + "...."
        #expect(throws: JOSEError(.malformed, "The JWE is too large.")) { try JWE(compact: huge) }
        #expect(!JWE.isCompact(huge) && !JWE.isCompact("a.b.c"))
    }

    @Test("Keys: a private JWK round trip, use sig refused, a stated alg kept, and no key material in descriptions")
    func keys() throws {
        for (algorithm, curve) in Self.pairs {
            let key = try JWEDecryptionKey.generate(algorithm, curve: curve, keyID: "k1")
            let loaded = try JWEDecryptionKey(jwk: key.privateJWK)
            #expect(loaded.keyID == "k1" && loaded.algorithm == algorithm)
            #expect(loaded.publicKey.members == key.publicKey.members)
            #expect(key.publicKey.use == "enc" && key.publicKey.members["d"] == nil)
            #expect(!key.publicKey.canVerify(.rs256) && !key.publicKey.canVerify(.es256))
            let compact = try JWE.encrypt(Self.plaintext, to: key.publicKey, algorithm: algorithm, encryption: .a128GCM)
            #expect(try JWE(compact: compact).decrypt(with: [loaded], policy: Self.everything) == Self.plaintext)
            #expect(!"\(key)".contains(key.privateJWK["d"]?.stringValue ?? "-"))
        }
        var signing = try JWEDecryptionKey.generate(.ecdhES).privateJWK
        signing["use"] = "sig"
        #expect(throws: JOSEError(.invalidKey, "The JWK's use is sig, not enc.")) { try JWEDecryptionKey(jwk: signing) }
        let rsa = try JWEDecryptionKey.generate(.rsaOAEP256).privateJWK
        #expect(throws: JOSEError.self) { try JWEDecryptionKey(jwk: rsa, algorithm: .ecdhES) }
        // A PEM key works too (the type read from the PEM).
        let pem = P256.Signing.PrivateKey().pemRepresentation
        let fromPEM = try JWEDecryptionKey(pem: pem, algorithm: .ecdhESA256KW, keyID: "pem")
        let compact = try JWE.encrypt(Self.plaintext, to: fromPEM.publicKey, algorithm: .ecdhESA256KW, encryption: .a256GCM)
        #expect(try JWE(compact: compact).decrypt(with: [fromPEM]) == Self.plaintext)
        // Encrypting to a signature key, or against its stated alg, is refused.
        let signatureKey = try #require(try JWSSigningKey.generate(.rs256).publicKey)
        #expect(throws: JOSEError(.invalidKey, "The recipient's key is not for encryption.")) {
            try JWE.encrypt(Self.plaintext, to: signatureKey, algorithm: .rsaOAEP256, encryption: .a128GCM)
        }
        #expect(throws: JOSEError.self) {
            try JWE.encrypt(Self.plaintext, to: fromPEM.publicKey, algorithm: .ecdhES, encryption: .a128GCM)
        }
    }

    @Test("The Concat KDF matches RFC 7518 Appendix C's example")
    func concatKDF() throws {
        // RFC 7518 Appendix C: ECDH-ES with A128GCM, apu "Alice", apv "Bob".
        let bob: [String: JSONValue] = [
            "kty": "EC", "crv": "P-256", "x": "weNJy2HscCSM6AEDTDg04biOvhFhyyWvOHQfeF_PxMQ",
            "y": "e8lnCO-AlStT-NJVX-crhB7QRYhiix03illJOVAOyck", "d": "VEmDZpDXXK8p8N0Cndsxs924q6nS1RXFASRl6BfUqdw",
        ]
        let alice: [String: JSONValue] = [
            "kty": "EC", "crv": "P-256", "x": "gI0GAILBdu7T53akrFmMyGcsF3n5dO7MmwNBHKW5SV0",
            "y": "SLW_xSffzlPWrHEVI30DHM_4egVwt3NQqeUD7nMFpps",
        ]
        let key = try JWEDecryptionKey(jwk: bob)
        guard case .p256(let own) = key.key else { Issue.record("not P-256"); return }
        let epk = try P256.KeyAgreement.PublicKey(rawRepresentation: Base64URL.decode(alice["x"]!.stringValue!)! + Base64URL.decode(alice["y"]!.stringValue!)!)
        let shared = try own.sharedSecretFromKeyAgreement(with: epk)
        let derived = JWE.concatKDF(shared, length: 16, algorithmID: "A128GCM", header: ["apu": "QWxpY2U", "apv": "Qm9i"])
        #expect(Base64URL.encode(derived) == "VqqN6vgjbSBcIijNcacQGg")
    }

    /// RFC 7520 ("Examples of Protecting Content Using JOSE"), §5.4 and §5.5: JWEs made by
    /// the spec's authors, decrypted with the keys the spec publishes.
    @Test("RFC 7520 §5.4 (ECDH-ES+A128KW, A128GCM, P-384) and §5.5 (ECDH-ES, A128CBC-HS256) decrypt")
    func rfc7520() throws {
        let frodo = "You can trust us to stick with you through thick and thin\u{2013}to the bitter end. And you can trust us to keep any secret of yours\u{2013}closer than you keep it yourself. But you cannot trust us to let you face trouble alone, and go off without a word. We are your friends, Frodo."
        let peregrin = try JWEDecryptionKey(jwk: [
            "kty": "EC", "kid": "peregrin.took@tuckborough.example", "use": "enc", "crv": "P-384",
            "x": "YU4rRUzdmVqmRtWOs2OpDE_T5fsNIodcG8G5FWPrTPMyxpzsSOGaQLpe2FpxBmu2",
            "y": "A8-yxCHxkfBz3hKZfI1jUYMjUhsEveZ9THuwFjH2sCNdtksRJU7D5-SkgaFL1ETP",
            "d": "iTx2pk7wW-GqJkHcEkFQb2EFyYcO7RugmaW3mRrQVAOUiPommT0IdnYK2xDlZh-j",
        ])
        let section54 = "eyJhbGciOiJFQ0RILUVTK0ExMjhLVyIsImtpZCI6InBlcmVncmluLnRvb2tAdHVja2Jvcm91Z2guZXhhbXBsZSIsImVwayI6eyJrdHkiOiJFQyIsImNydiI6IlAtMzg0IiwieCI6InVCbzRrSFB3Nmtiang1bDB4b3dyZF9vWXpCbWF6LUdLRlp1NHhBRkZrYllpV2d1dEVLNml1RURzUTZ3TmROZzMiLCJ5Ijoic3AzcDVTR2haVkMyZmFYdW1JLWU5SlUyTW84S3BvWXJGRHI1eVBOVnRXNFBnRXdaT3lRVEEtSmRhWTh0YjdFMCJ9LCJlbmMiOiJBMTI4R0NNIn0.0DJjBXri_kBcC46IkU5_Jk9BqaQeHdv2.mH-G2zVqgztUtnW_.tkZuOO9h95OgHJmkkrfLBisku8rGf6nzVxhRM3sVOhXgz5NJ76oID7lpnAi_cPWJRCjSpAaUZ5dOR3Spy7QuEkmKx8-3RCMhSYMzsXaEwDdXta9Mn5B7cCBoJKB0IgEnj_qfo1hIi-uEkUpOZ8aLTZGHfpl05jMwbKkTe2yK3mjF6SBAsgicQDVCkcY9BLluzx1RmC3ORXaM0JaHPB93YcdSDGgpgBWMVrNU1ErkjcMqMoT_wtCex3w03XdLkjXIuEr2hWgeP-nkUZTPU9EoGSPj6fAS-bSz87RCPrxZdj_iVyC6QWcqAu07WNhjzJEPc4jVntRJ6K53NgPQ5p99l3Z408OUqj4ioYezbS6vTPlQ.WuGzxmcreYjpHGJoa17EBg"
        let policy54 = JWEPolicy.registered(.ecdhESA128KW, .a128GCM)
        #expect(try JWE(compact: section54).decrypt(with: [peregrin], policy: policy54) == Data(frodo.utf8))
        let meriadoc = try JWEDecryptionKey(jwk: [
            "kty": "EC", "kid": "meriadoc.brandybuck@buckland.example", "use": "enc", "crv": "P-256",
            "x": "Ze2loSV3wrroKUN_4zhwGhCqo3Xhu1td4QjeQ5wIVR0", "y": "HlLtdXARY_f55A3fnzQbPcm6hgr34Mp8p-nuzQCE0Zw",
            "d": "r_kHyZ-a06rmxM3yESK84r1otSg-aQcVStkRhA-iCM8",
        ])
        let section55 = "eyJhbGciOiJFQ0RILUVTIiwia2lkIjoibWVyaWFkb2MuYnJhbmR5YnVja0BidWNrbGFuZC5leGFtcGxlIiwiZXBrIjp7Imt0eSI6IkVDIiwiY3J2IjoiUC0yNTYiLCJ4IjoibVBVS1RfYkFXR0hJaGcwVHBqanFWc1AxclhXUXVfdndWT0hIdE5rZFlvQSIsInkiOiI4QlFBc0ltR2VBUzQ2ZnlXdzVNaFlmR1RUMElqQnBGdzJTUzM0RHY0SXJzIn0sImVuYyI6IkExMjhDQkMtSFMyNTYifQ..yc9N8v5sYyv3iGQT926IUg.BoDlwPnTypYq-ivjmQvAYJLb5Q6l-F3LIgQomlz87yW4OPKbWE1zSTEFjDfhU9IPIOSA9Bml4m7iDFwA-1ZXvHteLDtw4R1XRGMEsDIqAYtskTTmzmzNa-_q4F_evAPUmwlO-ZG45Mnq4uhM1fm_D9rBtWolqZSF3xGNNkpOMQKF1Cl8i8wjzRli7-IXgyirlKQsbhhqRzkv8IcY6aHl24j03C-AR2le1r7URUhArM79BY8soZU0lzwI-sD5PZ3l4NDCCei9XkoIAfsXJWmySPoeRb2Ni5UZL4mYpvKDiwmyzGd65KqVw7MsFfI_K767G9C9Azp73gKZD0DyUn1mn0WW5LmyX_yJ-3AROq8p1WZBfG-ZyJ6195_JGG2m9Csg.WCCkNa-x4BeB9hIDIfFuhg"
        #expect(try JWE(compact: section55).decrypt(with: [meriadoc]) == Data(frodo.utf8))
        // The other key of the spec does not open it, and neither does the default policy for §5.4's pair.
        #expect(throws: JOSEError.self) { try JWE(compact: section55).decrypt(with: [peregrin]) }
        #expect(throws: JOSEError(.keyNotFound, "No decryption key fits the JWE's kid and alg.")) {
            try JWE(compact: section54).decrypt(with: [meriadoc], policy: policy54)
        }
    }
}
