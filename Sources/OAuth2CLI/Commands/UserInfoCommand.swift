import ArgumentParser
import Foundation
import OAuth2

struct UserInfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "userinfo", abstract: "Print the UserInfo claims as JSON; their sub must match the ID token's.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let (_, session) = try await Context(global).session()
        let tokens = try await session.freshTokens()
        let info = try await session.client.userInfo(for: tokens)
        Output.json(.object(info.claims))
    }
}
