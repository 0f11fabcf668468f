import Foundation
import NIOSSL

extension TestProvider {
    /// HTTPS for the provider's own endpoints: the certificate it presents on 127.0.0.1.
    ///
    /// Set ``Configuration/tls`` to serve over TLS (1.2 or later); the ``TestProvider/issuer``
    /// is then `https://127.0.0.1:<port>`. For clients that accept only HTTPS authorization
    /// servers, even on loopback. Make the certificate at run time with a CA of the test's
    /// own, and have the client trust that CA: the certificate must name `127.0.0.1` (an IP
    /// address subject alternative name).
    ///
    /// ```swift
    /// var configuration = TestProvider.Configuration.demo
    /// configuration.tls = .init(certificateChainPEM: serverCertificatePEM, privateKeyPEM: serverKeyPEM)
    /// let provider = try await TestProvider.start(configuration: configuration)   // https://127.0.0.1:…
    /// ```
    public struct TLS: Sendable, Hashable, CustomStringConvertible {
        /// The certificates the provider presents, PEM: its own first, then any
        /// intermediates.
        public var certificateChainPEM: String
        /// The private key of the first certificate, PEM (unencrypted). Never printed.
        public var privateKeyPEM: String

        /// Creates the settings.
        public init(certificateChainPEM: String, privateKeyPEM: String) {
            self.certificateChainPEM = certificateChainPEM
            self.privateKeyPEM = privateKeyPEM
        }

        /// What the settings are, without the key.
        public var description: String { "TestProvider.TLS(certificate chain, private key withheld)" }

        /// The server context; checks that the certificates and the key can be read.
        func serverContext() throws(TestProviderError) -> NIOSSLContext {
            let chain: [NIOSSLCertificate]
            let key: NIOSSLPrivateKey
            do {
                chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
            } catch {
                throw TestProviderError(.invalidConfiguration, "The TLS certificate chain is not PEM certificates.")
            }
            guard !chain.isEmpty else { throw TestProviderError(.invalidConfiguration, "The TLS certificate chain is empty.") }
            do {
                key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
            } catch {
                // The key's bytes stay out of the message.
                throw TestProviderError(.invalidConfiguration, "The TLS private key is not an unencrypted PEM private key.")
            }
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            do {
                return try NIOSSLContext(configuration: configuration)
            } catch {
                throw TestProviderError(.invalidConfiguration, "The TLS certificate and private key cannot serve together (does the key belong to the first certificate?).")
            }
        }
    }
}
