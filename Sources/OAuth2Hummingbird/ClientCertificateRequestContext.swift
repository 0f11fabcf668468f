#if Hummingbird
import Hummingbird
import NIOCore
import NIOSSL

/// A request context that keeps the channel of its connection, from which
/// ``HummingbirdResourceServerMiddleware`` reads the certificate the client presented when
/// the app serves TLS itself (HummingbirdTLS) and asks for client certificates: what a
/// `ResourceServer` whose `clientCertificates` is `ClientCertificateSource.connection` checks
/// certificate-bound tokens against (mutual TLS, RFC 8705 §3).
///
/// ```swift
/// struct APIRequestContext: AccessTokenRequestContext, ClientCertificateRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var accessToken: VerifiedAccessToken?
///     let connectionChannel: any Channel
///     init(source: ApplicationRequestContextSource) {
///         coreContext = .init(source: source)
///         connectionChannel = source.channel
///     }
/// }
/// ```
///
/// A context that does not conform presents no certificate: certificate-bound tokens are
/// refused.
@available(macOS 14, iOS 17, tvOS 17, *)
public protocol ClientCertificateRequestContext: RequestContext {
    /// The channel the request came on: `ApplicationRequestContextSource.channel`.
    var connectionChannel: any Channel { get }
}

@available(macOS 14, iOS 17, tvOS 17, *)
extension ClientCertificateRequestContext {
    /// The DER certificate the client presented on the request's TLS connection; `nil` on a
    /// connection without TLS or without a client certificate.
    ///
    /// The TLS handler is on the connection's channel (HTTP/1.1), or on the parent of an
    /// HTTP/2 stream's channel.
    public var clientCertificate: [UInt8]? {
        get async {
            for channel in [connectionChannel, connectionChannel.parent].compactMap({ $0 }) {
                let certificate: NIOSSLCertificate?
                do {
                    certificate = try await channel.nioSSL_peerCertificate().get()
                } catch {
                    continue  // No TLS handler on this channel.
                }
                return try? certificate?.toDERBytes()
            }
            return nil
        }
    }
}
#endif
