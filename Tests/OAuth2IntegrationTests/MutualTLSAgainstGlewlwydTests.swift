import Foundation
import HTTPTypes
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2JOSE
import OAuth2TestSupport
import OAuth2Web
import Testing

extension Integration {
    /// Mutual TLS (RFC 8705) against Glewlwyd behind the HTTPS front that asks for client
    /// certificates (`scripts/test-servers/tls.sh`, 127.0.0.1:4444): `tls_client_auth` and
    /// `self_signed_tls_client_auth` at the OIDC instance `oidc-mtls`, which reads the
    /// certificate at its `mtls_endpoint_aliases` only and binds its access tokens to it
    /// (`cnf.x5t#S256`); OAuth2Web's resource server checks that binding. The certificates are
    /// made at start-up under `$OAUTH2_TEST_MTLS_DIR`. An unreachable front fails the tests.
    @Suite struct MutualTLSAgainstGlewlwyd {
        static let front = Server.env("OAUTH2_TEST_MTLS_URL", "https://127.0.0.1:4444")
        static let caFile = Server.env("OAUTH2_TEST_CA_FILE", ".build/test-servers/tls/ca.pem")
        static let directory = Server.env("OAUTH2_TEST_MTLS_DIR", ".build/test-servers/mtls")
        static let issuer = Server.env("OAUTH2_TEST_GLEWLWYD_MTLS_ISSUER", "http://127.0.0.1:4593/api/oidc-mtls")
        static let caClientID = Server.env("OAUTH2_TEST_GLEWLWYD_MTLS_CA_ID", "mtls-ca")
        static let selfSignedClientID = Server.env("OAUTH2_TEST_GLEWLWYD_MTLS_SELF_ID", "mtls-self")

        /// The TLS settings presenting the certificate `name` (`client`: issued by the test
        /// client CA; `self`: self-signed), trusting the front's test CA.
        static func tls(presenting name: String?) -> AsyncHTTPClientTransport.TLSOptions {
            AsyncHTTPClientTransport.TLSOptions(
                caBundlePath: caFile, clientCertificatePath: name.map { "\(directory)/\($0).pem" },
                clientKeyPath: name.map { "\(directory)/\($0).key" })
        }

        /// The instance's discovery document, read through the front, with the URLs Glewlwyd
        /// names (its own http address: it knows only its external_url) moved to the front.
        static func metadata(aliases: Bool = true) async throws -> ServerMetadata {
            let glewlwyd = URL(string: issuer)!
            let origin = "\(glewlwyd.scheme!)://\(glewlwyd.host!):\(glewlwyd.port!)"
            let discovery = URL(string: issuer.replacingOccurrences(of: origin, with: front) + "/.well-known/openid-configuration")!
            let (response, body) = try await AsyncHTTPClientTransport.withTransport(tls: tls(presenting: nil)) { transport in
                try await transport.send(HTTPRequest(method: .get, url: discovery), body: nil)
            }
            #expect(response.status == .ok)
            var fields = try JSONDecoder().decode([String: JSONValue].self, from: body)
            func moved(_ value: JSONValue?) -> JSONValue? {
                value?.stringValue.map { .string($0.replacingOccurrences(of: origin, with: front)) }
            }
            for name in ["token_endpoint", "revocation_endpoint", "introspection_endpoint"] { fields[name] = moved(fields[name]) }
            if aliases, let table = fields["mtls_endpoint_aliases"]?.objectValue {
                fields["mtls_endpoint_aliases"] = .object(table.mapValues { moved($0) ?? $0 })
            } else {
                fields["mtls_endpoint_aliases"] = nil
            }
            return try ServerMetadata(fields: fields)
        }

        /// The SHA-256 thumbprint of the certificate `name` (its DER).
        static func thumbprint(of name: String) throws -> String {
            let pem = try String(contentsOfFile: "\(directory)/\(name).pem", encoding: .utf8)
            let base64 = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            return ClientCertificateSource.thumbprint(ofDER: try #require(Data(base64Encoded: base64)))
        }

        func clientCredentials(
            _ clientID: String, method: ClientAuthenticationMethod, presenting name: String?, aliases: Bool = true
        ) async throws -> TokenSet {
            let metadata = try await Self.metadata(aliases: aliases)
            return try await AsyncHTTPClientTransport.withTransport(tls: Self.tls(presenting: name)) { transport in
                let client = try OAuth2Client(
                    metadata: metadata,
                    configuration: ClientConfiguration(clientID: clientID, authenticationMethod: method, scopes: ["read"]),
                    environment: HTTPEnvironment(transport: transport))
                return try await client.clientCredentials()
            }
        }

        @Test func theMetadataOffersBothMethodsAndAliases() async throws {
            let metadata = try await Self.metadata()
            let methods = metadata.tokenEndpointAuthMethodsSupported ?? []
            #expect(methods.contains("tls_client_auth") && methods.contains("self_signed_tls_client_auth"))
            let alias = try #require(metadata.endpoint("token_endpoint", mutualTLS: true))
            #expect(alias.absoluteString.hasPrefix(Self.front) && alias.path.contains("/mtls/"))
            #expect(metadata.endpoint("token_endpoint", mutualTLS: false) != alias)
        }

        @Test(arguments: [("client", ClientAuthenticationMethod.tlsClientAuth), ("self", .selfSignedTLSClientAuth)])
        func signsInWithItsCertificateAndGetsATokenBoundToIt(certificate: String, method: ClientAuthenticationMethod) async throws {
            #expect(FileManager.default.fileExists(atPath: "\(Self.directory)/\(certificate).pem"), "the client certificates are missing: did tls.sh run?")
            let clientID = certificate == "client" ? Self.caClientID : Self.selfSignedClientID
            let tokens = try await clientCredentials(clientID, method: method, presenting: certificate)
            let claims = try JWS(compact: tokens.accessToken).claims()
            #expect(claims["client_id"]?.stringValue == clientID)
            #expect(claims["cnf"]?.objectValue?["x5t#S256"]?.stringValue == (try Self.thumbprint(of: certificate)), "bound to the certificate presented")
            IntegrationLog.record("glewlwyd-mtls", variant: method.rawValue)
        }

        @Test func withoutItsCertificateTheClientIsRefused() async throws {
            do {
                _ = try await clientCredentials(Self.caClientID, method: .tlsClientAuth, presenting: nil)
                Issue.record("a tls_client_auth client got a token without a certificate")
            } catch let error as OAuth2Error {
                #expect(error.source == .server)
            }
            // Another client's certificate: refused too.
            do {
                _ = try await clientCredentials(Self.caClientID, method: .tlsClientAuth, presenting: "self")
                Issue.record("a tls_client_auth client got a token with another client's certificate")
            } catch let error as OAuth2Error {
                #expect(error.source == .server)
            }
        }

        @Test func theAliasesAreWhereTheCertificateCounts() async throws {
            // Glewlwyd reads the certificate at its aliases only: at the plain token endpoint
            // the same client with the same certificate is refused.
            do {
                _ = try await clientCredentials(Self.caClientID, method: .tlsClientAuth, presenting: "client", aliases: false)
                Issue.record("the certificate was read outside the mtls_endpoint_aliases")
            } catch let error as OAuth2Error {
                #expect(error.source == .server)
            }
        }

        @Test func theResourceServerAcceptsTheBoundTokenWithItsCertificateOnly() async throws {
            let tokens = try await clientCredentials(Self.caClientID, method: .tlsClientAuth, presenting: "client")
            let metadata = try await Self.metadata()
            let jwksURI = try #require(metadata.jwksURI)
            // aud is the granted scope list when no resource was asked for.
            let verifier = AccessTokenVerifier(issuers: [
                TrustedIssuer(issuer: Self.issuer, audiences: ["read"], keys: try .jwks(jwksURI, environment: HTTPEnvironment(transport: TransportKind.urlSession.transport)))
            ])
            let header = HTTPField.Name("X-SSL-Client-Cert")!
            let server = ResourceServer(accessTokens: verifier, clientCertificates: .forwardedHeader(header))
            /// A request as the front forwards it: the presented certificate as nginx's
            /// `$ssl_client_escaped_cert`.
            func request(presenting name: String?) throws -> HTTPRequest {
                var fields: HTTPFields = [.authorization: "Bearer \(tokens.accessToken)"]
                if let name {
                    let pem = try String(contentsOfFile: "\(Self.directory)/\(name).pem", encoding: .utf8)
                    fields[header] = pem.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
                }
                return HTTPRequest(method: .get, scheme: "https", authority: "api.example.test", path: "/orders", headerFields: fields)
            }
            let access = try await server.verify(request(presenting: "client"), requiredScopes: ["read"])
            #expect(access.token.certificateThumbprint == (try Self.thumbprint(of: "client")))
            await #expect(throws: AccessTokenError.self) { try await server.verify(request(presenting: "self")) }
            await #expect(throws: AccessTokenError.self) { try await server.verify(request(presenting: nil)) }
            // Without a certificate source, the bound token is refused outright.
            await #expect(throws: AccessTokenError.self) { try await ResourceServer(accessTokens: verifier).verify(request(presenting: "client")) }
            IntegrationLog.record("glewlwyd-mtls", variant: "resource-server")
        }
    }
}
