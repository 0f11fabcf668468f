import ArgumentParser
import Foundation
import OAuth2
import Testing

@testable import OAuth2CLI

/// The profiles `oauth2 request URL` and `oauth2 login --resource URL` make: their names,
/// how the one of a URL is found, what keeps two resources apart, and the options.
@Suite struct ResourceProfileTests {
    private func name(_ text: String) throws -> String { try ResourceProfile.name(for: URL(string: text)!) }

    // MARK: - Naming

    @Test func aResourceIsNamedByItsHostPortAndPath() throws {
        #expect(try name("https://mcp.example.com/mcp") == "mcp.example.com_mcp")
        #expect(try name("http://127.0.0.1:8090/mcp") == "127.0.0.1_8090_mcp")
        #expect(try name("https://api.example.com/v1/tools") == "api.example.com_v1_tools")
        #expect(try name("https://api.example.com") == "api.example.com")
    }

    @Test func theNameIsStableAcrossSpellingsOfOneResource() throws {
        // RFC 9728 §3.3's comparison: scheme and host without case, a default port, "/" and "".
        let names = try ["https://MCP.Example.COM/mcp", "https://mcp.example.com:443/mcp", "HTTPS://mcp.example.com/mcp"].map(name)
        #expect(Set(names) == ["mcp.example.com_mcp"])
        #expect(try name("https://api.example.com/") == name("https://api.example.com"))
    }

    @Test func charactersAProfileNameCannotHoldBecomeDashes() throws {
        #expect(try name("https://api.example.com/a%20b/c_d/caf%C3%A9") == "api.example.com_a-b_c-d_caf-")
        #expect(try name("http://[::1]:8080/mcp") == "r--1_8080_mcp")
        for text in ["https://api.example.com/a%20b/c_d", "http://[::1]:8080/mcp", "https://x.example/%2E%2E/.."] {
            try ProfileStore.validate(name: try name(text))
        }
    }

    @Test func aLongResourceGetsACutNameWithADigest() throws {
        let base = "https://mcp.example.com/" + String(repeating: "segment/", count: 12)
        let first = try name(base + "one"), second = try name(base + "two")
        #expect(first.count == ResourceProfile.maximumLength && second.count == ResourceProfile.maximumLength)
        #expect(first != second)
        #expect(first.hasPrefix("mcp.example.com_segment_"))
        try ProfileStore.validate(name: first)
        #expect(try name(base + "one") == first, "stable")
    }

    @Test func aURLThatCannotNameAResourceIsAUsageError() throws {
        for text in ["https://mcp.example.com/mcp?x=1", "https://mcp.example.com/mcp#top", "http://mcp.example.com/mcp", "https://u:p@mcp.example.com/mcp"] {
            #expect(throws: CLIError.self, "\(text)") { try name(text) }
            do { _ = try name(text) } catch let error as CLIError { #expect(error.status == .usage) }
        }
    }

    // MARK: - Finding the profile of a URL

    private func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-resource-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    private func profile(resource: String?, clientID: String = "client", issuer: String = "https://as.example.com") -> Profile {
        Profile(
            issuer: issuer, clientID: clientID, scopes: ["mcp:read"], grant: "authorization_code", store: .file,
            options: resource.map { [ProfileOption.resource: $0, ProfileOption.registration: "configured"] } ?? [:])
    }

    @Test func theProfileNamedAfterTheResourceMatchesEverySpellingOfIt() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let profiles = ProfileStore(configDirectory: directory)
        try profiles.save(profile(resource: "https://mcp.example.com/mcp"), as: "mcp.example.com_mcp")
        for text in ["https://mcp.example.com/mcp", "https://MCP.example.com:443/mcp"] {
            #expect(try ResourceProfile.matching(URL(string: text)!, profiles: profiles) == "mcp.example.com_mcp")
        }
        #expect(try ResourceProfile.matching(URL(string: "https://mcp.example.com/other")!, profiles: profiles) == nil)
        #expect(try ResourceProfile.matching(URL(string: "https://other.example.com/mcp")!, profiles: profiles) == nil)
    }

    @Test func aProfileSavedUnderAnotherNameIsFoundByItsResource() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let profiles = ProfileStore(configDirectory: directory)
        try profiles.save(profile(resource: nil), as: "default")
        try profiles.save(profile(resource: "https://mcp.example.com/mcp"), as: "work-mcp")
        #expect(try ResourceProfile.matching(URL(string: "https://mcp.example.com/mcp")!, profiles: profiles) == "work-mcp")
    }

    @Test func aProfileOfThatNameMadeForSomethingElseIsNotTheResources() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let profiles = ProfileStore(configDirectory: directory)
        // `login --issuer … --profile mcp.example.com_mcp`: no resource, not a match, not replaced.
        try profiles.save(profile(resource: nil), as: "mcp.example.com_mcp")
        #expect(try ResourceProfile.matching(URL(string: "https://mcp.example.com/mcp")!, profiles: profiles) == nil)
        #expect(throws: CLIError.self) {
            try ResourceProfile.ensureFree("mcp.example.com_mcp", for: "https://mcp.example.com/mcp", profiles: profiles)
        }
        // Another resource's profile under the name asked for is refused too.
        try profiles.save(profile(resource: "http://mcp.example.com/mcp"), as: "named")
        #expect(throws: CLIError.self) { try ResourceProfile.ensureFree("named", for: "https://mcp.example.com/mcp", profiles: profiles) }
        // The resource's own profile (signing in again) and a free name are fine.
        try profiles.save(profile(resource: "https://mcp.example.com/mcp"), as: "mine")
        try ResourceProfile.ensureFree("mine", for: "https://MCP.example.com/mcp", profiles: profiles)
        try ResourceProfile.ensureFree("free", for: "https://mcp.example.com/mcp", profiles: profiles)
    }

    // MARK: - Nothing shared between resources

    @Test func twoResourcesOfOneServerAndClientKeepTheirTokensApart() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = Context(try GlobalOptions.parse(["--config-dir", directory.path, "--profile", try name("https://a.example.com/mcp")]))
        let second = Context(try GlobalOptions.parse(["--config-dir", directory.path, "--profile", try name("https://b.example.com/mcp")]))
        let a = first.sessionKey(for: profile(resource: "https://a.example.com/mcp"))
        let b = second.sessionKey(for: profile(resource: "https://b.example.com/mcp"))
        #expect(a.issuer == b.issuer && a.clientID == b.clientID)
        #expect(a != b, "the account (the profile, named after the resource) keeps them apart")
    }

    @Test func eachResourceProfileFindsItsOwnRegistration() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = MemoryTokenStore()
        let issuer = "https://as.example.com"
        for (client, secret) in [("registered-for-a", "secret-a"), ("registered-for-b", "secret-b")] {
            try await store.saveRegistration(ClientRegistration(clientID: client, clientSecret: secret), issuer: issuer)
        }
        let context = Context(try GlobalOptions.parse(["--config-dir", directory.path, "--profile", "a"]))
        let a = profile(resource: "https://a.example.com/mcp", clientID: "registered-for-a")
        let b = profile(resource: "https://b.example.com/mcp", clientID: "registered-for-b")
        #expect(try await context.clientSecret(for: a, store: store) == "secret-a")
        #expect(try await context.clientSecret(for: b, store: store) == "secret-b")
    }

    @Test func aResourceProfilesRequestsCarryItsResource() throws {
        var configuration = ClientConfiguration(clientID: "c")
        try Context.apply([ProfileOption.resource: "https://mcp.example.com/mcp"], to: &configuration)
        for kind in [RequestKind.authorization, .token, .deviceAuthorization] {
            #expect(configuration.additionalParameters[kind]?["resource"] == "https://mcp.example.com/mcp")
        }
        var plain = ClientConfiguration(clientID: "c")
        try Context.apply([:], to: &plain)
        #expect(plain.additionalParameters[.token]?["resource"] == nil)
    }

    // MARK: - Options

    @Test func requestTakesTheResourceSignInsOptions() throws {
        let command = try RequestCommand.parse([
            "--client-id", "held", "--client-metadata-url", "https://agent.example.org/oauth/client.json",
            "--authorization-server", "https://as.example.com", "--scope", "mcp:read mcp:write", "--no-browser", "--timeout", "9",
            "--redirect-uri", "http://127.0.0.1:53682/callback", "https://mcp.example.com/mcp",
        ])
        let signIn = try command.resourceSignIn.signIn()
        #expect(signIn.clientID == "held")
        #expect(signIn.clientMetadataURL == URL(string: "https://agent.example.org/oauth/client.json"))
        #expect(signIn.authorizationServer == URL(string: "https://as.example.com"))
        #expect(signIn.scopes == ["mcp:read", "mcp:write"])
        #expect(signIn.noBrowser && signIn.timeout == 9 && signIn.redirectURI == "http://127.0.0.1:53682/callback")
        let plain = try RequestCommand.parse(["https://mcp.example.com/mcp"]).resourceSignIn.signIn()
        #expect(plain.clientID == nil && plain.clientMetadataURL == nil && plain.scopes == nil && !plain.noBrowser && plain.timeout == 300)
    }

    @Test func requestRefusesUnusableResourceOptions() {
        #expect(throws: (any Error).self) { try RequestCommand.parse(["--client-metadata-url", "client.json", "https://mcp.example.com/mcp"]) }
        #expect(throws: (any Error).self) { try RequestCommand.parse(["--redirect-uri", "https://example.com/cb", "https://mcp.example.com/mcp"]) }
        #expect(throws: (any Error).self) { try RequestCommand.parse(["--timeout", "0", "https://mcp.example.com/mcp"]) }
    }

    @Test func loginResourceNeedsNoIssuerAndTakesItAsTheServersChoice() throws {
        let command = try LoginCommand.parse([
            "--resource", "https://mcp.example.com/mcp", "--client-id", "held", "--issuer", "https://as.example.com",
            "--client-metadata-url", "https://agent.example.org/oauth/client.json", "--scope", "mcp:read",
        ])
        let signIn = try command.resourceSignIn
        #expect(signIn.clientID == "held" && signIn.authorizationServer == URL(string: "https://as.example.com"))
        #expect(signIn.clientMetadataURL == URL(string: "https://agent.example.org/oauth/client.json") && signIn.scopes == ["mcp:read"])
        _ = try LoginCommand.parse(["--resource", "https://mcp.example.com/mcp"])
    }

    @Test func loginResourceRefusesWhatDoesNotGoWithIt() {
        for extra in [["--device"], ["--provider", "github"], ["--token-endpoint", "https://as.example.com/token"], ["--implicit"], ["--par"], ["--dpop", "ES256"]] {
            #expect(throws: (any Error).self, "\(extra)") { try LoginCommand.parse(["--resource", "https://mcp.example.com/mcp"] + extra) }
        }
        #expect(throws: (any Error).self) { try LoginCommand.parse(["--resource", "mcp"]) }
        #expect(throws: (any Error).self) { try LoginCommand.parse(["--issuer", "https://as.example.com", "--client-metadata-url", "https://a.example/c.json"]) }
    }
}
