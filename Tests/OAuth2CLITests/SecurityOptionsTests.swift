import ArgumentParser
import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// A key fixture of Glewlwyd's `private_key_jwt` client (Tests/Fixtures/glewlwyd/).
private func fixture(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/glewlwyd").appendingPathComponent(name).path
}

private let loginBase = ["--issuer", "https://id.example.com", "--client-id", "app"]
private let machineBase = ["--grant", "client_credentials", "--issuer", "https://id.example.com", "--client-id", "svc"]

@Suite struct DPoPArgumentTests {
    @Test func aBareDPoPBecomesAutomatic() {
        #expect(DPoPArgument.expanded(["login", "--dpop", "--issuer", "x"]) == ["login", "--dpop=auto", "--issuer", "x"])
        #expect(DPoPArgument.expanded(["login", "--issuer", "x", "--dpop"]) == ["login", "--issuer", "x", "--dpop=auto"])
    }

    @Test func aDPoPFollowedByAWordKeepsItAsItsValue() {
        #expect(DPoPArgument.expanded(["login", "--dpop", "EdDSA", "--par"]) == ["login", "--dpop", "EdDSA", "--par"])
        #expect(DPoPArgument.expanded(["login", "--dpop=RS256"]) == ["login", "--dpop=RS256"])
        // A wrong value stays a value, so that validation names it.
        #expect(DPoPArgument.expanded(["login", "--dpop", "HS256"]) == ["login", "--dpop", "HS256"])
    }

    @Test func nothingAfterADoubleDashIsTouched() {
        #expect(DPoPArgument.expanded(["request", "--", "--dpop"]) == ["request", "--", "--dpop"])
    }

    @Test func algorithmsAreMatchedWithoutRegardToCase() throws {
        #expect(DPoPArgument.algorithm(named: "eddsa") == .edDSA)
        #expect(DPoPArgument.algorithm(named: "es256") == .es256)
        #expect(DPoPArgument.algorithm(named: "PS256") == .ps256)
        #expect(DPoPArgument.algorithm(named: "HS256") == nil, "an HMAC key cannot prove possession")
        try DPoPArgument.validate(nil)
        try DPoPArgument.validate(DPoPArgument.automatic)
        #expect(throws: ValidationError.self) { try DPoPArgument.validate("HS256") }
    }

    @Test func loginParsesBothForms() throws {
        let bare = try LoginCommand.parse(DPoPArgument.expanded(loginBase + ["--dpop", "--par"]))
        #expect(bare.dpop == DPoPArgument.automatic)
        #expect(bare.par)
        let named = try LoginCommand.parse(DPoPArgument.expanded(loginBase + ["--dpop", "EdDSA"]))
        #expect(named.dpop == "EdDSA")
        #expect(throws: (any Error).self) { try LoginCommand.parse(DPoPArgument.expanded(loginBase + ["--dpop", "HS256"])) }
        #expect(throws: (any Error).self) { try LoginCommand.parse(loginBase + ["--device", "--par"]) }
    }

    @Test func theKeyFollowsTheAlgorithmAndTheServersList() throws {
        let none = ServerMetadata()
        #expect(try DPoPArgument.key("auto", metadata: none).algorithm == .es256)
        #expect(try DPoPArgument.key("eddsa", metadata: none).algorithm == .edDSA)
        let edOnly = try ServerMetadata(fields: ["dpop_signing_alg_values_supported": ["EdDSA"]])
        #expect(try DPoPArgument.key("auto", metadata: edOnly).algorithm == .edDSA)
        #expect(throws: CLIError.self) { try DPoPArgument.key("ES256", metadata: edOnly) }
    }
}

@Suite struct ClientAuthOptionsTests {
    @Test func aPrivateKeyAloneMeansPrivateKeyJWT() throws {
        let options = try ClientAuthOptions.parse(["--private-key", "key.pem", "--key-id", "k1", "--assertion-audience", "endpoint"])
        #expect(options.method == "private_key_jwt")
        #expect(!options.needsSecret)
        let saved = options.profileOptions
        #expect(saved[ProfileOption.privateKey]?.hasPrefix("/") == true, "saved as an absolute path")
        #expect(saved[ProfileOption.privateKey]?.hasSuffix("/key.pem") == true)
        #expect(saved[ProfileOption.keyID] == "k1")
        #expect(saved[ProfileOption.assertionAudience] == "endpoint")
    }

    @Test func inconsistentCombinationsAreUsageErrors() {
        for arguments in [
            ["--auth-method", "private_key_jwt"],
            ["--auth-method", "client_secret_basic", "--private-key", "key.pem"],
            ["--key-id", "k1"],
            ["--assertion-audience", "issuer"],
            ["--auth-method", "client_secret_basic", "--assertion-audience", "issuer"],
            ["--auth-method", "tls_client_auth"],
            ["--auth-method", "client_secret_jwt", "--assertion-audience", "audience"],
        ] {
            #expect(throws: (any Error).self, "\(arguments)") { try ClientAuthOptions.parse(arguments) }
        }
    }

    @Test func clientSecretJWTNeedsASecret() throws {
        let options = try ClientAuthOptions.parse(["--auth-method", "client_secret_jwt", "--assertion-audience", "token-endpoint"])
        #expect(options.needsSecret)
        #expect(options.profileOptions == [ProfileOption.assertionAudience: "token-endpoint"])
        #expect(throws: (any Error).self) { try TokenCommand.parse(machineBase + ["--auth-method", "client_secret_jwt"]) }
        #expect(throws: (any Error).self) { try LoginCommand.parse(loginBase + ["--auth-method", "client_secret_jwt"]) }
        _ = try TokenCommand.parse(machineBase + ["--auth-method", "client_secret_jwt", "--client-secret", "s"])
    }

    @Test func aMachineProfileTakesAKeyInsteadOfASecret() throws {
        let command = try TokenCommand.parse(machineBase + ["--private-key", "key.pem"])
        #expect(command.auth.method == "private_key_jwt")
        #expect(throws: (any Error).self) { try TokenCommand.parse(machineBase) }
        // Without --grant, the profile's own settings are used: no client flags.
        #expect(throws: (any Error).self) { try TokenCommand.parse(["--private-key", "key.pem"]) }
        #expect(throws: (any Error).self) { try TokenCommand.parse(DPoPArgument.expanded(["--dpop"])) }
    }
}

@Suite struct ProfileOptionsTests {
    @Test func theOptionsSurviveTheProfileFileAndHoldNoKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = ProfileStore(configDirectory: directory)
        let profile = Profile(
            issuer: "https://id.example.com", clientID: "svc", authMethod: "private_key_jwt", scopes: ["read"],
            grant: "client_credentials", store: .file,
            options: [
                ProfileOption.dpop: "EdDSA", ProfileOption.par: "true", ProfileOption.privateKey: fixture("jwt-client-ec.jwk.json"),
                ProfileOption.keyID: "ec-1", ProfileOption.assertionAudience: "endpoint",
            ])
        try store.save(profile, as: "svc")
        #expect(try store.load("svc") == profile)
        let text = try String(contentsOf: store.url(for: "svc"), encoding: .utf8)
        #expect(text.contains("jwt-client-ec.jwk.json"))
        #expect(!text.contains("\"d\""), "the key's path is saved, never the key")
    }

    @Test func aProfilesOptionsConfigureItsClient() throws {
        var configuration = ClientConfiguration(clientID: "jwt-key")
        try Context.apply(
            [
                ProfileOption.privateKey: fixture("jwt-client-rsa.pem"), ProfileOption.keyID: "rsa-1",
                ProfileOption.assertionAudience: "endpoint", ProfileOption.par: "true",
            ], to: &configuration)
        let key = try #require(configuration.privateKey)
        #expect(key.keyID == "rsa-1")
        #expect(key.algorithm == .rs256)
        #expect(configuration.clientAssertion.audience == .requestEndpoint)
        #expect(configuration.usePushedAuthorizationRequests)

        var plain = ClientConfiguration(clientID: "app")
        try Context.apply([:], to: &plain)
        #expect(plain.privateKey == nil)
        #expect(plain.clientAssertion.audience == .issuer)
        #expect(!plain.usePushedAuthorizationRequests)

        var jwk = ClientConfiguration(clientID: "jwt-key")
        try Context.apply([ProfileOption.privateKey: fixture("jwt-client-ec.jwk.json"), ProfileOption.assertionAudience: "token-endpoint"], to: &jwk)
        #expect(jwk.privateKey?.keyID == "ec-1", "the JWK's own kid")
        #expect(jwk.privateKey?.algorithm == .es256)
        #expect(jwk.clientAssertion.audience == .tokenEndpoint)
    }

    @Test func unusableOptionsAreUsageErrorsThatNameNoKey() {
        var configuration = ClientConfiguration(clientID: "x")
        for options in [
            [ProfileOption.privateKey: "/no/such/key.pem"],
            [ProfileOption.privateKey: fixture("jwt-client.jwks.json")],  // public keys only
            [ProfileOption.assertionAudience: "somewhere"],
        ] {
            do {
                try Context.apply(options, to: &configuration)
                Issue.record("\(options) was accepted")
            } catch let error as CLIError {
                #expect(error.status == .usage)
            } catch {
                Issue.record("\(options): \(error)")
            }
        }
    }
}
