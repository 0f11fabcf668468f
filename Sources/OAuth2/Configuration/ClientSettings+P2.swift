import Foundation
import HTTPTypes

// p2/OAuth2's settings dictionary, as OAuth2ClientConfig and OAuth2Base read it.

extension SettingsFile {
    /// Keys only p2's format uses: one of them makes a file p2's.
    static let p2OnlyKeys: Set<String> = [
        "authorize_uri", "token_uri", "refresh_uri", "registration_uri", "device_authorize_uri", "logo_uri",
        "secret_in_body", "parameters", "headers", "token_assume_unexpired", "use_pkce", "device_id",
        "keychain", "keychain_access_mode", "keychain_access_group", "keychain_account_for_client_credentials",
        "keychain_account_for_tokens", "verbose", "title",
    ]

    /// p2 keys with no effect here: Apple's keychain and UI, p2's logger, a registration
    /// logo, and `use_pkce` (PKCE is always on).
    static let p2IgnoredKeys: Set<String> = [
        "keychain", "keychain_access_mode", "keychain_access_group", "keychain_account_for_client_credentials",
        "keychain_account_for_tokens", "verbose", "title", "logo_uri", "use_pkce",
    ]

    static let p2Keys: Set<String> = p2OnlyKeys.union(["client_id", "client_secret", "redirect_uris", "scope", "client_name"])

    static func readP2(_ reader: SettingsReader) throws(OAuth2Error) -> SettingsFile {
        try reader.rejectUnknownKeys(known: p2Keys) { key in
            ownKeys.contains(key)
                ? "It is a key of swift-oauth2's own format; a file is read as p2/OAuth2 settings when it has one of p2's keys (authorize_uri, token_uri…)."
                : nil
        }
        let clientID = try reader.requiredString("client_id")
        let secret = try reader.string("client_secret")
        let secretInBody = try reader.bool("secret_in_body") ?? false

        // Endpoints. p2 falls back to authorize_uri for tokens and to the token URL for refreshes.
        let authorize = try reader.url("authorize_uri", endpoint: true)
        let token = try reader.url("token_uri", endpoint: true) ?? authorize
        if let refresh = try reader.url("refresh_uri", endpoint: true), refresh != token {
            throw invalid("\(quoted("refresh_uri")) differs from the token URL; refreshing at another endpoint is not supported.")
        }
        guard authorize != nil || token != nil else {
            throw invalid("p2/OAuth2 settings need \(quoted("authorize_uri")) or \(quoted("token_uri")).")
        }
        let metadata = ServerMetadata(
            authorizationEndpoint: authorize,
            tokenEndpoint: token,
            deviceAuthorizationEndpoint: try reader.url("device_authorize_uri", endpoint: true),
            registrationEndpoint: try reader.url("registration_uri", endpoint: true)
        )

        // Client authentication, as p2 chooses it: the body with secret_in_body, else Basic
        // whenever there is a secret — "" included, which p2 documents for Reddit.
        var quirks: ServerQuirks = []
        let method: ClientAuthenticationMethod
        switch (secret, secretInBody) {
        case (nil, _): method = .none
        case (.some(let value), true): method = value.isEmpty ? .none : .clientSecretPost
        case (.some(let value), false):
            method = .clientSecretBasic
            if value.isEmpty { quirks.insert(.basicAuthenticationWithEmptySecret) }
        }

        let redirectURIs = try reader.urls("redirect_uris") ?? []
        var configuration = ClientConfiguration(
            clientID: clientID,
            clientSecret: secret?.isEmpty == true ? nil : secret,
            authenticationMethod: method,
            redirectURI: redirectURIs.first,
            scopes: try reader.scopes("scope", allowArray: false) ?? [],
            quirks: quirks
        )
        // p2 adds `parameters` to the authorize URL and to every request it POSTs, and
        // `headers` to every request it POSTs (token, refresh, device authorization).
        if let parameters = try reader.stringMap("parameters"), !parameters.isEmpty {
            for kind in [RequestKind.authorization, .token, .deviceAuthorization] {
                configuration.additionalParameters[kind] = parameters
            }
        }
        if let deviceID = try reader.string("device_id") {
            configuration.additionalParameters[.token, default: [:]]["device_id"] = deviceID
        }
        if let headers = try reader.stringMap("headers"), !headers.isEmpty {
            var fields = HTTPFields()
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                guard let fieldName = HTTPField.Name(name) else {
                    throw invalid("\(quoted("headers.\(name)")) is not a valid header name.")
                }
                fields[fieldName] = value
            }
            configuration.additionalHeaders[.token] = fields
            configuration.additionalHeaders[.deviceAuthorization] = fields
        }
        return SettingsFile(
            format: .p2,
            configuration: configuration,
            server: .metadata(metadata),
            redirectURIs: redirectURIs,
            clientName: try reader.string("client_name"),
            assumesTokensWithoutExpiryAreValid: try reader.bool("token_assume_unexpired") ?? true,
            ignoredKeys: reader.keys.intersection(p2IgnoredKeys).sorted()
        )
    }
}
