import Foundation
import OAuth2JOSE
import OAuth2TestSupport
import OAuth2Web

/// The one mutual-TLS test of a web-framework adapter (RFC 8705 §3): an API that serves TLS
/// itself and asks for client certificates, with a ``resourceServer(clientCertificates:)``
/// reading the certificate of the connection, is called with a token bound to one
/// certificate, over that certificate, another, and none:
///
/// ```swift
/// let material = try await MutualTLSAPIConformance.Material()
/// defer { material.remove() }
/// // … serve the route over TLS trusting material.trustedCertificatesPath …
/// let failures = try await MutualTLSAPIConformance.run(material) { token, certificate in … }
/// #expect(failures.isEmpty, "\(failures)")
/// ```
///
/// Time stands still at ``now``: the token is issued then, and the verifier checks it then.
public enum MutualTLSAPIConformance {
    /// What the route answered: its status, body and `WWW-Authenticate`.
    public struct Answer: Sendable {
        public var status: Int
        public var body: String
        public var challenge: String?

        public init(status: Int, body: String, challenge: String?) {
            self.status = status
            self.body = body
            self.challenge = challenge
        }
    }

    /// A client certificate (PEM) and its key, as files.
    public struct ClientCertificate: Sendable {
        public var certificatePath: String
        public var keyPath: String
    }

    /// The certificates and the token of one run, in a temporary directory.
    public struct Material: Sendable {
        public let directory: URL
        /// The certificate the token is bound to (CN `worker`).
        public let worker: ClientCertificate
        /// Another certificate the API's TLS accepts.
        public let other: ClientCertificate
        /// Both certificates in one PEM file: the API's TLS trust roots.
        public let trustedCertificatesPath: String
        /// An access token of client `worker` bound to ``worker``'s certificate (`cnf.x5t#S256`).
        public let token: String

        /// Makes two self-signed client certificates with openssl and the token.
        public init() async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-mtls-api-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let worker = try await makeClientCertificate(named: "worker", in: directory)
            let other = try await makeClientCertificate(named: "other", in: directory)
            self.worker = ClientCertificate(certificatePath: worker.certificatePath, keyPath: worker.keyPath)
            self.other = ClientCertificate(certificatePath: other.certificatePath, keyPath: other.keyPath)
            trustedCertificatesPath = directory.appendingPathComponent("trusted.pem").path
            try (String(contentsOfFile: worker.certificatePath, encoding: .utf8) + String(contentsOfFile: other.certificatePath, encoding: .utf8))
                .write(toFile: trustedCertificatesPath, atomically: true, encoding: .utf8)
            token = try MutualTLSAPIConformance.token(boundTo: ClientCertificateSource.thumbprint(ofDER: TestTLS.derCertificate(atPath: worker.certificatePath)))
        }

        /// Deletes the directory.
        public func remove() {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static let issuer = "https://id.example.test"
    static let audience = "orders"
    static let signingKey = Result { try JWSSigningKey.generate(.es256, keyID: "mtls-api-1") }
    /// The suite's only instant: when its token is made and checked.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The API's check: JWT access tokens of the suite's issuer for audience `orders`,
    /// certificate-bound ones checked against `clientCertificates`; the time is ``now``.
    public static func resourceServer(clientCertificates: ClientCertificateSource?) throws -> ResourceServer {
        let key = try signingKey.get()
        guard let publicKey = key.publicKey else { throw JOSEError(.invalidKey, "The signing key has no public key.") }
        var verifier = AccessTokenVerifier(issuers: [TrustedIssuer(issuer: issuer, audiences: [audience], keys: .fixed(JSONWebKeySet(keys: [publicKey])))])
        verifier.now = { now }
        return ResourceServer(accessTokens: verifier, clientCertificates: clientCertificates)
    }

    /// An RFC 9068 access token of client `worker`, bound to the certificate of `thumbprint`,
    /// issued at ``now`` for ten minutes.
    static func token(boundTo thumbprint: String) throws -> String {
        let issued = now.timeIntervalSince1970
        let claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": "worker", "client_id": "worker", "jti": .string(UUID().uuidString),
            "iat": .number(issued), "exp": .number(issued + 600), "scope": "orders:read", "cnf": ["x5t#S256": .string(thumbprint)],
        ]
        return try signingKey.get().sign(claims: claims, header: ["typ": "at+jwt"])
    }

    /// Calls the route (which answers the token's `client_id`) through `call` — the token, and
    /// the certificate to present or `nil` — and returns what did not hold: the token accepted
    /// over its certificate; refused (401 `invalid_token`) over another one or none.
    public static func run(
        _ material: Material, call: (_ token: String, _ certificate: ClientCertificate?) async throws -> Answer
    ) async throws -> [String] {
        var failures: [String] = []
        let accepted = try await call(material.token, material.worker)
        if accepted.status != 200 || accepted.body != "worker" {
            failures.append("over its certificate: \(accepted.status) \(accepted.body) \(accepted.challenge ?? "")")
        }
        let other = try await call(material.token, material.other)
        if other.status != 401 || other.challenge?.contains(#"error="invalid_token""#) != true
            || other.challenge?.contains("another client certificate") != true
        {
            failures.append("over another certificate: \(other.status) \(other.challenge ?? "no challenge")")
        }
        let none = try await call(material.token, nil)
        if none.status != 401 || none.challenge?.contains(#"error="invalid_token""#) != true || none.challenge?.contains("presented none") != true {
            failures.append("without a certificate: \(none.status) \(none.challenge ?? "no challenge")")
        }
        return failures
    }

    /// Calls the route of an API whose resource server reads no certificate: a bound token is
    /// refused over its own certificate. Returns what did not hold.
    public static func runWithoutSource(
        _ material: Material, call: (_ token: String, _ certificate: ClientCertificate?) async throws -> Answer
    ) async throws -> [String] {
        let refused = try await call(material.token, material.worker)
        guard refused.status == 401, refused.challenge?.contains("does not read") == true else {
            return ["a resource server without a certificate source: \(refused.status) \(refused.challenge ?? "no challenge")"]
        }
        return []
    }
}
