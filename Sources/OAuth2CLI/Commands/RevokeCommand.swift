import ArgumentParser
import Foundation
import OAuth2

struct RevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Revoke the profile's tokens (RFC 7009); `all` also forgets them.")

    enum Which: String, ExpressibleByArgument { case access, refresh, all }

    @OptionGroup var global: GlobalOptions
    @Option(help: "access, refresh or all (default: all).") var token: Which = .all

    func run() async throws {
        let (_, session) = try await Context(global).session()
        guard let tokens = session.tokens else { throw CLIError.signInAgain("No stored tokens.") }
        switch token {
        case .access:
            try await session.client.revoke(tokens.accessToken, hint: .accessToken)
            Output.step("revoked the access token")
        case .refresh:
            guard let refresh = tokens.refreshToken else { throw CLIError(.refused, "The profile has no refresh token.") }
            try await session.client.revoke(refresh, hint: .refreshToken)
            Output.step("revoked the refresh token")
        case .all:
            let result = await session.signOut([.revokeAccessToken, .revokeRefreshToken, .removeFromStore]) { progress in
                Output.step("revoke: \(ErrorReport.progress(progress))")
            }
            if let error = ErrorReport.firstFailure(of: result.errors) { throw error }
        }
    }
}
