import Foundation
import HTTPTypes
import OAuth2Internals

extension OAuth2Client {
    /// POSTs an authenticated form request: the client's authentication is applied, the
    /// configuration's extras for `kind` are added. `read` gets the response, its body and
    /// the time the request was sent; an ``OAuth2Error`` it throws leaves with every secret
    /// the request carried withheld from the server's text (see ``HeldSecrets``).
    ///
    /// With `dpop` (and ``ClientConfiguration/dpop`` set), the request carries a DPoP proof
    /// with the server's latest nonce; an answer asking for another nonce
    /// (`use_dpop_nonce` with a `DPoP-Nonce` header) is retried once with it. A retry is a
    /// new request: new client assertion, new proof.
    func post<Answer>(
        _ url: URL,
        parameters: [(String, String)],
        kind: RequestKind,
        authMethods: [String]?,
        dpop: Bool = false,
        accept: String? = nil,
        read: (HTTPResponse, Data, Date) throws -> Answer
    ) async throws -> Answer {
        let key = dpop ? configuration.dpop?.key : nil
        var sentAt = now()
        let sent = try await sendRetryingDPoPNonce(to: url, dpop: key != nil, kind: kind) { nonce in
            var request = try HTTPRequest.make(method: .post, url: url)
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            if let accept { request.headerFields[.accept] = accept }
            var parameters = parameters
            let method = configuration.resolvedAuthenticationMethod(supported: authMethods)
            try ClientAuthentication.apply(
                method, configuration: configuration, endpoint: url, metadata: metadata, now: now(),
                to: &request, parameters: &parameters)
            parameters.appendExtras(configuration.additionalParameters[kind] ?? [:])
            if let key { request.headerFields[.dpop] = try Self.proof(key, method: .post, url: url, nonce: nonce, now: now()) }
            sentAt = now()
            return (request, Data(FormURLEncoding.encode(parameters).utf8))
        }
        do {
            return try read(sent.response, sent.responseBody, sentAt)
        } catch let error as OAuth2Error {
            throw error.withholding(HeldSecrets(request: sent.request, body: sent.body))
        }
    }

    /// Sends the request `make` builds for a DPoP nonce — the server's latest for `url`
    /// when `dpop` — and, when the answer refuses the proof for want of a new nonce
    /// (`use_dpop_nonce` with a `DPoP-Nonce` header, RFC 9449 §8 and §9), once more with the
    /// nonce it gave: a new request, so a new proof (and client assertion). Every nonce a
    /// response carries is remembered for the server's next requests.
    func sendRetryingDPoPNonce(
        to url: URL, dpop: Bool, kind: RequestKind, _ make: (_ nonce: String?) async throws -> (HTTPRequest, Data?)
    ) async throws -> (request: HTTPRequest, body: Data?, response: HTTPResponse, responseBody: Data) {
        var nonce = dpop ? await dpopNonces.nonce(for: url) : nil
        var retried = false
        while true {
            let (request, body) = try await make(nonce)
            let (response, responseBody) = try await pipeline.send(request, body: body, kind: kind)
            // (No call to the nonce store for the usual response without a nonce.)
            let fresh = response.headerFields[.dpopNonce] == nil ? nil : await dpopNonces.remember(from: response, for: url)
            guard dpop, !retried, let fresh, fresh != nonce, Self.asksForDPoPNonce(response, body: responseBody) else {
                return (request, body, response, responseBody)
            }
            nonce = fresh
            retried = true
        }
    }

    /// A signed DPoP proof, or ``OAuth2Error/Code/invalidConfiguration`` when the key cannot sign.
    static func proof(
        _ key: DPoPKey, method: HTTPRequest.Method, url: URL, accessToken: String? = nil, nonce: String?, now: Date
    ) throws(OAuth2Error) -> String {
        do {
            return try key.proof(method: method, url: url, accessToken: accessToken, nonce: nonce, issuedAt: now)
        } catch {
            throw OAuth2Error(.invalidConfiguration, source: .client, message: "The DPoP proof cannot be signed: \(error.message)", underlyingError: error)
        }
    }

    /// `true` when a response refuses a DPoP proof for want of a (new) nonce: the
    /// authorization server's `{"error": "use_dpop_nonce"}` (RFC 9449 §8) or a resource
    /// server's `WWW-Authenticate: DPoP error="use_dpop_nonce"` (§9).
    static func asksForDPoPNonce(_ response: HTTPResponse, body: Data) -> Bool {
        guard response.status.kind == .clientError else { return false }
        let code = OAuth2Error.Code.useDPoPNonce.rawValue
        for value in response.headerFields[values: .wwwAuthenticate] {
            if let challenge = WWWAuthenticate(value), challenge.scheme.lowercased() == "dpop", challenge.parameters["error"] == code {
                return true
            }
        }
        return ResponseParsing.members(of: body, contentType: response.headerFields[.contentType])?["error"]?.stringValue == code
    }
}
