import ArgumentParser
import Foundation
import HTTPTypes
import OAuth2

struct RequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send an authorized request (refresh and one retry on 401); the body goes to stdout.",
        discussion: """
            Like curl, -d implies POST with application/x-www-form-urlencoded unless -X or -H say otherwise.

            Without --profile (or OAUTH2_PROFILE), the profile made for the URL's resource is used; with none, the \
            default profile; with no default profile either, the URL is treated as a protected resource (an MCP \
            server, say) known by its URL alone: its unauthorized answer leads to its metadata (RFC 9728), whose \
            resource must be the URL; the authorization server it lists is discovered and checked; the client is \
            --client-id, else the --client-metadata-url document where the server takes one, else registered for this \
            resource (RFC 7591); the sign-in (PKCE, the resource indicator) is saved as a profile named after the \
            resource (https://mcp.example.com/mcp: mcp.example.com_mcp), which the next request reuses. A resource \
            profile's 403 insufficient_scope leads to one more sign-in for the wider scopes, then one retry.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String
    @Option(name: .customShort("X"), help: "The method.") var method: String?
    @Option(name: .customShort("H"), help: "A header, \"Name: value\" (repeatable).") var headers: [String] = []
    @Option(name: .customShort("d"), help: "The body, or @FILE.") var data: String?
    @OptionGroup(title: "Signing in to a resource known by its URL alone") var resourceSignIn: ResourceSignInOptions

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
        let (response, responseBody) = try await send(request, body: body, to: target)
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

    /// Whether the profile was left to the tool: no `--profile`, no `OAUTH2_PROFILE`.
    var profileGiven: Bool {
        global.profile != nil || !(ProcessInfo.processInfo.environment["OAUTH2_PROFILE"] ?? "").isEmpty
    }

    /// Sends `request` with the session of the profile given; else of the profile made for
    /// `target`'s resource; else of the default profile; else of a sign-in to the resource
    /// from its URL alone (``ResourceSignIn``), saved as its profile. A resource profile's
    /// session steps up on `403 insufficient_scope`.
    private func send(_ request: HTTPRequest, body: Data?, to target: URL) async throws -> (HTTPResponse, Data) {
        var context = Context(global)
        if !profileGiven {
            if let name = try? ResourceProfile.matching(target, profiles: context.profiles) {
                var global = self.global
                global.profile = name
                context = Context(global)
            } else if try context.profiles.load(context.profileName) == nil {
                context = try await resourceSignIn.signIn().run(context, resource: target, profile: nil)
            }
        }
        let profile = try context.requireProfile()
        let stepUp = ResourceProfile.resource(of: profile) == nil
            ? nil : try ResourceSignIn.stepUp(for: profile, noBrowser: resourceSignIn.noBrowser, timeout: resourceSignIn.timeout)
        let (_, session) = try await context.session(stepUp: stepUp)
        let answer = try await session.perform(request, body: body)
        // A step-up's wider scopes become the profile's, for its next sign-in.
        if stepUp != nil, let granted = session.tokens?.scopes, !Set(granted).isSubset(of: profile.scopes) {
            var widened = profile
            for scope in granted where !widened.scopes.contains(scope) { widened.scopes.append(scope) }
            try? context.profiles.save(widened, as: context.profileName)
        }
        return answer
    }
}
