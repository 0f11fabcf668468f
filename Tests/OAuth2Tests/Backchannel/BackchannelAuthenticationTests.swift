import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// OpenID Connect CIBA Core §7: the backchannel authentication request and its response,
/// signed requests (§7.1.1) and the metadata (§4). No socket: a recording transport answers.
@Suite struct BackchannelAuthenticationTests {
    static let endpoint = URL(string: "https://as.example.com/bc-authorize")!
    static let authReqID = "1c266114-a1be-4252-8ad1-04986c5b9ac1"
    static let metadata = ServerMetadata(
        issuer: URL(string: Fixtures.issuer)!,
        tokenEndpoint: URL(string: "https://as.example.com/token")!,
        additionalFields: [
            "backchannel_authentication_endpoint": .string(endpoint.absoluteString),
            "backchannel_token_delivery_modes_supported": ["poll", "ping"],
            "backchannel_authentication_request_signing_alg_values_supported": ["ES256", "PS256"],
            "backchannel_user_code_parameter_supported": true,
        ])

    static func accepted(interval: String = #","interval":2"#) -> StubTransport {
        StubTransport(json: #"{"auth_req_id":"\#(authReqID)","expires_in":120\#(interval)}"#)
    }

    static func failure(_ body: () async throws -> Void) async -> OAuth2Error? {
        do { try await body(); return nil } catch { return error as? OAuth2Error }
    }

    @Test func theRequestCarriesTheHintTheMessageAndTheClientsAuthentication() async throws {
        let transport = Self.accepted()
        let client = try Fixtures.client(transport, metadata: Self.metadata, configuration: Fixtures.configuration(method: .clientSecretBasic))
        let before = Date()
        let authentication = try await client.startBackchannelAuthentication(
            BackchannelAuthenticationRequest(
                hint: .loginHint("alice"), scopes: ["read"], bindingMessage: "W4SCT", userCode: "1234", requestedExpiry: 120,
                acrValues: ["urn:acr:strong", "urn:acr:any"], additionalParameters: ["scope": "ignored", "purpose": "payment"]))
        let sent = try #require(transport.sent.first)
        #expect(sent.request.url == Self.endpoint)
        #expect(sent.request.method == .post)
        #expect(sent.request.headerFields[.authorization]?.hasPrefix("Basic ") == true)
        #expect(sent.form == [
            "scope": "openid read", "login_hint": "alice", "binding_message": "W4SCT", "user_code": "1234",
            "requested_expiry": "120", "acr_values": "urn:acr:strong urn:acr:any", "purpose": "payment",
        ], "openid is added, an extra parameter never replaces one the library sets")
        #expect(authentication.authenticationRequestID == Self.authReqID)
        #expect(authentication.interval == 2)
        #expect(authentication.scopes == ["openid", "read"])
        #expect(authentication.bindingMessage == "W4SCT")
        #expect(authentication.expectedSubject == nil)
        #expect(authentication.expiresAt >= before.addingTimeInterval(120) && authentication.expiresAt <= Date().addingTimeInterval(120))
        #expect(!authentication.description.contains(Self.authReqID), "the auth_req_id is redacted")
    }

    @Test func eachHintHasItsOwnParameterAndAnIDTokenHintNamesTheSubjectToExpect() async throws {
        let key = try JWSSigningKey.generate(.es256)
        let hint = try key.sign(claims: ["iss": .string(Fixtures.issuer), "sub": "248289761001", "aud": "client-1"])
        for (request, name, subject) in [
            (BackchannelAuthenticationRequest(hint: .idTokenHint(hint)), "id_token_hint", "248289761001"),
            (BackchannelAuthenticationRequest(hint: .loginHintToken("eyJ.lht")), "login_hint_token", nil),
        ] {
            let transport = Self.accepted()
            let authentication = try await Fixtures.client(transport, metadata: Self.metadata).startBackchannelAuthentication(request)
            let form = try #require(transport.sent.first).form
            #expect(form[name] == request.hint.value)
            #expect(["login_hint", "id_token_hint", "login_hint_token"].filter { form[$0] != nil } == [name], "exactly one hint")
            #expect(form["scope"] == "openid read", "the configuration's scopes")
            #expect(authentication.expectedSubject == subject)
        }
    }

    @Test func withoutAnIntervalTheClientWaitsFiveSecondsAndNeverLessThanOne() async throws {
        let plain = try await Fixtures.client(Self.accepted(interval: ""), metadata: Self.metadata)
            .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice")))
        #expect(plain.interval == 5)
        let zero = try await Fixtures.client(Self.accepted(interval: #","interval":"0""#), metadata: Self.metadata)
            .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice")))
        #expect(zero.interval == 1)
    }

    @Test(arguments: [
        ((400, #"{"error":"unknown_user_id","error_description":"no such user"}"#), OAuth2Error.Code.unknownUserID),
        ((400, #"{"error":"invalid_binding_message"}"#), .invalidBindingMessage),
        ((400, #"{"error":"invalid_user_code"}"#), .invalidUserCode),
        ((400, #"{"error":"missing_user_code"}"#), .missingUserCode),
        ((400, #"{"error":"expired_login_hint_token"}"#), .expiredLoginHintToken),
        ((403, #"{"error":"access_denied"}"#), .accessDenied),
        ((403, ""), .invalidClient),
        ((200, #"{"expires_in":120}"#), .invalidResponse),
        ((200, #"{"auth_req_id":"a b","expires_in":120}"#), .invalidResponse),
        ((200, #"{"auth_req_id":"abc"}"#), .invalidResponse),
        ((200, #"{"auth_req_id":"abc","expires_in":120,"interval":"soon"}"#), .invalidResponse),
        ((200, "<html>"), .invalidResponse),
    ])
    func aRefusalOrAnUnusableAnswerIsATypedError(answer: (Int, String), code: OAuth2Error.Code) async throws {
        let transport = StubTransport { _, _ in response(answer.0, answer.1) }
        let error = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata)
                .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice")))
        }
        #expect(error?.code == code)
        #expect(error?.code.isDeclared == true)
    }

    @Test func noEndpointOrAnEmptyHintIsRefusedBeforeAnyRequest() async throws {
        let transport = Self.accepted()
        let missing = await Self.failure {
            _ = try await Fixtures.client(transport).startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice")))
        }
        #expect(missing?.code == .missingEndpoint)
        let empty = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata).startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("")))
        }
        #expect(empty?.code == .invalidConfiguration)
        #expect(transport.sent.isEmpty)
    }

    // MARK: Signed requests (CIBA Core §7.1.1)

    @Test func aSignedRequestIsOneJWTWithTheParametersAndTheJWTClaims() async throws {
        let key = try JWSSigningKey.generate(.es256, keyID: "k1")
        var configuration = Fixtures.configuration(method: .clientSecretPost)
        configuration.privateKey = key
        let transport = Self.accepted()
        _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: configuration).startBackchannelAuthentication(
            BackchannelAuthenticationRequest(hint: .loginHint("alice"), bindingMessage: "W4SCT", requestedExpiry: 300, signed: true))
        let form = try #require(transport.sent.first).form
        #expect(Set(form.keys) == ["request", "client_id", "client_secret"], "the parameters travel inside the JWT only")
        let jws = try JWS(compact: try #require(form["request"]))
        #expect(jws.algorithm == .es256)
        #expect(jws.isSigned(by: try #require(key.publicKey)))
        let claims = try jws.claims()
        #expect(claims["iss"] == "client-1")
        #expect(claims["aud"] == .string(Fixtures.issuer))
        #expect(claims["login_hint"] == "alice")
        #expect(claims["binding_message"] == "W4SCT")
        #expect(claims["scope"] == "openid read")
        #expect(claims["requested_expiry"] == .integer(300), "a number in the JWT")
        let iat = try #require(claims["iat"]?.integerValue)
        #expect(claims["nbf"]?.integerValue == iat)
        #expect(try #require(claims["exp"]?.integerValue) > iat)
        #expect(claims["jti"]?.stringValue?.isEmpty == false)
    }

    @Test func theConfigurationsRequestObjectOptionsSignByDefault() async throws {
        var configuration = Fixtures.configuration()
        configuration.requestObject = RequestObjectOptions(signingKey: try JWSSigningKey.generate(.ps256))
        let transport = Self.accepted()
        _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: configuration)
            .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice")))
        let form = try #require(transport.sent.first).form
        #expect(try JWS(compact: try #require(form["request"])).algorithm == .ps256)
        #expect(form["login_hint"] == nil)
        let unsigned = Self.accepted()
        _ = try await Fixtures.client(unsigned, metadata: Self.metadata, configuration: configuration)
            .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice"), signed: false))
        #expect(try #require(unsigned.sent.first).form["login_hint"] == "alice")
    }

    @Test func aSignedRequestNeedsAnAsymmetricKeyTheServerAccepts() async throws {
        let transport = Self.accepted()
        var secretOnly = Fixtures.configuration()
        secretOnly.requestObject = RequestObjectOptions()
        let noKey = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: secretOnly)
                .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice")))
        }
        #expect(noKey?.code == .invalidConfiguration, "never keyed by the client secret")
        var hmac = Fixtures.configuration()
        hmac.requestObject = RequestObjectOptions(signingKey: try JWSSigningKey(secret: "0123456789abcdef0123456789abcdef"))
        let symmetric = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: hmac)
                .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice")))
        }
        #expect(symmetric?.code == .invalidConfiguration, "CIBA forbids symmetric signatures")
        var rs = Fixtures.configuration()
        rs.privateKey = try JWSSigningKey.generate(.rs256)
        let unlisted = await Self.failure {
            _ = try await Fixtures.client(transport, metadata: Self.metadata, configuration: rs)
                .startBackchannelAuthentication(BackchannelAuthenticationRequest(hint: .loginHint("alice"), signed: true))
        }
        #expect(unlisted?.code == .invalidConfiguration, "RS256 is not among the server's algorithms")
        #expect(transport.sent.isEmpty)
    }

    // MARK: Metadata (CIBA Core §4)

    @Test func theMetadataNamesTheEndpointTheModesTheAlgorithmsAndTheUserCode() throws {
        #expect(Self.metadata.backchannelAuthenticationEndpoint == Self.endpoint)
        #expect(Self.metadata.backchannelTokenDeliveryModesSupported == ["poll", "ping"])
        #expect(Self.metadata.backchannelAuthenticationRequestSigningAlgValuesSupported == ["ES256", "PS256"])
        #expect(Self.metadata.backchannelUserCodeParameterSupported == true)
        #expect(Self.metadata.additionalFields["backchannel_authentication_endpoint"] == nil, "a typed field")
        #expect(try Fixtures.client(Self.accepted(), metadata: Self.metadata).offersBackchannelAuthentication)
        #expect(try !Fixtures.client(Self.accepted()).offersBackchannelAuthentication)
        let pushOnly = ServerMetadata(
            issuer: URL(string: Fixtures.issuer)!, tokenEndpoint: URL(string: "https://as.example.com/token")!,
            additionalFields: [
                "backchannel_authentication_endpoint": .string(Self.endpoint.absoluteString),
                "backchannel_token_delivery_modes_supported": ["push"],
            ])
        #expect(try !Fixtures.client(Self.accepted(), metadata: pushOnly).offersBackchannelAuthentication, "push mode is not offered by this client")
    }
}
