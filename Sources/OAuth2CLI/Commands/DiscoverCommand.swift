import ArgumentParser
import Foundation
import OAuth2

struct DiscoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "discover", abstract: "Fetch and validate an issuer's metadata, and print it.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The issuer URL.") var issuer: String

    func run() async throws {
        guard let url = URL(string: issuer), url.scheme != nil else { throw CLIError.usage("\(issuer) is not an absolute URL.") }
        let context = Context(global)
        let client = try await OAuth2Client(
            server: .issuer(url), configuration: ClientConfiguration(clientID: "oauth2-cli"), environment: context.environment)
        let fields = client.metadata.fields
        if global.json {
            Output.json(.object(fields))
        } else {
            for name in fields.keys.sorted() {
                let value = fields[name]!
                Output.result("\(name): \(value.stringValue ?? value.description)")
            }
        }
    }
}
