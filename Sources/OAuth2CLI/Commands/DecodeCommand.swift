import ArgumentParser
import Foundation
import OAuth2

struct DecodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode", abstract: "Print a JWT's header and claims as JSON, without verifying it.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The JWT (compact serialization).") var jwt: String

    func run() async throws {
        let jws: JWS
        let claims: [String: JSONValue]
        do {
            jws = try JWS(compact: jwt.trimmingCharacters(in: .whitespacesAndNewlines))
            claims = try jws.claims()
        } catch {
            throw CLIError(.refused, "Not a decodable JWT: \(ExitStatus.describe(error))")
        }
        Output.json(["header": .object(jws.header), "claims": .object(claims), "verified": false])
    }
}
