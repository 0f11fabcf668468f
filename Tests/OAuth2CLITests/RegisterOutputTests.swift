import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// What `register --json` and `register --show` print: the registration's RFC 7591 members,
/// never its client secret or registration access token.
@Suite struct RegisterOutputTests {
    @Test func theRegistrationWithoutItsSecrets() throws {
        var metadata = RegistrationMetadata(redirectURIs: [URL(string: "http://127.0.0.1:8400/callback")!])
        metadata.clientName = "my tool"
        metadata.grantTypes = ["authorization_code", "refresh_token"]
        let registration = ClientRegistration(
            clientID: "client-1", clientSecret: "the-client-secret", clientIDIssuedAt: Date(timeIntervalSince1970: 1_700_000_000),
            clientSecretExpiresAt: Date(timeIntervalSince1970: 1_800_000_000), registrationAccessToken: "the-registration-token",
            registrationClientURI: URL(string: "https://id.example.com/register/client-1"), metadata: metadata)
        let members = RegisterCommand.members(of: registration)
        #expect(members["client_id"] == .string("client-1"))
        #expect(members["registration_client_uri"] == .string("https://id.example.com/register/client-1"))
        #expect(members["client_id_issued_at"] == .integer(1_700_000_000))
        #expect(members["client_secret_expires_at"] == .integer(1_800_000_000))
        #expect(members["client_name"] == .string("my tool"))
        #expect(members["client_secret"] == nil)
        #expect(members["registration_access_token"] == nil)
        let printed = Output.pretty(.object(members))
        #expect(!printed.contains("the-client-secret"))
        #expect(!printed.contains("the-registration-token"))
    }
}
