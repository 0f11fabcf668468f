import Foundation
import OAuth2JOSE

extension TestProvider {
    /// How the provider accepts clients identified by a Client ID Metadata Document
    /// (draft-ietf-oauth-client-id-metadata-document): a `client_id` that is an `https` URL,
    /// whose document the provider fetches and validates instead of looking the client up.
    ///
    /// Set ``Configuration/clientMetadataDocuments`` to turn it on; the metadata then says
    /// `client_id_metadata_document_supported: true`.
    ///
    /// ```swift
    /// var configuration = TestProvider.Configuration.demo
    /// configuration.clientMetadataDocuments = .init(trustedRootCertificatesPEM: [testCAPEM])
    /// ```
    ///
    /// The document is fetched with one HTTPS GET: redirects are not followed, the answer
    /// must be `200` `application/json` within ``timeout`` and at most ``maximumSize``
    /// bytes. It is then checked (``validateClientMetadataDocument(_:clientID:)``) and kept
    /// for ``cacheLifetime``. A refusal answers the authorization request with
    /// `invalid_client` (never a redirect: the redirect URI is not known good) and the
    /// token request with `invalid_client`; ``clientMetadataDocumentRefusals`` keeps the
    /// reasons.
    public struct ClientMetadataDocuments: Sendable, Hashable {
        /// PEM certificates (each string one or more) trusted as roots when fetching a
        /// document, instead of the system's: tests serve their documents over TLS with a
        /// CA they make. Empty (the default): the system's trust store.
        public var trustedRootCertificatesPEM: [String]
        /// The largest document accepted, in bytes. Default 5 KiB (the draft's suggestion).
        public var maximumSize: Int
        /// How long a fetch may take. Default 10 seconds.
        public var timeout: Duration
        /// How long a valid document is used before it is fetched again. Default 1 minute;
        /// `.zero` fetches at every request.
        public var cacheLifetime: Duration

        /// Creates the settings.
        public init(
            trustedRootCertificatesPEM: [String] = [], maximumSize: Int = 5120, timeout: Duration = .seconds(10),
            cacheLifetime: Duration = .seconds(60)
        ) {
            self.trustedRootCertificatesPEM = trustedRootCertificatesPEM
            self.maximumSize = maximumSize
            self.timeout = timeout
            self.cacheLifetime = cacheLifetime
        }
    }

    /// Why a Client ID Metadata Document, or the URL naming it, was refused.
    public struct ClientMetadataDocumentError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What was wrong, stable across versions.
        public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
            /// The code's name.
            public let rawValue: String
            /// A code by its name.
            public init(rawValue: String) { self.rawValue = rawValue }
            /// The code's name.
            public var description: String { rawValue }

            /// The `client_id` is not an `https` URL with a host and a path, or it has a
            /// fragment, credentials, or `.`/`..` segments (draft §3).
            public static let invalidClientIDURL = Code(rawValue: "invalid_client_id_url")
            /// The document could not be fetched: no connection, a TLS failure (an untrusted
            /// certificate), a timeout.
            public static let fetchFailed = Code(rawValue: "fetch_failed")
            /// The document's server answered with something else than `200` (a redirect
            /// included: redirects are not followed).
            public static let badStatus = Code(rawValue: "bad_status")
            /// The answer is larger than ``ClientMetadataDocuments/maximumSize``.
            public static let tooLarge = Code(rawValue: "too_large")
            /// The answer is not a JSON object (or not `application/json`).
            public static let notJSON = Code(rawValue: "not_json")
            /// The document's `client_id` is not the URL it was fetched from.
            public static let clientIDMismatch = Code(rawValue: "client_id_mismatch")
            /// `redirect_uris` is missing, empty, or holds something else than absolute URIs
            /// without a fragment.
            public static let invalidRedirectURIs = Code(rawValue: "invalid_redirect_uris")
            /// The document carries a shared secret (`client_secret`,
            /// `client_secret_expires_at`) or asks for a `client_secret_*` method (draft §4.1).
            public static let sharedSecret = Code(rawValue: "shared_secret")
            /// The document asks for a token endpoint authentication method or grant type
            /// the provider does not offer to such clients (only `none`; `authorization_code`
            /// and `refresh_token`).
            public static let unsupportedMetadata = Code(rawValue: "unsupported_metadata")
        }

        /// What was wrong.
        public let code: Code
        /// A sentence for people (names fields, never values of secrets).
        public let message: String

        init(_ code: Code, _ message: String) {
            self.code = code
            self.message = message
        }

        /// Code and message.
        public var description: String { "ClientMetadataDocumentError(\(code)): \(message)" }
    }

    /// A refused Client ID Metadata Document: which `client_id` and why.
    public struct ClientMetadataDocumentRefusal: Sendable, Hashable {
        /// The `client_id` (the document's URL).
        public let clientID: String
        /// Why it was refused.
        public let error: ClientMetadataDocumentError
    }

    /// The refusals of Client ID Metadata Documents so far, oldest first.
    public var clientMetadataDocumentRefusals: [ClientMetadataDocumentRefusal] {
        core.state.withLock { $0.clientMetadataDocumentRefusals }
    }

    /// Checks that `clientID` can name a Client ID Metadata Document (draft §3): an `https`
    /// URL with a host and a path other than `/`, without fragment, user or password, and
    /// without `.` or `..` path segments.
    ///
    /// - Returns: the URL.
    /// - Throws: ``ClientMetadataDocumentError`` `.invalidClientIDURL`.
    public static func clientMetadataDocumentURL(_ clientID: String) throws(ClientMetadataDocumentError) -> URL {
        func refuse(_ why: String) -> ClientMetadataDocumentError { ClientMetadataDocumentError(.invalidClientIDURL, why) }
        guard let components = URLComponents(string: clientID), let url = components.url, let scheme = components.scheme else {
            throw refuse("The client_id is not a URL.")
        }
        guard scheme == "https" else { throw refuse("A client_id naming a metadata document must be an https URL (it is \(scheme)).") }
        guard let host = components.host, !host.isEmpty else { throw refuse("The client_id URL has no host.") }
        guard components.user == nil, components.password == nil else { throw refuse("The client_id URL carries credentials.") }
        guard components.fragment == nil else { throw refuse("The client_id URL has a fragment.") }
        let path = components.percentEncodedPath
        guard path.count > 1, path.hasPrefix("/") else { throw refuse("The client_id URL has no path (the draft requires one).") }
        guard !path.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == "." || $0 == ".." }) else {
            throw refuse("The client_id URL has a . or .. path segment.")
        }
        return url
    }

    /// Checks a fetched Client ID Metadata Document against the `client_id` that named it
    /// (draft §4): a JSON object whose `client_id` is that URL exactly, with `redirect_uris`
    /// (absolute URIs without fragment), no shared secret, `token_endpoint_auth_method`
    /// `none` (or absent), and only the `authorization_code` and `refresh_token` grants.
    ///
    /// - Returns: the public client the document describes (its `redirect_uris`, and its
    ///   `scope` as the allowed scopes when present).
    /// - Throws: ``ClientMetadataDocumentError``.
    public static func validateClientMetadataDocument(_ document: [UInt8], clientID: String) throws(ClientMetadataDocumentError) -> Client {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(document)), case .object(let members) = value else {
            throw ClientMetadataDocumentError(.notJSON, "The document is not a JSON object.")
        }
        guard members["client_id"]?.stringValue == clientID else {
            throw ClientMetadataDocumentError(.clientIDMismatch, "The document's client_id is not the URL it was fetched from.")
        }
        guard case .array(let uris)? = members["redirect_uris"], !uris.isEmpty else {
            throw ClientMetadataDocumentError(.invalidRedirectURIs, "The document has no redirect_uris.")
        }
        var redirectURIs: [URL] = []
        for uri in uris {
            guard let text = uri.stringValue, let url = URL(string: text), url.scheme != nil, url.fragment == nil, url.absoluteString == text else {
                throw ClientMetadataDocumentError(.invalidRedirectURIs, "A redirect_uri is not an absolute URI without a fragment.")
            }
            redirectURIs.append(url)
        }
        if members["client_secret"] != nil || members["client_secret_expires_at"] != nil {
            throw ClientMetadataDocumentError(.sharedSecret, "The document carries a client secret; a metadata document cannot have one.")
        }
        if let method = members["token_endpoint_auth_method"] {
            guard let name = method.stringValue else {
                throw ClientMetadataDocumentError(.unsupportedMetadata, "token_endpoint_auth_method is not a string.")
            }
            if name.hasPrefix("client_secret") {
                throw ClientMetadataDocumentError(.sharedSecret, "token_endpoint_auth_method \(name) needs a shared secret, which a metadata document cannot have.")
            }
            guard name == "none" else {
                throw ClientMetadataDocumentError(.unsupportedMetadata, "token_endpoint_auth_method \(name) is not supported here (only none).")
            }
        }
        var grantTypes: Set<GrantType> = [.authorizationCode, .refreshToken]
        if let grants = members["grant_types"] {
            guard case .array(let names) = grants, let strings = Optional(names.compactMap(\.stringValue)), strings.count == names.count else {
                throw ClientMetadataDocumentError(.unsupportedMetadata, "grant_types is not an array of strings.")
            }
            grantTypes = Set(strings.map(GrantType.init(rawValue:)))
            if let other = grantTypes.subtracting([.authorizationCode, .refreshToken]).map(\.rawValue).sorted().first {
                throw ClientMetadataDocumentError(.unsupportedMetadata, "The grant type \(other) is not offered to metadata-document clients.")
            }
        }
        var allowedScopes: Set<String>?
        if let scope = members["scope"] {
            guard let text = scope.stringValue else { throw ClientMetadataDocumentError(.unsupportedMetadata, "scope is not a string.") }
            allowedScopes = Set(text.split(separator: " ").map(String.init))
        }
        return Client(id: clientID, redirectURIs: redirectURIs, grantTypes: grantTypes, allowedScopes: allowedScopes)
    }
}
