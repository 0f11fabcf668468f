import ArgumentParser
import Foundation
import OAuth2
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
