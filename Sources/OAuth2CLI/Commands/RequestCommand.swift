import ArgumentParser
import Foundation
import HTTPTypes
import OAuth2

struct RequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send an authorized request (refresh and one retry on 401); the body goes to stdout.",
        discussion: "Like curl, -d implies POST with application/x-www-form-urlencoded unless -X or -H say otherwise.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String
    @Option(name: .customShort("X"), help: "The method.") var method: String?
    @Option(name: .customShort("H"), help: "A header, \"Name: value\" (repeatable).") var headers: [String] = []
    @Option(name: .customShort("d"), help: "The body, or @FILE.") var data: String?

    func run() async throws {
        guard let target = URL(string: url), target.scheme != nil, target.host != nil else { throw CLIError.usage("\(url) is not an absolute URL.") }
        var body: Data?
        if let data {
            if data.hasPrefix("@") {
                let path = String(data.dropFirst())
                guard let contents = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: path) else {
                    throw CLIError.usage("Cannot read \(path).")
                }
                body = contents
            } else {
                body = Data(data.utf8)
            }
        }
        let name = method?.uppercased() ?? (body == nil ? "GET" : "POST")
        guard let requestMethod = HTTPRequest.Method(name) else { throw CLIError.usage("\(name) is not an HTTP method.") }
        guard var request = HTTPRequest(url: target) as HTTPRequest? else { throw CLIError.usage("\(url) is not usable.") }
        request.method = requestMethod
        for header in headers {
            let parts = header.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let field = HTTPField.Name(parts[0].trimmingCharacters(in: .whitespaces)) else {
                throw CLIError.usage("A header is \"Name: value\" (got \"\(header)\").")
            }
            request.headerFields.append(HTTPField(name: field, value: parts[1].trimmingCharacters(in: .whitespaces)))
        }
        if body != nil, request.headerFields[.contentType] == nil {
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        }
        let (_, session) = try await Context(global).session()
        let (response, responseBody) = try await session.perform(request, body: body)
        Output.raw(responseBody)
        let status = response.status.code
        guard status >= 400 else { return }
        let answer = "The server answered HTTP \(status) \(response.status.reasonPhrase)".trimmingCharacters(in: .whitespaces)
        switch status {
        case 401, 403:
            throw CLIError(.refused, answer, hint: "check that the token is meant for this API and has the scopes it needs (--scope at sign-in)")
        case 429, 500...:
            throw CLIError(.transient, answer, hint: "try again later")
        default:
            throw CLIError(.refused, answer)
        }
    }
}
