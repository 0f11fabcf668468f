#if Vapor && Hummingbird && Postgres && MCP
import Foundation
import Hummingbird
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2Hummingbird
import OAuth2InteractiveSignIn
import OAuth2JOSE
import OAuth2MCP
import OAuth2Postgres
import OAuth2SecretService
import OAuth2Testing
import OAuth2Vapor
import OAuth2Web
import Testing
import Vapor

/// A Hummingbird request context for the two generic middlewares.
struct NamesContext: WebSignInRequestContext, AccessTokenRequestContext {
    var coreContext: CoreRequestContextStorage
    var webUser: WebUser?
    var accessToken: VerifiedAccessToken?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// Every public type of the library, named without its module in a file that also imports
/// Foundation, Vapor and Hummingbird: each name resolves, and to the library's own type. A
/// name that Foundation, Vapor or Hummingbird also declared would not compile here.
@Suite("One meaning per name")
struct UnqualifiedNamesTests {
    /// The listing's name and the name each unqualified spelling resolved to.
    static let resolved: [(listed: String, resolved: String)] = [
            ("OAuth2JOSE.JOSEError", String(reflecting: JOSEError.self)),
            ("OAuth2JOSE.JSONValue", String(reflecting: JSONValue.self)),
            ("OAuth2JOSE.JSONWebKey", String(reflecting: JSONWebKey.self)),
            ("OAuth2JOSE.JSONWebKeySet", String(reflecting: JSONWebKeySet.self)),
            ("OAuth2JOSE.JWS", String(reflecting: JWS.self)),
            ("OAuth2JOSE.JWSAlgorithm", String(reflecting: JWSAlgorithm.self)),
            ("OAuth2JOSE.JWSSigningKey", String(reflecting: JWSSigningKey.self)),
            ("OAuth2.AuthorizationOptions", String(reflecting: AuthorizationOptions.self)),
            ("OAuth2.AuthorizationRequest", String(reflecting: AuthorizationRequest.self)),
            ("OAuth2.AuthorizationResponse", String(reflecting: AuthorizationResponse.self)),
            ("OAuth2.AuthorizationServer", String(reflecting: AuthorizationServer.self)),
            ("OAuth2.ClientAssertion", String(reflecting: ClientAssertion.self)),
            ("OAuth2.ClientAssertionOptions", String(reflecting: ClientAssertionOptions.self)),
            ("OAuth2.ClientAuthenticationMethod", String(reflecting: ClientAuthenticationMethod.self)),
            ("OAuth2.ClientConfiguration", String(reflecting: ClientConfiguration.self)),
            ("OAuth2.ClientIdentity", String(reflecting: ClientIdentity.self)),
            ("OAuth2.DiscoveredResource", String(reflecting: DiscoveredResource.self)),
            ("OAuth2.RegistrationMetadata", String(reflecting: RegistrationMetadata.self)),
            ("OAuth2.ClientRegistrar", String(reflecting: ClientRegistrar.self)),
            ("OAuth2.ClientRegistration", String(reflecting: ClientRegistration.self)),
            ("OAuth2.SettingsFile", String(reflecting: SettingsFile.self)),
            ("OAuth2.DPoPKey", String(reflecting: DPoPKey.self)),
            ("OAuth2.DPoPOptions", String(reflecting: DPoPOptions.self)),
            ("OAuth2.DPoPProof", String(reflecting: DPoPProof.self)),
            ("OAuth2.DeviceAuthorization", String(reflecting: DeviceAuthorization.self)),
            ("OAuth2.DevicePollEvent", String(reflecting: DevicePollEvent.self)),
            ("OAuth2.EndSessionOptions", String(reflecting: EndSessionOptions.self)),
            ("OAuth2.EndSessionRequest", String(reflecting: EndSessionRequest.self)),
            ("OAuth2.FileTokenStore", String(reflecting: FileTokenStore.self)),
            ("OAuth2.Grant", String(reflecting: Grant.self)),
            ("OAuth2.HTTPEnvironment", String(reflecting: HTTPEnvironment.self)),
            ("OAuth2.HTTPInterceptor", String(reflecting: (any HTTPInterceptor).self)),
            ("OAuth2.HTTPTransport", String(reflecting: (any HTTPTransport).self)),
            ("OAuth2.IDToken", String(reflecting: IDToken.self)),
            ("OAuth2.IDTokenClaims", String(reflecting: IDTokenClaims.self)),
            ("OAuth2.IDTokenValidationOptions", String(reflecting: IDTokenValidationOptions.self)),
            ("OAuth2.IDTokenValidator", String(reflecting: IDTokenValidator.self)),
            ("OAuth2.ImplicitAuthorizationResponse", String(reflecting: ImplicitAuthorizationResponse.self)),
            ("OAuth2.ImplicitResponseType", String(reflecting: ImplicitResponseType.self)),
            ("OAuth2.JARMOptions", String(reflecting: JARMOptions.self)),
            ("OAuth2.IntrospectionResponse", String(reflecting: IntrospectionResponse.self)),
            ("OAuth2.JWKSCache", String(reflecting: JWKSCache.self)),
            ("OAuth2.JWTBearerAssertion", String(reflecting: JWTBearerAssertion.self)),
            ("OAuth2.IdentityAssertionGrant", String(reflecting: IdentityAssertionGrant.self)),
            ("OAuth2.IdentityAssertionAuthorization", String(reflecting: IdentityAssertionAuthorization.self)),
            ("OAuth2.MemoryTokenStore", String(reflecting: MemoryTokenStore.self)),
            ("OAuth2.MetadataCache", String(reflecting: MetadataCache.self)),
            ("OAuth2.OAuth2Client", String(reflecting: OAuth2Client.self)),
            ("OAuth2.OAuth2Error", String(reflecting: OAuth2Error.self)),
            ("OAuth2.PKCE", String(reflecting: PKCE.self)),
            ("OAuth2.ProviderPreset", String(reflecting: ProviderPreset.self)),
            ("OAuth2.ProtectedResourceMetadata", String(reflecting: ProtectedResourceMetadata.self)),
            ("OAuth2.ProtectedResourceDiscovery", String(reflecting: ProtectedResourceDiscovery.self)),
            ("OAuth2.RegistrationStore", String(reflecting: (any RegistrationStore).self)),
            ("OAuth2.RequestKind", String(reflecting: RequestKind.self)),
            ("OAuth2.RequestObject", String(reflecting: RequestObject.self)),
            ("OAuth2.RequestObjectOptions", String(reflecting: RequestObjectOptions.self)),
            ("OAuth2.RequestObjectEncryption", String(reflecting: RequestObjectEncryption.self)),
            ("OAuth2.RetryPolicy", String(reflecting: RetryPolicy.self)),
            ("OAuth2.ServerMetadata", String(reflecting: ServerMetadata.self)),
            ("OAuth2.ServerQuirks", String(reflecting: ServerQuirks.self)),
            ("OAuth2.TokenSession", String(reflecting: TokenSession.self)),
            ("OAuth2.TokenSessionEvent", String(reflecting: TokenSessionEvent.self)),
            ("OAuth2.TokenSessionKey", String(reflecting: TokenSessionKey.self)),
            ("OAuth2.TokenSessionRegistry", String(reflecting: TokenSessionRegistry.self)),
            ("OAuth2.SignOutSteps", String(reflecting: SignOutSteps.self)),
            ("OAuth2.SignOutProgress", String(reflecting: SignOutProgress.self)),
            ("OAuth2.SignOutResult", String(reflecting: SignOutResult.self)),
            ("OAuth2.StandardClaims", String(reflecting: (any StandardClaims).self)),
            ("OAuth2.StoredTokenSession", String(reflecting: StoredTokenSession.self)),
            ("OAuth2.TokenExchangeRequest", String(reflecting: TokenExchangeRequest.self)),
            ("OAuth2.TokenExchangeResponse", String(reflecting: TokenExchangeResponse.self)),
            ("OAuth2.TokenSet", String(reflecting: TokenSet.self)),
            ("OAuth2.TokenStore", String(reflecting: (any TokenStore).self)),
            ("OAuth2.TokenStoreChange", String(reflecting: TokenStoreChange.self)),
            ("OAuth2.TokenStoreChangeObserving", String(reflecting: (any TokenStoreChangeObserving).self)),
            ("OAuth2.TokenStoreError", String(reflecting: TokenStoreError.self)),
            ("OAuth2.TokenStoreObservation", String(reflecting: TokenStoreObservation.self)),
            ("OAuth2.TokenType", String(reflecting: TokenType.self)),
            ("OAuth2.TokenTypeHint", String(reflecting: TokenTypeHint.self)),
            ("OAuth2.TokenTypeURI", String(reflecting: TokenTypeURI.self)),
            ("OAuth2.TransportOptions", String(reflecting: TransportOptions.self)),
            ("OAuth2.URLSessionTransport", String(reflecting: URLSessionTransport.self)),
            ("OAuth2.UserInfo", String(reflecting: UserInfo.self)),
            ("OAuth2.WWWAuthenticate", String(reflecting: WWWAuthenticate.self)),
            ("OAuth2AsyncHTTPClient.AsyncHTTPClientTransport", String(reflecting: AsyncHTTPClientTransport.self)),
            ("OAuth2AsyncHTTPClient.ProxyEnvironment", String(reflecting: ProxyEnvironment.self)),
            ("OAuth2SecretService.SecretServiceTokenStore", String(reflecting: SecretServiceTokenStore.self)),
            ("OAuth2InteractiveSignIn.BrowserChoice", String(reflecting: BrowserChoice.self)),
            ("OAuth2InteractiveSignIn.BrowserLauncher", String(reflecting: BrowserLauncher.self)),
            ("OAuth2InteractiveSignIn.DeviceSignIn", String(reflecting: DeviceSignIn.self)),
            ("OAuth2InteractiveSignIn.LoopbackPages", String(reflecting: LoopbackPages.self)),
            ("OAuth2InteractiveSignIn.LoopbackRedirectListener", String(reflecting: LoopbackRedirectListener.self)),
            ("OAuth2InteractiveSignIn.LoopbackSignIn", String(reflecting: LoopbackSignIn.self)),
            ("OAuth2InteractiveSignIn.StandardErrorOutput", String(reflecting: StandardErrorOutput.self)),
            ("OAuth2InteractiveSignIn.TerminalOutput", String(reflecting: (any TerminalOutput).self)),
            ("OAuth2InteractiveSignIn.TerminalQRCode", String(reflecting: TerminalQRCode.self)),
            ("OAuth2InteractiveSignIn.WebAuthenticationPresenter", String(reflecting: (any WebAuthenticationPresenter).self)),
            ("OAuth2InteractiveSignIn.WebAuthenticationResult", String(reflecting: WebAuthenticationResult.self)),
            ("OAuth2InteractiveSignIn.WebAuthenticationSignIn", String(reflecting: WebAuthenticationSignIn.self)),
            ("OAuth2Testing.TestProvider", String(reflecting: TestProvider.self)),
            ("OAuth2Testing.TestProviderError", String(reflecting: TestProviderError.self)),
            ("OAuth2Web.AccessTokenChallenge", String(reflecting: AccessTokenChallenge.self)),
            ("OAuth2Web.AccessTokenError", String(reflecting: AccessTokenError.self)),
            ("OAuth2Web.AccessTokenScheme", String(reflecting: AccessTokenScheme.self)),
            ("OAuth2Web.AccessTokenVerifier", String(reflecting: AccessTokenVerifier.self)),
            ("OAuth2Web.BackChannelLogoutEndpoint", String(reflecting: BackChannelLogoutEndpoint.self)),
            ("OAuth2Web.BackchannelPingEndpoint", String(reflecting: BackchannelPingEndpoint.self)),
            ("OAuth2Web.DPoPProofVerifier", String(reflecting: DPoPProofVerifier.self)),
            ("OAuth2Web.DPoPServerNonces", String(reflecting: DPoPServerNonces.self)),
            ("OAuth2Web.LogoutTokenError", String(reflecting: LogoutTokenError.self)),
            ("OAuth2Web.LogoutTokenVerifier", String(reflecting: LogoutTokenVerifier.self)),
            ("OAuth2Web.MemoryReplayStore", String(reflecting: MemoryReplayStore.self)),
            ("OAuth2Web.MemoryWebSessionStore", String(reflecting: MemoryWebSessionStore.self)),
            ("OAuth2Web.PendingSignIn", String(reflecting: PendingSignIn.self)),
            ("OAuth2Web.ProtectedResource", String(reflecting: ProtectedResource.self)),
            ("OAuth2Web.ReplayStore", String(reflecting: (any ReplayStore).self)),
            ("OAuth2Web.ResourceServer", String(reflecting: ResourceServer.self)),
            ("OAuth2Web.TokenIntrospector", String(reflecting: TokenIntrospector.self)),
            ("OAuth2Web.TrustedIssuer", String(reflecting: TrustedIssuer.self)),
            ("OAuth2Web.VerifiedAccessToken", String(reflecting: VerifiedAccessToken.self)),
            ("OAuth2Web.VerifiedLogoutToken", String(reflecting: VerifiedLogoutToken.self)),
            ("OAuth2Web.WebAccessRequirement", String(reflecting: WebAccessRequirement.self)),
            ("OAuth2Web.WebResponse", String(reflecting: WebResponse.self)),
            ("OAuth2Web.WebSessionRecord", String(reflecting: WebSessionRecord.self)),
            ("OAuth2Web.WebSessionStore", String(reflecting: (any WebSessionStore).self)),
            ("OAuth2Web.WebSignIn", String(reflecting: WebSignIn.self)),
            ("OAuth2Web.WebSignInConfiguration", String(reflecting: WebSignInConfiguration.self)),
            ("OAuth2Web.WebSignInError", String(reflecting: WebSignInError.self)),
            ("OAuth2Web.WebUser", String(reflecting: WebUser.self)),
            ("OAuth2Postgres.PostgresReplayStore", String(reflecting: PostgresReplayStore.self)),
            ("OAuth2Postgres.PostgresTokenStore", String(reflecting: PostgresTokenStore.self)),
            ("OAuth2Postgres.PostgresTokenStoreError", String(reflecting: PostgresTokenStoreError.self)),
            ("OAuth2Postgres.PostgresWebSessionStore", String(reflecting: PostgresWebSessionStore.self)),
            ("OAuth2Hummingbird.AccessTokenRequestContext", String(reflecting: (any AccessTokenRequestContext).self)),
            ("OAuth2Hummingbird.ClientCertificateRequestContext", String(reflecting: (any ClientCertificateRequestContext).self)),
            ("OAuth2Hummingbird.HummingbirdProtectedResourceMetadataMiddleware<OAuth2NamesTests.NamesContext>", String(reflecting: HummingbirdProtectedResourceMetadataMiddleware<NamesContext>.self)),
            ("OAuth2Hummingbird.HummingbirdResourceServerMiddleware<OAuth2NamesTests.NamesContext>", String(reflecting: HummingbirdResourceServerMiddleware<NamesContext>.self)),
            ("OAuth2Hummingbird.HummingbirdWebSignInMiddleware<OAuth2NamesTests.NamesContext>", String(reflecting: HummingbirdWebSignInMiddleware<NamesContext>.self)),
            ("OAuth2Hummingbird.WebSignInRequestContext", String(reflecting: (any WebSignInRequestContext).self)),
            ("OAuth2Vapor.VaporResourceServerMiddleware", String(reflecting: VaporResourceServerMiddleware.self)),
            ("OAuth2Vapor.VaporProtectedResourceMetadataMiddleware", String(reflecting: VaporProtectedResourceMetadataMiddleware.self)),
            ("OAuth2Vapor.VaporRequireSignIn", String(reflecting: VaporRequireSignIn.self)),
            ("OAuth2Vapor.VaporWebSignInMiddleware", String(reflecting: VaporWebSignInMiddleware.self)),
            ("OAuth2MCP.TokenSessionAuthorizer", String(reflecting: TokenSessionAuthorizer.self)),
            ("OAuth2.AuthorizationDetail", String(reflecting: AuthorizationDetail.self)),
            ("OAuth2.BackchannelAuthentication", String(reflecting: BackchannelAuthentication.self)),
            ("OAuth2.BackchannelAuthenticationRequest", String(reflecting: BackchannelAuthenticationRequest.self)),
            ("OAuth2.BackchannelPingInbox", String(reflecting: BackchannelPingInbox.self)),
            ("OAuth2.BackchannelPingError", String(reflecting: BackchannelPingError.self)),
            ("OAuth2.DownstreamToken", String(reflecting: DownstreamToken.self)),
            ("OAuth2.DownstreamTokenKey", String(reflecting: DownstreamTokenKey.self)),
            ("OAuth2.DownstreamTokens", String(reflecting: DownstreamTokens.self)),
            ("OAuth2.EncryptionOptions", String(reflecting: EncryptionOptions.self)),
            ("OAuth2.IntrospectionFormat", String(reflecting: IntrospectionFormat.self)),
            ("OAuth2.IntrospectionJWTValidator", String(reflecting: IntrospectionJWTValidator.self)),
            ("OAuth2.MemoryDownstreamTokenStore", String(reflecting: MemoryDownstreamTokenStore.self)),
            ("OAuth2.AuthorizationDetailType", String(reflecting: (any AuthorizationDetailType).self)),
            ("OAuth2.DownstreamTokenStore", String(reflecting: (any DownstreamTokenStore).self)),
            ("OAuth2.DPoPNonceStore", String(reflecting: (any DPoPNonceStore).self)),
            ("OAuth2.MemoryDPoPNonceStore", String(reflecting: MemoryDPoPNonceStore.self)),
            ("OAuth2JOSE.JWE", String(reflecting: JWE.self)),
            ("OAuth2JOSE.JWEContentEncryption", String(reflecting: JWEContentEncryption.self)),
            ("OAuth2JOSE.JWEDecryptionKey", String(reflecting: JWEDecryptionKey.self)),
            ("OAuth2JOSE.JWEKeyAlgorithm", String(reflecting: JWEKeyAlgorithm.self)),
            ("OAuth2JOSE.JWEPolicy", String(reflecting: JWEPolicy.self)),
            ("OAuth2AsyncHTTPClient.AsyncHTTPClientProxyTransport", String(reflecting: AsyncHTTPClientProxyTransport.self)),
            ("OAuth2InteractiveSignIn.BackchannelSignIn", String(reflecting: BackchannelSignIn.self)),
            ("OAuth2Postgres.PostgresDownstreamTokenStore", String(reflecting: PostgresDownstreamTokenStore.self)),
            ("OAuth2Postgres.PostgresDPoPNonceStore", String(reflecting: PostgresDPoPNonceStore.self)),
            ("OAuth2Vapor.VaporSinglePageAppMiddleware", String(reflecting: VaporSinglePageAppMiddleware.self)),
            ("OAuth2Web.ClientCertificateSource", String(reflecting: ClientCertificateSource.self)),
            ("OAuth2Web.SinglePageAppBackend", String(reflecting: SinglePageAppBackend.self)),
            ("OAuth2Web.WebStreamBody", String(reflecting: WebStreamBody.self)),
            ("OAuth2Web.WebStreamResponse", String(reflecting: WebStreamResponse.self)),
            ("OAuth2Web.WebProxyTransport", String(reflecting: (any WebProxyTransport).self)),
            ("OAuth2Hummingbird.HummingbirdSinglePageAppMiddleware<OAuth2NamesTests.NamesContext>", String(reflecting: HummingbirdSinglePageAppMiddleware<NamesContext>.self)),
    ]

    @Test("each public type named unqualified is the library's own")
    func unqualifiedNamesAreTheLibrarys() {
        for (listed, resolved) in Self.resolved {
            #expect(resolved == listed)
        }
    }

    @Test("the file names every public type of the committed API listing")
    func everyPublicTypeIsNamed() throws {
        // api/<Module>.txt: one line per public declaration; a type's line is "Name: struct Name".
        let api = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("api")
        let files = try FileManager.default.contentsOfDirectory(atPath: api.path).filter { $0.hasSuffix(".txt") }
        #expect(files.count == 11)
        var listed: Set<String> = []
        for file in files {
            let module = String(file.dropLast(4))
            let text = try String(contentsOf: api.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 3)
                guard parts.count >= 3, parts[0].hasSuffix(":"), !parts[0].dropLast().contains(".") else { continue }
                let kind = parts[1] == "final" ? parts[2] : parts[1]
                guard ["struct", "class", "actor", "enum", "protocol"].contains(kind) else { continue }
                let name = String(parts[0].dropLast())
                listed.insert("\(module).\(name)")
            }
        }
        let named = Set(Self.resolved.map { $0.listed.components(separatedBy: "<")[0] })
        #expect(listed.subtracting(named).sorted() == [], "public types the names test does not name")
        #expect(named.subtracting(listed).sorted() == [], "names that are not public types any more")
    }
}
#endif
