import Foundation
import HTTPTypes
import OAuth2
import OAuth2JOSE
import OAuth2TestSupport
@testable import OAuth2Web
import Testing

/// Certificate-bound access tokens at the resource server (RFC 8705 §3): `cnf.x5t#S256`
/// against the certificate the request presents, read from the configured source only.
///
/// The resource server hashes the certificate's DER bytes without parsing them (the TLS
/// layer or the proxy verified the certificate), so these rules hold for any bytes; the
/// integration tests present real certificates.
@Suite struct CertificateBoundTokenTests {
    let date = ManualDate(TestIssuer.start)
    /// The DER bytes of "the client's certificate", and of another.
    let certificate: [UInt8] = Array("client certificate DER".utf8)
    let other: [UInt8] = Array("another certificate DER".utf8)
    static let header = HTTPField.Name("X-SSL-Client-Cert")!

    func server(_ source: ClientCertificateSource?) -> ResourceServer {
        ResourceServer(accessTokens: TestIssuer.verifier(date: date), clientCertificates: source, realm: "orders")
    }

    func token(boundTo der: [UInt8]) -> String {
        TestIssuer.token { $0["cnf"] = ["x5t#S256": .string(ClientCertificateSource.thumbprint(ofDER: der))] }
    }

    func request(_ token: String, forwarded: [String] = []) -> HTTPRequest {
        var fields: HTTPFields = [.authorization: "Bearer \(token)"]
        for value in forwarded { fields.append(HTTPField(name: Self.header, value: value)) }
        return HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/orders", headerFields: fields)
    }

    /// `der` as nginx's `$ssl_client_escaped_cert` sends it: PEM, URL-escaped.
    func escapedPEM(_ der: [UInt8]) -> String {
        let pem = "-----BEGIN CERTIFICATE-----\n" + Data(der).base64EncodedString(options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n"
        return pem.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    func refusal(_ server: ResourceServer, _ request: HTTPRequest, connection: [UInt8]? = nil) async -> AccessTokenError? {
        do {
            _ = try await server.verify(request, clientCertificate: connection)
            return nil
        } catch {
            return error
        }
    }

    @Test func theThumbprintIsBase64URLOfTheSHA256OfTheDER() {
        // SHA-256("abc"), FIPS 180-2's example, in base64url without padding.
        #expect(ClientCertificateSource.thumbprint(ofDER: Array("abc".utf8)) == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")
    }

    @Test func acceptsTheCertificateOfTheConnectionItIsBoundTo() async throws {
        let access = try await server(.connection).verify(request(token(boundTo: certificate)), clientCertificate: certificate)
        #expect(access.scheme == .bearer)
        #expect(access.token.isCertificateBound)
        #expect(access.token.certificateThumbprint == ClientCertificateSource.thumbprint(ofDER: certificate))
        guard case .authorized = await server(.connection).authorize(request(token(boundTo: certificate)), clientCertificate: certificate) else {
            Issue.record("refused")
            return
        }
    }

    @Test func refusesAnotherCertificate() async throws {
        let error = try #require(await refusal(server(.connection), request(token(boundTo: certificate)), connection: other))
        #expect(error.code == .invalidToken)
        #expect(error.reason == .confirmationMismatch)
        #expect(server(.connection).challenge(for: error).status == .unauthorized)
    }

    @Test func refusesARequestWithoutACertificate() async throws {
        for connection in [nil, [UInt8]()] {
            let error = try #require(await refusal(server(.connection), request(token(boundTo: certificate)), connection: connection))
            #expect(error.code == .invalidToken)
            #expect(error.reason == .bindingMismatch)
        }
    }

    @Test func refusesCertificateBoundTokensWithoutASource() async throws {
        // Nothing is trusted by default: neither the connection's certificate nor a header.
        let error = try #require(
            await refusal(server(nil), request(token(boundTo: certificate), forwarded: [escapedPEM(certificate)]), connection: certificate))
        #expect(error.reason == .bindingMismatch)
    }

    @Test func readsTheForwardedHeaderOnlyWhenConfigured() async throws {
        let bound = token(boundTo: certificate)
        // The header the configuration names: accepted.
        let access = try await server(.forwardedHeader(Self.header)).verify(request(bound, forwarded: [escapedPEM(certificate)]))
        #expect(access.token.isCertificateBound)
        // With the connection as the source, a forged header is not read.
        #expect(await refusal(server(.connection), request(bound, forwarded: [escapedPEM(certificate)]))?.reason == .bindingMismatch)
        // With the header as the source, the connection's certificate is not read.
        #expect(await refusal(server(.forwardedHeader(Self.header)), request(bound), connection: certificate)?.reason == .bindingMismatch)
        // Another certificate in the header: refused.
        #expect(
            await refusal(server(.forwardedHeader(Self.header)), request(bound, forwarded: [escapedPEM(other)]))?.reason == .confirmationMismatch)
    }

    @Test func refusesMalformedForwardedCertificates() async throws {
        let server = server(.forwardedHeader(Self.header))
        let bound = token(boundTo: certificate)
        // nginx sends an empty value when the client presented none.
        #expect(await refusal(server, request(bound, forwarded: [""]))?.reason == .bindingMismatch)
        for value in [
            "not a certificate", escapedPEM(certificate).replacingOccurrences(of: "CERTIFICATE", with: "PRIVATE%20KEY"),
            String(repeating: "A", count: ClientCertificateSource.maximumForwardedLength + 1),
        ] {
            let error = try #require(await refusal(server, request(bound, forwarded: [value])))
            #expect(error.code == .invalidRequest)
            #expect(error.reason == .malformed)
        }
        let several = try #require(await refusal(server, request(bound, forwarded: [escapedPEM(certificate), escapedPEM(certificate)])))
        #expect(several.code == .invalidRequest)
    }

    @Test func tokensWithoutACertificateBindingNeedNoCertificate() async throws {
        // A bearer token stays a bearer token with a source configured.
        let access = try await server(.forwardedHeader(Self.header)).verify(request(TestIssuer.token()))
        #expect(!access.token.isCertificateBound)
    }

    @Test func theDescriptionSaysCertificateBoundNeverTheToken() async throws {
        let bound = token(boundTo: certificate)
        let access = try await server(.connection).verify(request(bound), clientCertificate: certificate)
        #expect(access.token.description.contains("certificate-bound"))
        #expect(!access.token.description.contains(bound))
        #expect(ClientCertificateSource.forwardedHeader(Self.header).description == "header(x-ssl-client-cert)")
    }

    @Test func theMetadataAdvertisesCertificateBoundTokens() throws {
        func document(_ source: ClientCertificateSource?) throws -> [String: JSONValue] {
            let resource = try ProtectedResource(identifier: URL(string: "https://api.example.com/orders")!)
            let server = try ResourceServer(resource: resource, accessTokens: TestIssuer.verifier(date: date), clientCertificates: source)
            let path = URL(string: resource.metadataURL.absoluteString)!.path
            let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: path)
            let answer = try #require(server.metadataResponse(for: request))
            return try JSONDecoder().decode([String: JSONValue].self, from: Data(answer.body))
        }
        #expect(try document(.connection)["tls_client_certificate_bound_access_tokens"] == true)
        #expect(try document(nil)["tls_client_certificate_bound_access_tokens"] == nil)
    }
}
