import Foundation

// OktaOidc's Okta.plist, as OktaOidcConfig(with:) reads it.

extension SettingsFile {
    static let oktaKeys: Set<String> = ["issuer", "clientId", "redirectUri", "logoutRedirectUri", "scopes"]

    static func readOkta(_ reader: SettingsReader) throws(OAuth2Error) -> SettingsFile {
        // OktaOidc requires these four, and reads every value as a string.
        let clientID = try reader.requiredString("clientId")
        let issuer = try Self.requiredURL(reader, "issuer", endpoint: true)
        let scopes = try reader.requiredString("scopes").split(separator: " ").map(String.init)
        let redirectURI = try Self.requiredURL(reader, "redirectUri", endpoint: false)
        let logoutRedirectURI = try reader.url("logoutRedirectUri", endpoint: false)

        // Every other key is an extra authorization parameter (login_hint, idp…), as in
        // OktaOidc — but a secret must never travel in a URL.
        var parameters: [String: String] = [:]
        for key in reader.keys.subtracting(oktaKeys).sorted() {
            let lowered = key.lowercased()
            if lowered.contains("secret") || lowered.contains("password") {
                throw invalid(
                    "\(quoted(key)) would be sent in the authorization URL, where a secret must never go; OktaOidc settings carry no secret.")
            }
            guard let value = try reader.string(key) else { continue }
            parameters[key] = value
        }
        var configuration = ClientConfiguration(
            clientID: clientID,
            authenticationMethod: ClientAuthenticationMethod.none,
            redirectURI: redirectURI,
            scopes: scopes
        )
        if !parameters.isEmpty { configuration.additionalParameters[.authorization] = parameters }
        return SettingsFile(
            format: .oktaOIDC,
            configuration: configuration,
            server: .issuer(issuer),
            redirectURIs: [redirectURI],
            postLogoutRedirectURI: logoutRedirectURI
        )
    }

    static func requiredURL(_ reader: SettingsReader, _ key: String, endpoint: Bool) throws(OAuth2Error) -> URL {
        try SettingsReader.url(try reader.requiredString(key), key: key, endpoint: endpoint)
    }
}
