import ArgumentParser
import Foundation
import OAuth2

struct DecodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode", abstract: "Print a JWT's header and claims as JSON, without verifying it.",
        discussion: """
            The JWT comes from --file, from stdin (-), or from the command line (which warns: other users see it in ps).
              oauth2 token | oauth2 decode -
              oauth2 decode --file id_token.jwt
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The JWT (compact serialization), or - to read it from stdin.") var jwt: String?
    @Option(help: ArgumentHelp("A file holding the JWT (any readable path, a pipe included).", valueName: "file")) var file: String?

    func validate() throws {
        guard (jwt == nil) != (file == nil) else { throw ValidationError("Give the JWT, - (stdin) or --file FILE: one of them.") }
    }

    func run() async throws {
        let text: String
        if let file {
            text = try SecretInput.read(file: file, what: "The JWT file")
        } else {
            text = try SecretInput.value(jwt!, option: "decode TOKEN", instead: "oauth2 decode - or --file FILE")
        }
        let jws: JWS
        let claims: [String: JSONValue]
        do {
            jws = try JWS(compact: text)
            claims = try jws.claims()
        } catch {
            throw CLIError(.refused, "Not a decodable JWT: \(ErrorReport.reason(error))", hint: "give a JWT in its compact form, header.payload.signature")
        }
        Output.json(["header": .object(jws.header), "claims": .object(claims), "verified": false])
    }
}
