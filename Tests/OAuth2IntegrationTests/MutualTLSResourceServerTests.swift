import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2JOSE
import OAuth2TestSupport
import OAuth2Web
import Testing

extension Integration {
    /// A certificate-bound token (RFC 8705 §3) presented over a real mutual-TLS connection: an
    /// API on an ephemeral port that asks for client certificates hands the peer's certificate
    /// to `ResourceServer` (`ClientCertificateSource.connection`), and the client's
    /// `AsyncHTTPClientTransport` presents its own. The certificates are made now with
    /// openssl; the server certificate is the fault suite's (Tests/Fixtures/tls).
    @Suite struct MutualTLSResourceServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-mtls-\(UUID().uuidString)")

        /// The API's check: tokens signed by `key`, for audience `orders`, bound or not.
        func resourceServer(_ key: JWSSigningKey) throws -> ResourceServer {
            let issuer = TrustedIssuer(issuer: "https://id.example.test", audiences: ["orders"], keys: .fixed(JSONWebKeySet(keys: [try #require(key.publicKey)])))
            return ResourceServer(accessTokens: AccessTokenVerifier(issuers: [issuer]), clientCertificates: .connection)
        }

        func token(_ key: JWSSigningKey, boundTo thumbprint: String?) throws -> String {
            let now = Int(Date().timeIntervalSince1970)
            var claims: [String: JSONValue] = [
                "iss": "https://id.example.test", "aud": "orders", "sub": "worker", "client_id": "worker", "jti": .string(UUID().uuidString),
                "iat": .number(Double(now)), "exp": .number(Double(now + 600)), "scope": "orders:read",
            ]
            if let thumbprint { claims["cnf"] = ["x5t#S256": .string(thumbprint)] }
            return try key.sign(claims: claims, header: ["typ": "at+jwt"])
        }

        /// The DER bytes of a PEM certificate file.
        func der(_ path: String) throws -> [UInt8] {
            let pem = try String(contentsOfFile: path, encoding: .utf8)
            return Array(try #require(Data(base64Encoded: pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined())))
        }

        @Test func theAPIAcceptsTheTokenOverTheCertificateItIsBoundTo() async throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let client = try await makeClientCertificate(named: "worker", in: directory)
            let other = try await makeClientCertificate(named: "other", in: directory)
            // The API trusts both client certificates at the TLS layer; the token names one.
            let trusted = directory.appendingPathComponent("trusted.pem").path
            try (String(contentsOfFile: client.certificatePath, encoding: .utf8) + String(contentsOfFile: other.certificatePath, encoding: .utf8))
                .write(toFile: trusted, atomically: true, encoding: .utf8)
            let key = try JWSSigningKey.generate(.es256, keyID: "k1")
            let api = try resourceServer(key)
            let bound = try token(key, boundTo: ClientCertificateSource.thumbprint(ofDER: der(client.certificatePath)))

            let server = try await MutualTLSAPI(api: api, trustedClientCertificates: trusted)
            do {
                func call(presenting pair: (certificatePath: String, keyPath: String)) async throws -> (Int, String) {
                    let tls = AsyncHTTPClientTransport.TLSOptions(
                        caBundlePath: TestTLS.caBundlePath, clientCertificatePath: pair.certificatePath, clientKeyPath: pair.keyPath)
                    try tls.validate()
                    return try await AsyncHTTPClientTransport.withTransport(tls: tls) { transport in
                        let request = HTTPRequest(method: .get, url: server.baseURL.appendingPathComponent("orders"))
                        let (response, body) = try await transport.send(
                            { var r = request; r.headerFields[.authorization] = "Bearer \(bound)"; return r }(), body: nil)
                        return (response.status.code, String(decoding: body, as: UTF8.self))
                    }
                }
                let (status, body) = try await call(presenting: client)
                #expect(status == 200)
                #expect(body.contains("worker"))
                // The other certificate passes TLS, but the token is not bound to it.
                let (refused, reason) = try await call(presenting: other)
                #expect(refused == 401)
                #expect(reason.contains("cnf_mismatch"))
                // Without a certificate the handshake itself fails: the API asks for one.
                let result = await Result(catching: {
                    try await AsyncHTTPClientTransport.withTransport(tls: .init(caBundlePath: TestTLS.caBundlePath)) { transport in
                        try await transport.send(HTTPRequest(method: .get, url: server.baseURL.appendingPathComponent("orders")), body: nil)
                    }
                })
                #expect(throws: OAuth2Error.self) { try result.get() }
            } catch {
                await server.shutdown()
                throw error
            }
            await server.shutdown()
            IntegrationLog.record("mtls-local", variant: "resource-server")
        }

        @Test func aCertificateWithoutItsKeyOrAFileThatIsNotPEMIsAConfigurationError() async throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let client = try await makeClientCertificate(named: "worker", in: directory)
            for tls in [
                AsyncHTTPClientTransport.TLSOptions(clientCertificatePath: client.certificatePath),
                AsyncHTTPClientTransport.TLSOptions(clientKeyPath: client.keyPath),
                AsyncHTTPClientTransport.TLSOptions(clientCertificatePath: client.keyPath, clientKeyPath: client.keyPath),
                AsyncHTTPClientTransport.TLSOptions(clientCertificatePath: client.certificatePath, clientKeyPath: client.certificatePath),
                AsyncHTTPClientTransport.TLSOptions(clientCertificatePath: "/no/such.pem", clientKeyPath: client.keyPath),
            ] {
                do {
                    try tls.validate()
                    Issue.record("accepted \(tls.clientCertificatePath ?? "-") with \(tls.clientKeyPath ?? "-")")
                } catch {
                    #expect(error.code == .invalidConfiguration)
                    #expect(!(error.message ?? "").contains("PRIVATE KEY"), "no key material in the message")
                }
            }
            try AsyncHTTPClientTransport.TLSOptions(clientCertificatePath: client.certificatePath, clientKeyPath: client.keyPath).validate()
            try AsyncHTTPClientTransport.TLSOptions().validate()
        }
    }
}

/// An HTTPS API on an ephemeral port of 127.0.0.1 that asks every client for a certificate
/// (accepting those of `trustedClientCertificates`, a PEM file) and answers each request with
/// `api`'s decision, given the peer certificate of the connection: 200 with the token's
/// client, or the challenge's status with its reason. The server certificate is the fault
/// suite's (``TestTLS``).
final class MutualTLSAPI: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    let baseURL: URL

    init(api: ResourceServer, trustedClientCertificates: String) async throws {
        let chain = try NIOSSLCertificate.fromPEMFile(TestTLS.directory.appendingPathComponent("valid.pem").path)
        let key = try NIOSSLPrivateKey(file: TestTLS.directory.appendingPathComponent("server.key").path, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .file(trustedClientCertificates)
        let context = try NIOSSLContext(configuration: configuration)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    channel.pipeline.configureHTTPServerPipeline()
                }.flatMap {
                    channel.pipeline.addHandler(Handler(api: api))
                }
            }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        baseURL = URL(string: "https://127.0.0.1:\(channel.localAddress?.port ?? 0)")!
    }

    func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let api: ResourceServer
        var head: HTTPRequestHead?

        init(api: ResourceServer) { self.api = api }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body: break
            case .end:
                guard let head else { return }
                var fields = HTTPFields()
                for (name, value) in head.headers {
                    if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
                }
                let request = HTTPRequest(method: .get, scheme: "https", authority: "127.0.0.1", path: head.uri, headerFields: fields)
                // The certificate of this connection, as a framework adapter would read it.
                let certificate = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self).peerCertificate?.toDERBytes()
                let api = self.api
                let loop = context.eventLoop
                let bound = NIOLoopBound((self, context), eventLoop: loop)
                Task {
                    let (status, body): (Int, String)
                    switch await api.authorize(request, clientCertificate: certificate, requiredScopes: ["orders:read"]) {
                    case .authorized(let access): (status, body) = (200, #"{"client":"\#(access.token.clientID ?? "")"}"#)
                    case .refused(let challenge): (status, body) = (challenge.status.code, #"{"error":"\#(challenge.error.reason)"}"#)
                    }
                    loop.execute {
                        let (this, context) = bound.value
                        var headers = HTTPHeaders()
                        headers.add(name: "Content-Type", value: "application/json")
                        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
                        context.write(this.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers))), promise: nil)
                        context.write(this.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
                        context.writeAndFlush(this.wrapOutboundOut(.end(nil)), promise: nil)
                    }
                }
            }
        }
    }
}
