import Foundation
import HTTPTypes
import Testing
@testable import OAuth2

@Suite struct SessionRegistryTests {
    @Test func sessionsAreKeyedByIssuerClientAndAccount() async throws {
        let provider = ScriptedProvider()
        let client = try provider.client()
        let store = MemoryTokenStore()
        let registry = TokenSessionRegistry(store: store)
        let work = try await registry.add(freshTokens("at-work"), client: client, account: "work")
        let home = try await registry.add(freshTokens("at-home"), client: client, account: "home")
        #expect(work.key == TokenSessionKey(issuer: Fixtures.issuer, clientID: "client-1", account: "work"))
        #expect(try await work.freshAccessToken() == "at-work")
        #expect(try await home.freshAccessToken() == "at-home")
        #expect(try await registry.list().map(\.account) == ["home", "work"])
        #expect(try await registry.list(issuer: Fixtures.issuer, clientID: "client-1").count == 2)
        #expect(try await registry.list(clientID: "other").isEmpty)
        #expect(await registry.find(work.key) === work)
        #expect(try await registry.session(for: work.key, client: client) === work, "one session per key")
    }

    @Test func storedSessionsAreFoundAndOpened() async throws {
        let provider = ScriptedProvider()
        let client = try provider.client()
        let store = MemoryTokenStore()
        _ = try await TokenSession(client: client, tokens: freshTokens("at-stored"), store: store, account: "carol")
        let registry = TokenSessionRegistry(store: store)
        let keys = try await registry.list()
        #expect(keys.map(\.account) == ["carol"])
        #expect(await registry.find(keys[0]) == nil, "not open yet")
        let session = try await registry.session(for: keys[0], client: client)
        #expect(try await session.freshAccessToken() == "at-stored")
        #expect(await registry.find(keys[0]) === session)
    }

    @Test func aClientOfAnotherIssuerOrIdIsRefused() async throws {
        let provider = ScriptedProvider()
        let registry = TokenSessionRegistry()
        let foreign = TokenSessionKey(issuer: "https://other.example.com", clientID: "client-1", account: "x")
        await #expect(throws: OAuth2Error.self) { try await registry.session(for: foreign, client: try provider.client()) }
        let otherClient = TokenSessionKey(issuer: Fixtures.issuer, clientID: "client-2", account: "x")
        await #expect(throws: OAuth2Error.self) { try await registry.session(for: otherClient, client: try provider.client()) }
    }

    @Test func removeForgetsTheSessionAndItsRecord() async throws {
        let provider = ScriptedProvider()
        let client = try provider.client()
        let store = MemoryTokenStore()
        let registry = TokenSessionRegistry(store: store)
        let session = try await registry.add(freshTokens("at-0"), client: client, account: "dave")
        let recorder = EventRecorder(session)
        try await registry.remove(session.key)
        #expect(await registry.find(session.key) == nil)
        #expect(await store.load(session.key) == nil)
        #expect(session.tokens == nil)
        #expect(try await registry.list().isEmpty)
        #expect(provider.revocationForms.isEmpty, "remove revokes nothing")
        await recorder.wait(for: 1)
        #expect(recorder.summary == ["signedOut app"])
    }

    @Test func addingTokensForAnOpenSessionSignsItIn() async throws {
        let provider = ScriptedProvider()
        let client = try provider.client()
        let registry = TokenSessionRegistry()
        let first = try await registry.add(freshTokens("at-0"), client: client)
        let again = try await registry.add(freshTokens("at-new"), client: client)
        #expect(first === again)
        #expect(try await first.freshAccessToken() == "at-new")
    }
}
