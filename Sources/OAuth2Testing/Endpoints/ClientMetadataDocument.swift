import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OAuth2Internals

extension ProviderCore {
    /// Before the authorization and token endpoints: when Client ID Metadata Documents are on
    /// and the request's `client_id` is a URL that is not a configured client, fetches (or
    /// takes from the cache) and validates its document, and registers the client it
    /// describes. Returns the refusal to answer with, or `nil` to go on.
    func resolveClientMetadataDocument(_ endpoint: TestProvider.Endpoint, _ request: HTTPServerRequest, now: Date) async -> HTTPServerReply? {
        guard let settings = clientMetadataDocuments, endpoint == .authorization || endpoint == .token,
            case .success(let parameters) = Parameters.read(request, body: request.method == .POST),
            !parameters.duplicated.contains("client_id"), let clientID = parameters["client_id"], clientID.contains("://")
        else { return nil }
        let needed = state.withLock { state -> Bool in
            if let expiry = state.clientMetadataDocumentExpiries[clientID] { return expiry <= now }
            return state.clients[clientID] == nil  // a configured client keeps its registration
        }
        guard needed else { return nil }
        do throws(TestProvider.ClientMetadataDocumentError) {
            let client = try await fetchClientMetadataDocument(clientID, settings: settings)
            state.withLock { state in
                state.clients[clientID] = client
                state.clientMetadataDocumentExpiries[clientID] = now.addingTimeInterval(settings.cacheLifetime.timeInterval)
            }
            return nil
        } catch {
            state.withLock { state in
                if state.clientMetadataDocumentExpiries.removeValue(forKey: clientID) != nil { state.clients[clientID] = nil }
                state.clientMetadataDocumentRefusals.append(TestProvider.ClientMetadataDocumentRefusal(clientID: clientID, error: error))
            }
            // Never a redirect: the redirect URI is not known good (RFC 6749 §4.1.2.1).
            let description = "The client metadata document was refused: \(error.message)"
            return endpoint == .token
                ? .oauthError("invalid_client", description, status: .unauthorized)
                : .oauthError("invalid_client", description, status: .badRequest)
        }
    }

    /// Fetches and validates the document `clientID` names: one HTTPS GET, no redirect
    /// followed, `200` `application/json` of at most the maximum size within the timeout.
    func fetchClientMetadataDocument(
        _ clientID: String, settings: TestProvider.ClientMetadataDocuments
    ) async throws(TestProvider.ClientMetadataDocumentError) -> TestProvider.Client {
        let url = try TestProvider.clientMetadataDocumentURL(clientID)
        let answer: TestProvider.Answer
        do {
            answer = try await TestProvider.fetchDocument(url, settings: settings, group: group)
        } catch let error as TestProvider.ClientMetadataDocumentError {
            throw error
        } catch {
            throw TestProvider.ClientMetadataDocumentError(.fetchFailed, "The document could not be fetched: \(error)")
        }
        guard answer.status == 200 else {
            let redirect = (300..<400).contains(answer.status) ? " (redirects are not followed)" : ""
            throw TestProvider.ClientMetadataDocumentError(.badStatus, "The document's server answered \(answer.status)\(redirect).")
        }
        let contentType = answer.headers.first(name: "Content-Type")?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard contentType == "application/json" else {
            throw TestProvider.ClientMetadataDocumentError(.notJSON, "The document is not application/json.")
        }
        return try TestProvider.validateClientMetadataDocument(answer.body, clientID: clientID)
    }
}

extension TestProvider.ClientMetadataDocuments {
    /// The TLS configuration of document fetches: TLS 1.2 or later, certificates verified
    /// against the configured roots (or the system's) and the host name.
    func tlsConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if !trustedRootCertificatesPEM.isEmpty {
            let certificates = try trustedRootCertificatesPEM.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
            guard !certificates.isEmpty else { throw TestProviderError(.invalidConfiguration, "No certificate in trustedRootCertificatesPEM.") }
            configuration.trustRoots = .certificates(certificates)
        }
        return configuration
    }

    /// Checks the settings when the provider starts.
    func validate() throws(TestProviderError) {
        guard maximumSize > 0, timeout > .zero, cacheLifetime >= .zero else {
            throw TestProviderError(.invalidConfiguration, "The metadata document size and timeout must be positive, the cache lifetime not negative.")
        }
        do {
            _ = try tlsConfiguration()
        } catch {
            throw TestProviderError(.invalidConfiguration, "The trusted root certificates cannot be read: \(error)")
        }
    }
}

extension TestProvider {
    /// One HTTPS GET of a metadata document, redirects not followed, reading at most the
    /// maximum size.
    static func fetchDocument(_ url: URL, settings: ClientMetadataDocuments, group: any EventLoopGroup) async throws -> Answer {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), let rawHost = components.host else {
            throw ClientMetadataDocumentError(.invalidClientIDURL, "The client_id URL has no host.")
        }
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let port = components.port ?? 443
        var target = components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        let hostHeader = (host.contains(":") ? "[\(host)]" : host) + (components.port.map { ":\($0)" } ?? "")
        let headers: HTTPHeaders = [
            "Host": hostHeader, "Connection": "close", "Accept": "application/json", "User-Agent": "swift-oauth2-test-provider",
        ]
        let request = HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)
        let context = try NIOSSLContext(configuration: settings.tlsConfiguration())
        // SNI and name checks take a DNS name; for an IP literal NIOSSL checks the peer's address.
        let serverHostname = isIPv4Address(host) || host.contains(":") ? nil : host
        let limit = settings.maximumSize
        let timeout = settings.timeout
        return try await withDeadline(timeout, onTimeout: { throw ClientMetadataDocumentError(.fetchFailed, "The document did not arrive within \(timeout).") }) {
            let channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(10))
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverHostname))
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                    }
                }
            return try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(contentsOf: [.head(request), .end(nil)])
                var head: HTTPResponseHead?
                var body: [UInt8] = []
                for try await part in inbound {
                    switch part {
                    case .head(let received): head = received
                    case .body(let buffer):
                        body.append(contentsOf: buffer.readableBytesView)
                        guard body.count <= limit else {
                            throw ClientMetadataDocumentError(.tooLarge, "The document is larger than \(limit) bytes.")
                        }
                    case .end:
                        guard let head else { break }
                        return Answer(status: Int(head.status.code), headers: head.headers, body: body)
                    }
                }
                throw ClientMetadataDocumentError(.fetchFailed, "The connection closed before a complete answer.")
            }
        }
    }
}

/// Whether a string is a dotted IPv4 address.
private func isIPv4Address(_ text: String) -> Bool {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
}
