import ArgumentParser
import Foundation
import OAuth2
import OAuth2AsyncHTTPClient
import OAuth2TestSupport
import Testing

@testable import OAuth2CLI

/// `--client-certificate` and `--client-key` (mutual TLS, RFC 8705): the methods that need
/// them, the profile that keeps their paths, the client that uses the aliases.
@Suite struct MutualTLSOptionsTests {
    let machineBase = ["--grant", "client_credentials", "--issuer", "https://id.example.com", "--client-id", "svc"]

    @Test func theMTLSMethodsNeedACertificateAndNoSecret() throws {
        for method in ["tls_client_auth", "self_signed_tls_client_auth"] {
            let command = try TokenCommand.parse(machineBase + ["--auth-method", method, "--client-certificate", "c.pem", "--client-key", "c.key"])
            #expect(command.auth.method == method)
            #expect(!command.auth.needsSecret)
            #expect(throws: (any Error).self) { try TokenCommand.parse(machineBase + ["--auth-method", method]) }
        }
    }

    @Test func theCertificateAndKeyGoTogether() {
        #expect(throws: (any Error).self) { try ClientAuthOptions.parse(["--client-certificate", "c.pem"]) }
        #expect(throws: (any Error).self) { try ClientAuthOptions.parse(["--client-key", "c.key"]) }
        // Without --grant, the profile's own settings are used: no client flags.
        #expect(throws: (any Error).self) { try TokenCommand.parse(["--client-certificate", "c.pem", "--client-key", "c.key"]) }
    }

    @Test func theProfileKeepsAbsolutePathsAndTheClientUsesMutualTLS() throws {
        let options = try ClientAuthOptions.parse(["--auth-method", "client_secret_basic", "--client-certificate", "c.pem", "--client-key", "c.key"])
        let saved = options.profileOptions
        let certificate = try #require(saved[ProfileOption.clientCertificate])
        #expect(certificate.hasPrefix("/") && certificate.hasSuffix("/c.pem"))
        #expect(saved[ProfileOption.clientKey]?.hasSuffix("/c.key") == true)
        var configuration = ClientConfiguration(clientID: "svc")
        try Context.apply(saved, to: &configuration)
        #expect(configuration.mutualTLS, "requests go to the mtls_endpoint_aliases")
        var plain = ClientConfiguration(clientID: "svc")
        try Context.apply([:], to: &plain)
        #expect(!plain.mutualTLS)
    }

    /// A profile file that names a certificate and its key (written by `login`/`token --grant`
    /// with the flags, or by hand) makes every later command of the profile — `oauth2 token
    /// --profile X` without flags — send through a transport presenting that certificate, to
    /// the aliases; a certificate without its key is a usage error.
    @Test func aProfileFileNamingACertificatePresentsItWithoutFlags() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-cli-mtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pair = try await makeClientCertificate(named: "worker", in: directory)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("profiles"), withIntermediateDirectories: true)
        func write(_ name: String, options: [String: String]) throws {
            let profile: [String: Any] = [
                "tokenEndpoint": "https://id.example.com/token", "clientID": "svc", "authMethod": "tls_client_auth", "scopes": ["read"],
                "grant": "client_credentials", "parameters": [String: String](), "store": "memory", "options": options,
            ]
            try JSONSerialization.data(withJSONObject: profile).write(to: directory.appendingPathComponent("profiles/\(name).json"))
        }
        try write("worker", options: ["client_certificate": pair.certificatePath, "client_key": pair.keyPath])
        try write("keyless", options: ["client_certificate": pair.certificatePath])

        let context = Context(try GlobalOptions.parse(["--config-dir", directory.path, "--profile", "worker"]))
        let profile = try #require(try context.profiles.load("worker"))
        let environment = try context.environment(for: profile)
        let presenting = try HostRecordingTransport.presenting(certificatePath: pair.certificatePath, keyPath: pair.keyPath)
        let through = try #require((environment.transport as? HostRecordingTransport)?.through as? AsyncHTTPClientTransport)
        #expect(through === presenting.through as? AsyncHTTPClientTransport, "the profile's certificate and key")
        #expect(try await context.client(for: profile, secret: nil).configuration.mutualTLS)

        let keyless = try #require(try context.profiles.load("keyless"))
        #expect(throws: CLIError.self) { try context.environment(for: keyless) }
        // A profile without a certificate sends as every command does.
        var plain = profile
        plain.options = [:]
        #expect((try context.environment(for: plain).transport as? HostRecordingTransport)?.through == nil)
    }

    @Test func anUnusableCertificateIsAUsageErrorNamingTheFile() {
        do {
            _ = try HostRecordingTransport.presenting(certificatePath: "/no/such/client.pem", keyPath: "/no/such/client.key")
            Issue.record("a missing certificate was accepted")
        } catch let error as CLIError {
            #expect(error.status == .usage)
            #expect(error.message.contains("/no/such/client.pem"))
        } catch {
            Issue.record("\(error)")
        }
    }
}
