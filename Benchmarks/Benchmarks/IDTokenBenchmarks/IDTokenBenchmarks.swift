// ID-token validation against raw signature verification with the same key.
//
// Each iteration validates a different token (distinct sub, nonce, jti, at_hash) so nothing
// can be cached by token string; the JWK set is cached (the client's JWKSCache, filled once
// through an in-memory transport). Goal: validation ≥ 0.8 × the raw ES256 rate, and as
// close to the raw RS256 rate as the JSON decoding allows.
import Benchmark
import Crypto
import CryptoExtras
import Foundation
import HTTPTypes
import OAuth2

private let tokenCount = 2_000
private let issuer = "https://op.example"
private let clientID = "bench-client"

/// Serves the JWK set from memory, so the client's cache can be filled without a socket.
private struct KeySetTransport: HTTPTransport {
    let body: Data
    func send(_ request: HTTPRequest, body _: Data?) async throws -> (HTTPResponse, Data) {
        (HTTPResponse(status: .ok, headerFields: [.contentType: "application/json", .cacheControl: "max-age=86400"]), body)
    }
}

private struct Fixture: Sendable {
    let client: OAuth2Client
    let validator: IDTokenValidator
    let keys: JSONWebKeySet
    let tokens: [(compact: String, nonce: String, accessToken: String)]
    /// The same tokens split for the raw check: signing input and signature bytes.
    let raw: [(input: Data, signature: Data)]
    /// swift-crypto's own check with the same public key, nothing of ours in between.
    let rawVerify: @Sendable (Data, Data) -> Bool
    let now: Date

    init(_ algorithm: JWSAlgorithm) async throws {
        let key: JWSSigningKey
        switch algorithm {
        case .es256:
            let privateKey = P256.Signing.PrivateKey()
            let publicKey = privateKey.publicKey
            key = try JWSSigningKey(pemRepresentation: privateKey.pemRepresentation, algorithm: algorithm, keyID: "k1")
            rawVerify = { input, signature in
                guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
                return publicKey.isValidSignature(signature, for: SHA256.hash(data: input))
            }
        default:
            let privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let publicKey = privateKey.publicKey
            key = try JWSSigningKey(pemRepresentation: privateKey.pemRepresentation, algorithm: algorithm, keyID: "k1")
            rawVerify = { input, signature in
                publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
            }
        }
        let jwks = JSONWebKeySet(keys: [key.publicKey!])
        let metadata = ServerMetadata(
            issuer: URL(string: issuer)!, authorizationEndpoint: URL(string: issuer + "/authorize")!,
            tokenEndpoint: URL(string: issuer + "/token")!, jwksURI: URL(string: issuer + "/jwks")!,
            additionalFields: ["id_token_signing_alg_values_supported": .array([.string(algorithm.rawValue)])])
        client = try await OAuth2Client(
            server: .metadata(metadata),
            configuration: ClientConfiguration(clientID: clientID),
            environment: HTTPEnvironment(transport: KeySetTransport(body: jwks.jsonData)))
        validator = client.idTokenValidator
        keys = jwks
        now = Date()
        let issued = Int64(now.timeIntervalSince1970)
        var tokens: [(String, String, String)] = []
        var raw: [(Data, Data)] = []
        for index in 0..<tokenCount {
            let nonce = "nonce-\(index)-\(UUID().uuidString)"
            let accessToken = "at-\(index)-\(UUID().uuidString)"
            let digest = Array(SHA256.hash(data: Data(accessToken.utf8)))
            let atHash = Data(digest.prefix(16)).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let compact = try key.sign(claims: [
                "iss": .string(issuer), "sub": .string("user-\(index)"), "aud": .string(clientID),
                "exp": .integer(issued + 3_600), "iat": .integer(issued), "auth_time": .integer(issued - 10),
                "nonce": .string(nonce), "at_hash": .string(atHash), "jti": .string(UUID().uuidString),
                "name": "Benchmark User", "email": "user@example.com", "email_verified": true,
            ], header: ["typ": "JWT"])
            tokens.append((compact, nonce, accessToken))
            let parts = compact.split(separator: ".")
            raw.append((Data((parts[0] + "." + parts[1]).utf8), Self.decode(parts[2])))
        }
        self.tokens = tokens
        self.raw = raw
        _ = try await client.keySet?.keys()  // fill the cache
    }

    static func decode(_ text: Substring) -> Data {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)!
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock, .mallocCountTotal], maxDuration: .seconds(3), maxIterations: 1_000_000)

    for algorithm in [JWSAlgorithm.es256, .rs256] {
        nonisolated(unsafe) var fixture: Fixture?

        Benchmark("ID token validation \(algorithm) (client, cached JWKS)",
            configuration: .init(setup: { fixture = try await Fixture(algorithm) }, teardown: { fixture = nil })
        ) { benchmark in
            let fixture = fixture!
            for iteration in benchmark.scaledIterations {
                let token = fixture.tokens[iteration % tokenCount]
                blackHole(try await fixture.client.validateIDToken(
                    token.compact, expecting: .init(nonce: token.nonce, accessToken: token.accessToken)))
            }
        }

        Benchmark("ID token validation \(algorithm) (validator, keys in hand)",
            configuration: .init(setup: { fixture = try await Fixture(algorithm) }, teardown: { fixture = nil })
        ) { benchmark in
            let fixture = fixture!
            for iteration in benchmark.scaledIterations {
                let token = fixture.tokens[iteration % tokenCount]
                blackHole(try fixture.validator.validate(
                    token.compact, keys: fixture.keys, expecting: .init(nonce: token.nonce, accessToken: token.accessToken), now: fixture.now))
            }
        }

        Benchmark("Raw \(algorithm) signature verification (swift-crypto)",
            configuration: .init(setup: { fixture = try await Fixture(algorithm) }, teardown: { fixture = nil })
        ) { benchmark in
            let fixture = fixture!
            for iteration in benchmark.scaledIterations {
                let token = fixture.raw[iteration % tokenCount]
                blackHole(fixture.rawVerify(token.input, token.signature))
            }
        }
    }
}
