import Foundation
import OAuth2
import Testing

extension Integration {
    /// Token exchange (RFC 8693) and the JWT bearer grant (RFC 7523 §2.1) against authgent-server.
    @Suite struct TokenExchangeAgainstAuthgent {
        @Test(arguments: TransportKind.allCases)
        func anExchangedAccessTokenIsForTheAudienceAskedFor(transport: TransportKind) async throws {
            let client = try await Authgent.client(transport: transport)
            let subject = try await Authgent.subjectToken(client)
            let audience = "https://backend.example.test"
            let answer = try await client.exchangeToken(
                TokenExchangeRequest(subject: .init(subject.accessToken, type: .accessToken), audiences: [audience]))
            #expect(answer.issuedTokenType == .accessToken)
            #expect(answer.tokenType == "Bearer")
            #expect(answer.expiresAt != nil)
            let tokens = try #require(answer.tokenSet, "an issued access token is usable as one")
            #expect(tokens.accessToken == answer.issuedToken)
            #expect(tokens.additionalFields["issued_token_type"] == .string(TokenTypeURI.accessToken.rawValue))
            let claims = try Authgent.claims(answer.issuedToken)
            #expect(claims["aud"] == .string(audience))
            #expect(claims["iss"] == .string(Authgent.issuer.absoluteString))
            // Delegation: the exchanging client is named the actor (RFC 8693 §4.1).
            #expect(claims["act"]?.objectValue?["sub"] == .string("client:\(client.configuration.clientID)"))
            #expect(answer.issuedToken != subject.accessToken)
        }

        @Test func aResourceIsTheAudienceWhenNoneIsNamed() async throws {
            let client = try await Authgent.client()
            let subject = try await Authgent.subjectToken(client)
            let resource = URL(string: "https://api.example.test/orders")!
            let answer = try await client.exchangeToken(
                TokenExchangeRequest(subject: .init(subject.accessToken, type: .accessToken), resources: [resource]))
            #expect(answer.issuedTokenType == .accessToken)
            #expect(try Authgent.claims(answer.issuedToken)["aud"] == .string(resource.absoluteString))
        }

        @Test func aRequestedJWTIsIssuedAsNotAnAccessTokenAndRedeemedWithTheJWTBearerGrant() async throws {
            let client = try await Authgent.client()
            let subject = try await Authgent.subjectToken(client)
            // An identity-chaining grant addressed to authgent itself (which trusts itself as issuer).
            let answer = try await client.exchangeToken(
                TokenExchangeRequest(
                    subject: .init(subject.accessToken, type: .accessToken), audiences: [Authgent.issuer.absoluteString],
                    requestedTokenType: .jwt))
            #expect(answer.issuedTokenType == .jwt)
            #expect(answer.tokenType == "N_A")
            #expect(answer.isNotApplicable)
            #expect(answer.tokenSet == nil, "an N_A token is not an access token")
            let grantClaims = try Authgent.claims(answer.issuedToken)
            #expect(grantClaims["aud"] == .string(Authgent.issuer.absoluteString))

            // The caller's own assertion (here: the JWT just issued).
            let tokens = try await client.jwtBearer(assertion: answer.issuedToken)
            #expect(tokens.tokenType == .bearer)
            #expect(tokens.refreshToken == nil)
            let claims = try Authgent.claims(tokens.accessToken)
            #expect(claims["sub"] == grantClaims["sub"])
            #expect(claims["chained_from"] == .string(Authgent.issuer.absoluteString))

            // An assertion is single-use: the second presentation is refused.
            do {
                _ = try await client.jwtBearer(assertion: answer.issuedToken)
                Issue.record("a replayed assertion was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidGrant)
                #expect(error.source == .server)
                #expect(error.statusCode == 400)
            }
        }

        @Test(arguments: TransportKind.allCases)
        func anAssertionTheLibrarySignsIsAccepted(transport: TransportKind) async throws {
            let client = try await Authgent.client(transport: transport)
            let assertion = client.jwtBearerAssertion(issuer: Authgent.issuer.absoluteString, subject: "user:alice")
            #expect(assertion.audience == Authgent.issuer.absoluteString)
            let tokens = try await client.jwtBearer(signing: assertion, with: try Authgent.assertionKey(), scopes: [])
            let claims = try Authgent.claims(tokens.accessToken)
            #expect(claims["sub"] == .string("user:alice"))
            #expect(claims["client_id"] == .string(client.configuration.clientID))
            #expect(tokens.expiresAt != nil)
        }

        @Test func aForgedAssertionIsRefused() async throws {
            let client = try await Authgent.client()
            // Same issuer, same kid, another key: the signature does not verify.
            let forger = try JWSSigningKey.generate(.es256, keyID: Authgent.assertionKeyID)
            let assertion = client.jwtBearerAssertion(issuer: Authgent.issuer.absoluteString, subject: "user:mallory")
            do {
                _ = try await client.jwtBearer(signing: assertion, with: forger)
                Issue.record("a forged assertion was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidGrant)
                #expect(error.requiresReauthorization)
                #expect(error.statusCode == 400)
                #expect(!(error.message ?? "").contains(try assertion.signed(with: forger).prefix(40)))
            }
            // And an assertion from an issuer it does not trust, signed by the trusted key.
            let untrusted = JWTBearerAssertion(issuer: "https://elsewhere.example", subject: "alice", audience: Authgent.issuer.absoluteString)
            await #expect(throws: OAuth2Error.self) {
                do { _ = try await client.jwtBearer(signing: untrusted, with: try Authgent.assertionKey()) } catch let error as OAuth2Error {
                    #expect(error.code == .invalidGrant)
                    throw error
                }
            }
        }

        @Test func aBadSubjectTokenIsRefusedWithInvalidGrant() async throws {
            let client = try await Authgent.client()
            // Not a JWT at all, and a well-formed JWT signed by a key authgent does not know.
            let stranger = try JWSSigningKey.generate(.es256, keyID: "stranger")
            let forged = try stranger.sign(claims: [
                "iss": .string(Authgent.issuer.absoluteString), "sub": .string("client:x"),
                "exp": .integer(Int64(Date().timeIntervalSince1970) + 300), "jti": .string("forged"),
            ])
            for subject in ["not-a-token", forged] {
                do {
                    _ = try await client.exchangeToken(
                        TokenExchangeRequest(subject: .init(subject, type: .accessToken), audiences: ["https://backend.example.test"]))
                    Issue.record("a bad subject token was exchanged")
                } catch let error as OAuth2Error {
                    #expect(error.code == .invalidGrant)
                    #expect(error.source == .server)
                    #expect(!(error.message ?? "").contains(subject))
                }
            }
            // A subject token type the server does not take: invalid_request.
            let subject = try await Authgent.subjectToken(client)
            do {
                _ = try await client.exchangeToken(
                    TokenExchangeRequest(subject: .init(subject.accessToken, type: .saml2), audiences: ["https://backend.example.test"]))
                Issue.record("an unsupported subject token type was accepted")
            } catch let error as OAuth2Error {
                #expect(error.code == .invalidRequest)
            }
        }

        @Test func aSessionExchangesItsAccessTokenAndKeepsItsOwn() async throws {
            let client = try await Authgent.client(variant: "session")
            let tokens = try await Authgent.subjectToken(client)
            let session = try await TokenSession(client: client, tokens: tokens)
            let answer = try await session.exchange(audiences: ["https://backend.example.test"], scopes: [])
            #expect(answer.issuedTokenType == .accessToken)
            #expect(try Authgent.claims(answer.issuedToken)["aud"] == .string("https://backend.example.test"))
            #expect(session.tokens?.accessToken == tokens.accessToken, "the session keeps its own tokens")

            // A session made of an exchanged token.
            let downstream = TokenSession(client: client)
            try await downstream.signIn { client in
                let exchanged = try await client.exchangeToken(
                    TokenExchangeRequest(subject: .init(tokens.accessToken, type: .accessToken), audiences: ["https://backend.example.test"]))
                return try #require(exchanged.tokenSet)
            }
            let access = try await downstream.freshAccessToken()
            #expect(try Authgent.claims(access)["aud"] == .string("https://backend.example.test"))
        }
    }
}
