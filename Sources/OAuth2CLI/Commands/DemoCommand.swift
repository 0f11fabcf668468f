import ArgumentParser
import Foundation
import HTTPTypes
import OAuth2
import OAuth2InteractiveSignIn
import OAuth2Testing

/// The whole journey against the embedded test provider: nothing to install, nothing
/// written to disk (the tokens live in a memory store), every step checked.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole journey against an embedded OpenID provider: login, token, userinfo, request, refresh, introspect, revoke, logout.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let provider = try await TestProvider.start(configuration: .demo)
        do {
            try await journey(provider)
            await provider.shutdown()
        } catch {
            await provider.shutdown()
            throw error
        }
    }

    private func step(_ number: Int, _ name: String, _ proved: String) {
        Output.step("✔ \(number). \(name) — \(proved)")
    }

    private func journey(_ provider: TestProvider) async throws {
        let context = Context(global)
        Output.step("Embedded OpenID provider at \(provider.issuer.absoluteString) (user \(TestProvider.Demo.username), client \(TestProvider.Demo.confidentialClientID))")
        // The "browser" is the provider's own, in-process: it auto-approves the demo user and
        // follows the redirect to the loopback listener, as a person's browser would.
        let browser = BrowserChoice.custom { url in (try? await provider.openInBrowser(url)) != nil }
        let silent = DiscardingOutput()

        let client = try await OAuth2Client(
            server: .issuer(provider.issuer),
            configuration: ClientConfiguration(
                clientID: TestProvider.Demo.confidentialClientID, clientSecret: TestProvider.Demo.confidentialClientSecret, scopes: ["openid", "profile", "email", "offline_access"]),
            environment: context.environment)
        step(1, "discover", "metadata fetched; its issuer equals the one asked for; jwks_uri present")

        let tokens = try await LoopbackSignIn(timeout: .seconds(30), browser: browser, output: silent).signIn(client: client)
        let subject = tokens.idTokenClaims?.subject ?? "?"
        step(2, "login", "code + PKCE (S256) through a loopback listener; state, iss and the ID token (signature, nonce, aud, exp) verified; sub \(subject)")

        let session = try await TokenSession(client: client, tokens: tokens, store: MemoryTokenStore())
        let token = try await session.freshAccessToken()
        guard token == tokens.accessToken else { throw CLIError(.refused, "demo: a fresh token was not reused") }
        step(3, "token", "a valid access token is served from the session without a request")

        let info = try await client.userInfo(for: tokens)
        step(4, "userinfo", "the access token went in the Authorization header; UserInfo's sub equals the ID token's (\(info.subject))")

        guard let userInfoEndpoint = client.metadata.userInfoEndpoint else { throw CLIError(.refused, "demo: no userinfo endpoint") }
        let (response, _) = try await session.perform(HTTPRequest(method: .get, url: userInfoEndpoint))
        guard response.status.code == 200 else { throw CLIError(.refused, "demo: the authorized request got HTTP \(response.status.code)") }
        step(5, "request", "an authorized request through the session answered HTTP 200")

        let refreshed = try await session.refresh()
        guard refreshed.accessToken != tokens.accessToken, refreshed.refreshToken != nil else {
            throw CLIError(.refused, "demo: the refresh returned the same token")
        }
        step(6, "refresh", "a new access token; the rotated refresh token saved before use; the new ID token keeps iss and sub")

        let active = try await client.introspect(refreshed.accessToken, hint: .accessToken)
        guard active.active else { throw CLIError(.refused, "demo: the fresh token is not active") }
        step(7, "introspect", "the provider says the new access token is active (scopes: \((active.scopes ?? []).joined(separator: " ")))")

        let result = await session.signOut(.revokeAndRemove)
        if let error = ErrorReport.firstFailure(of: result.errors) { throw error }
        let after = try await client.introspect(refreshed.accessToken, hint: .accessToken)
        guard !after.active, session.tokens == nil else { throw CLIError(.refused, "demo: the token is still active after revocation") }
        step(8, "revoke", "both tokens revoked (introspection now says inactive) and forgotten")

        try await LoopbackSignIn(callbackPath: "/logged-out", timeout: .seconds(30), browser: browser, output: silent)
            .signOut(client: client, options: EndSessionOptions(idTokenHint: refreshed.idToken ?? tokens.idToken))
        step(9, "logout", "RP-initiated logout: the provider redirected back to the loopback listener with the state sent")

        Output.result("demo: all 9 steps passed")
    }
}

/// Drops the sign-in helpers' instructions: the demo's browser is in-process.
struct DiscardingOutput: TerminalOutput {
    var isTerminal: Bool { false }
    func write(_ text: String) {}
}
