import Foundation
import Testing
@testable import OAuth2

@Suite struct EndpointPolicyTests {
    @Test(arguments: [
        "https://as.example.com/token", "http://127.0.0.1:8000/o/token/", "http://127.9.8.7/x",
        "http://localhost:4593/api", "http://[::1]:8080/token", "HTTPS://AS.EXAMPLE.COM/t",
    ])
    func allowsHTTPSAndLoopback(_ text: String) throws {
        try EndpointPolicy.validate(URL(string: text)!, name: "endpoint")
    }

    @Test(arguments: [
        "http://as.example.com/token", "http://128.0.0.1/token", "http://127.0.0.1.evil.com/token",
        "http://localhost.evil.com/", "http://10.0.0.1/token", "ftp://127.0.0.1/x", "http://[::2]/x",
        "http://127.0.0.256/x",
    ])
    func refusesEverythingElse(_ text: String) {
        #expect(throws: OAuth2Error.self) { try EndpointPolicy.validate(URL(string: text)!, name: "endpoint") }
        do {
            try EndpointPolicy.validate(URL(string: text)!, name: "token endpoint")
        } catch {
            #expect(error.code == .insecureEndpoint)
            #expect(error.description.contains("token endpoint"))
        }
    }

    @Test func refusesAFragment() {
        #expect(throws: OAuth2Error.self) { try EndpointPolicy.validate(URL(string: "https://as.example.com/t#x")!, name: "x") }
    }

    @Test func clientRefusesInsecureMetadataEndpoint() {
        let metadata = ServerMetadata(issuer: URL(string: "https://as.example.com")!, tokenEndpoint: URL(string: "http://as.example.com/token")!)
        do {
            _ = try Fixtures.client(StubTransport(json: "{}"), metadata: metadata)
            Issue.record("an HTTP token endpoint was accepted")
        } catch let error as OAuth2Error {
            #expect(error.code == .insecureEndpoint)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite struct ClientConfigurationTests {
    @Test func validatesBasics() {
        #expect(throws: OAuth2Error.self) { try ClientConfiguration(clientID: "").validate() }
        #expect(throws: OAuth2Error.self) {
            try ClientConfiguration(clientID: "a", redirectURI: URL(string: "http://127.0.0.1/cb#frag")!).validate()
        }
        #expect(throws: OAuth2Error.self) {
            try ClientConfiguration(clientID: "a", authenticationMethod: .clientSecretPost).validate()
        }
        #expect(throws: Never.self) { try ClientConfiguration(clientID: "a").validate() }
    }

    @Test func choosesAuthenticationMethodFromMetadata() {
        let secret = ClientConfiguration(clientID: "a", clientSecret: "s")
        #expect(secret.resolvedAuthenticationMethod(supported: nil) == .clientSecretBasic)
        #expect(secret.resolvedAuthenticationMethod(supported: ["client_secret_post"]) == .clientSecretPost)
        #expect(secret.resolvedAuthenticationMethod(supported: ["client_secret_post", "client_secret_basic"]) == .clientSecretBasic)
        #expect(ClientConfiguration(clientID: "a").resolvedAuthenticationMethod(supported: ["client_secret_basic"]) == .none)
        var forced = secret
        forced.authenticationMethod = .clientSecretPost
        #expect(forced.resolvedAuthenticationMethod(supported: ["client_secret_basic"]) == .clientSecretPost)
    }

    @Test func descriptionHidesTheSecret() {
        let configuration = ClientConfiguration(clientID: "a", clientSecret: "very-secret-value")
        #expect(!configuration.description.contains("very-secret-value"))
        #expect(!"\(configuration)".contains("very-secret-value"))
    }
}
