import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// The fault suite's TLS material (Tests/Fixtures/tls): a CA to trust, and server
/// certificates for 127.0.0.1 that are valid, expired, for another host, or from a CA
/// nobody trusts.
public enum TestTLS {
    /// The directory of the fixtures.
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/tls")

    /// The CA bundle a client of the suite trusts.
    public static var caBundlePath: String { directory.appendingPathComponent("ca.pem").path }

    /// A server certificate of the suite.
    public enum Certificate: String, Sendable, CaseIterable {
        /// Valid for 127.0.0.1 and localhost, from the trusted CA.
        case valid
        /// Expired in 2021.
        case expired
        /// For `wrong-host.example` only.
        case wrongHost = "wrong-host"
        /// Signed by a CA no client trusts.
        case unknownCA = "unknown-ca"
    }

    /// A server context presenting `certificate`.
    public static func context(_ certificate: Certificate) throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMFile(directory.appendingPathComponent("\(certificate.rawValue).pem").path)
        let key = try NIOSSLPrivateKey(file: directory.appendingPathComponent("server.key").path, format: .pem)
        let configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        return try NIOSSLContext(configuration: configuration)
    }
}

/// A TCP listener on 127.0.0.1 that accepts connections and never sends a byte: a TLS
/// handshake that never completes, a server that never answers at the socket level.
public final class SilentListener: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    /// The port it listens on.
    public let port: Int

    /// Starts listening on an ephemeral port.
    public init() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in channel.pipeline.addHandler(Discard()) }
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        self.group = group
        self.port = channel.localAddress?.port ?? 0
    }

    /// Stops listening and closes every connection.
    public func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    private final class Discard: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}

/// A port on 127.0.0.1 where nothing listens: connecting is refused. The port stays bound
/// (never listening) for the life of the process, so that no other server of a parallel
/// test can take it in between.
public func refusedPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    guard bound else {
        close(descriptor)
        throw POSIXError(.EADDRNOTAVAIL)
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

extension TestTLS {
    /// The DER bytes of the first certificate of a PEM file.
    public static func derCertificate(atPath path: String) throws -> [UInt8] {
        try NIOSSLCertificate.fromPEMFile(path)[0].toDERBytes()
    }

    /// A server configuration of the suite's valid certificate for an API that asks every
    /// client for a certificate and accepts those of `trustedClientCertificates` (a PEM file),
    /// or a client that presents none (`optionalVerification`): the API's own check refuses
    /// what needs a certificate.
    public static func mutualTLSServerConfiguration(trustedClientCertificates: String) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(directory.appendingPathComponent("valid.pem").path)
        let key = try NIOSSLPrivateKey(file: directory.appendingPathComponent("server.key").path, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.certificateVerification = .optionalVerification
        configuration.trustRoots = .file(trustedClientCertificates)
        return configuration
    }
}
