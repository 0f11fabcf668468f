import ArgumentParser
import Foundation
import OAuth2
import OAuth2InteractiveSignIn

struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign out: revoke the tokens, forget them, and end the provider's session in the browser.",
        discussion: """
            Each step is reported on stderr. When the provider has an end-session endpoint, it is opened in the \
            browser and the post-logout redirect comes back to the loopback listener (the profile's redirect URI, \
            which must be registered as a post-logout redirect URI), whose state is checked.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(name: .customLong("no-revoke"), help: "Do not revoke the tokens.") var noRevoke = false
    @Flag(name: .customLong("no-end-session"), help: "Do not end the provider's session.") var noEndSession = false
    @Flag(name: .customLong("no-browser"), help: "Print the end-session URL; do not open a browser.") var noBrowser = false
    @Option(help: "Seconds to wait for the post-logout redirect (default 300).") var timeout = 300

    func run() async throws {
        let (profile, session) = try await Context(global).session()
        let idToken = session.tokens?.idToken
        var steps: SignOutSteps = [.removeFromStore]
        if !noRevoke { steps.formUnion([.revokeAccessToken, .revokeRefreshToken]) }
        let result = await session.signOut(steps) { progress in
            switch progress.outcome {
            case .started: break
            default: Output.step("logout: \(ErrorReport.progress(progress))")
            }
        }
        if let error = ErrorReport.firstFailure(of: result.errors) { throw error }
        let client = session.client
        guard !noEndSession, client.metadata.endSessionEndpoint != nil else { return }
        let (port, path) = try profile.redirectURI.map(LoginCommand.loopback) ?? (0, "/callback")
        let signOut = LoopbackSignIn(port: port, callbackPath: path, timeout: .seconds(timeout), browser: noBrowser ? .none : .system)
        do {
            try await signOut.signOut(client: client, options: EndSessionOptions(idTokenHint: idToken))
        } catch let error as OAuth2Error where error.code == .timeout && error.source == .client {
            throw CLIError(
                .cancelled, "The provider did not return within \(timeout) s",
                hint: "the tokens are forgotten already, but the provider's session may still be open in the browser")
        }
        Output.step("logout: the provider's session ended (post-logout state checked)")
    }
}
