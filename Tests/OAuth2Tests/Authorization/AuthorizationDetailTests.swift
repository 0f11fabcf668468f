import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

/// Rich Authorization Requests (RFC 9396): `authorization_details` in each kind of request
/// (by value, request object, PAR, token request), typed and generic, read back from token
/// and introspection answers, kept with a stored token set, and matched against requirements.
@Suite struct AuthorizationDetailTests {
    struct Amount: Codable, Hashable, Sendable {
        var currency: String
        var amount: String
    }

    /// A type of the app's own (RFC 9396 §2's example).
    struct PaymentInitiation: AuthorizationDetailType, Hashable {
        static let type = "payment_initiation"
        var locations: [String]
        var actions: [String]
        var instructedAmount: Amount
        var creditorName: String
    }

    static let payment = PaymentInitiation(
        locations: ["https://example.com/payments"], actions: ["initiate", "status"],
        instructedAmount: Amount(currency: "EUR", amount: "123.50"), creditorName: "Merchant A")

    /// The query decoded as a form, as a server reads it (`+` is a space).
    func query(_ url: URL) -> [String: String] {
        let pairs = (url.query ?? "").split(separator: "&").map { pair -> (String, String) in
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
        return Dictionary(pairs, uniquingKeysWith: { first, _ in first })
    }

    func array(_ text: String?) throws -> [JSONValue] {
        let text = try #require(text)
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        return try #require(value.arrayValue)
    }

    @Test func aTypedValueEncodesUnderItsTypeAndDecodesBack() throws {
        let detail = try AuthorizationDetail(Self.payment)
        #expect(detail.type == "payment_initiation")
        #expect(detail.locations == ["https://example.com/payments"])
        #expect(detail.actions == ["initiate", "status"])
        #expect(detail.members["creditorName"] == "Merchant A")
        #expect(detail.members["instructedAmount"] == .object(["currency": "EUR", "amount": "123.50"]))
        #expect(detail.json.objectValue?["type"] == "payment_initiation")
        #expect(try detail.decode(as: PaymentInitiation.self) == Self.payment)
    }

    @Test func aTypedValueWithAnotherTypeMemberIsRefused() throws {
        struct Liar: AuthorizationDetailType {
            static let type = "a"
            var type = "b"
        }
        #expect(throws: OAuth2Error.self) { try AuthorizationDetail(Liar()) }
        struct Scalar: AuthorizationDetailType {
            static let type = "scalar"
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(1)
            }
            init() {}
            init(from decoder: any Decoder) throws {}
        }
        let error = #expect(throws: OAuth2Error.self) { try AuthorizationDetail(Scalar()) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func decodingAnotherTypeOrBadMembersIsATypedError() throws {
        let other = AuthorizationDetail(type: "account_information", actions: ["list_accounts"])
        #expect(throws: OAuth2Error.self) { try other.decode(as: PaymentInitiation.self) }
        let broken = AuthorizationDetail(type: "payment_initiation", actions: ["initiate"])
        let error = #expect(throws: OAuth2Error.self) { try broken.decode(as: PaymentInitiation.self) }
        #expect(error?.code == .invalidResponse)
    }

    @Test func theGenericFormSendsTheCommonMembersOnlyWhenGiven() throws {
        let detail = AuthorizationDetail(
            type: "customer_information", locations: ["https://api.example"], identifier: "cust-1",
            members: ["type": "ignored", "custom": .object(["a": 1])])
        #expect(detail.type == "customer_information")
        #expect(Set(detail.members.keys) == ["locations", "identifier", "custom"])
        #expect(detail.datatypes == nil)
        let parameter = try AuthorizationDetail.parameter([detail])
        #expect(parameter == #"[{"custom":{"a":1},"identifier":"cust-1","locations":["https://api.example"],"type":"customer_information"}]"#)
        #expect(AuthorizationDetail(json: .object(["actions": ["x"]])) == nil, "no type")
        #expect(AuthorizationDetail(json: "text") == nil)
    }

    @Test func byValueTheDetailsAreOneJSONArrayParameter() throws {
        let client = try Fixtures.client(StubTransport(status: 500, json: "{}"))
        let request = try client.authorizationRequest(AuthorizationOptions(authorizationDetails: [try AuthorizationDetail(Self.payment)]))
        let entries = try array(query(request.url)["authorization_details"])
        #expect(entries.count == 1)
        #expect(entries[0].objectValue?["type"] == "payment_initiation")
        #expect(entries[0].objectValue?["creditorName"] == "Merchant A")
        let none = try client.authorizationRequest()
        #expect(query(none.url)["authorization_details"] == nil, "none sent when none asked for")
    }

    @Test func inARequestObjectTheDetailsAreAnArrayClaim() throws {
        var configuration = Fixtures.configuration()
        configuration.requestObject = RequestObjectOptions(signingKey: try JWSSigningKey.generate(.es256))
        let client = try Fixtures.client(StubTransport(status: 500, json: "{}"), configuration: configuration)
        let details = [AuthorizationDetail(type: "a", actions: ["read"]), AuthorizationDetail(type: "b")]
        let request = try client.authorizationRequest(AuthorizationOptions(authorizationDetails: details))
        #expect(query(request.url)["authorization_details"] == nil, "inside the object only")
        let claims = try JWS(compact: try #require(query(request.url)["request"])).claims()
        let claim = try #require(claims["authorization_details"]?.arrayValue)
        #expect(claim.compactMap(AuthorizationDetail.init(json:)) == details)
    }

    @Test func aPushedRequestCarriesTheDetails() async throws {
        let transport = StubTransport(status: 201, json: #"{"request_uri":"urn:x","expires_in":60}"#)
        let metadata = Fixtures.metadata.filling(from: ServerMetadata(additionalFields: [
            "pushed_authorization_request_endpoint": "https://as.example.com/par"]))
        let client = try Fixtures.client(transport, metadata: metadata)
        let request = try await client.pushAuthorizationRequest(AuthorizationOptions(authorizationDetails: [AuthorizationDetail(type: "a")]))
        let entries = try array(transport.sent.first?.form["authorization_details"])
        #expect(entries == [.object(["type": "a"])])
        #expect(query(request.url)["authorization_details"] == nil)
    }

    @Test func theTokenRequestCarriesTheDetails() async throws {
        let transport = StubTransport(json: #"{"access_token":"at","token_type":"Bearer","authorization_details":[{"type":"payment_initiation","locations":["https://example.com/payments"],"actions":["initiate","status"],"instructedAmount":{"currency":"EUR","amount":"123.50"},"creditorName":"Merchant A"}]}"#)
        let client = try Fixtures.client(transport)
        let grant = try Grant.clientCredentials(scopes: ["read"]).addingAuthorizationDetails([try AuthorizationDetail(Self.payment)])
        let tokens = try await client.requestToken(grant)
        let form = try #require(transport.sent.first?.form)
        #expect(form["grant_type"] == "client_credentials")
        #expect(form["scope"] == "read")
        #expect(try array(form["authorization_details"]).first?.objectValue?["type"] == "payment_initiation")
        #expect(try tokens.authorizationDetails(of: PaymentInitiation.self) == [Self.payment])
        #expect(throws: OAuth2Error.self) { try grant.addingAuthorizationDetails([AuthorizationDetail(type: "again")]) }
        #expect(try Grant.clientCredentials().addingAuthorizationDetails([]).parameters.isEmpty)
    }

    @Test func theGrantedDetailsAreKeptWithAStoredTokenSetAndAcrossARefresh() throws {
        let granted: JSONValue = [.object(["type": "a", "actions": ["read"]])]
        let tokens = TokenSet(accessToken: "at", refreshToken: "rt", additionalFields: ["authorization_details": granted])
        let stored = try JSONDecoder().decode(TokenSet.self, from: JSONEncoder().encode(tokens))
        #expect(stored.authorizationDetails == [AuthorizationDetail(type: "a", actions: ["read"])])
        let refreshed = tokens.merging(refreshed: TokenSet(accessToken: "at-2"))
        #expect(refreshed.authorizationDetails == stored.authorizationDetails, "a refresh answer without details keeps them")
        let narrowed = tokens.merging(refreshed: TokenSet(accessToken: "at-3", additionalFields: ["authorization_details": [.object(["type": "b"])]]))
        #expect(narrowed.authorizationDetails == [AuthorizationDetail(type: "b")])
        #expect(TokenSet(accessToken: "at").authorizationDetails == nil)
        #expect(TokenSet(accessToken: "at", additionalFields: ["authorization_details": [.object(["no": "type"])]]).authorizationDetails == nil)
        // Lenient: a server that sends the array as a string.
        let quoted = TokenSet(accessToken: "at", additionalFields: ["authorization_details": #"[{"type":"q"}]"#])
        #expect(quoted.authorizationDetails == [AuthorizationDetail(type: "q")])
    }

    @Test func introspectionAnswersCarryTheDetails() async throws {
        let transport = StubTransport(json: #"{"active":true,"authorization_details":[{"type":"payment_initiation","locations":["https://example.com/payments"],"actions":["initiate"],"instructedAmount":{"currency":"EUR","amount":"1"},"creditorName":"B"}]}"#)
        let answer = try await Fixtures.client(transport).introspect("at")
        let payments = try answer.authorizationDetails(of: PaymentInitiation.self)
        #expect(payments.map(\.creditorName) == ["B"])
        #expect(answer.authorizationDetails?.first?.actions == ["initiate"])
    }

    @Test func aGrantedEntryCoversARequiredOneMemberByMember() throws {
        let granted = [
            AuthorizationDetail(
                type: "account_information", locations: ["https://a.example", "https://b.example"], actions: ["list", "read_balances"],
                members: ["limits": .object(["currency": "EUR", "max": 100]), "flag": true]),
            try AuthorizationDetail(Self.payment),
        ]
        #expect(granted.covers([AuthorizationDetail(type: "account_information")]), "the type alone")
        #expect(granted.covers([AuthorizationDetail(type: "account_information", actions: ["read_balances"])]), "a subset of an array")
        #expect(granted.covers([AuthorizationDetail(type: "account_information", members: ["limits": .object(["currency": "EUR"])])]), "part of an object")
        #expect(granted.covers([AuthorizationDetail(type: "account_information", members: ["limits": .object(["max": .number(100)])])]), "100 == 100.0")
        #expect(granted.covers([AuthorizationDetail(type: "account_information", members: ["flag": true]), AuthorizationDetail(type: "payment_initiation")]))
        #expect(!granted.covers([AuthorizationDetail(type: "account_information", actions: ["transfer"])]), "an action not granted")
        #expect(!granted.covers([AuthorizationDetail(type: "account_information", identifier: "x")]), "a member the grant lacks")
        #expect(!granted.covers([AuthorizationDetail(type: "account_information", members: ["flag": false])]), "another value")
        #expect(!granted.covers([AuthorizationDetail(type: "customer_information")]), "another type")
        #expect(!granted.covers([AuthorizationDetail(type: "account_information", members: ["limits": .object(["currency": "USD"])])]))
        #expect([AuthorizationDetail]().covers([]), "nothing required")
        #expect(![AuthorizationDetail]().covers([AuthorizationDetail(type: "a")]))
    }

    @Test func theDescriptionShowsNoValue() throws {
        let text = String(describing: try AuthorizationDetail(Self.payment))
        #expect(!text.contains("Merchant"))
        #expect(text.contains("creditorName"))
    }
}
