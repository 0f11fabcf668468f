import ArgumentParser
import Foundation
import OAuth2

/// `oauth2 git-credential get|store|erase`: git's credential helper (gitcredentials(7)),
/// answering with the profile's access token as the password.
struct GitCredentialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "git-credential",
        abstract: "A git credential helper: the profile's access token as the password of HTTPS remotes.",
        discussion: """
            Set up once per host (git adds get, store or erase after the command):
              git config --global credential.https://git.example.com.helper \\
                  "!oauth2 git-credential --profile work"
              git config --global credential.https://git.example.com.useHttpPath false

            get answers username=… (--username; else the request's; else oauth2) and password=<access token>, \
            renewed first when due as `oauth2 token` does, with password_expiry_utc when its expiry is known. It \
            answers only https requests (http only to a loopback host) and, with --host, only those hosts: others \
            get no answer, so that git asks its next helper. When no token can be had (signed out, refresh refused, \
            server down), it says why in one line on stderr and tells git to stop (quit=1) instead of prompting.

            store does nothing: the profile's token store keeps the tokens. erase, which git runs after the \
            host refused the password, renews the access token if it is the one refused (the refresh token is \
            kept), so that the next get hands out a new one.

            User names: GitLab wants oauth2; GitHub accepts any (x-access-token is usual); Bitbucket Cloud wants \
            x-token-auth; Azure DevOps accepts any.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "The user name to answer with (default: the request's, else oauth2).") var username: String?
    @Option(
        name: .customLong("host"),
        help: ArgumentHelp("Answer only requests for this host (host or host:port; repeatable).", valueName: "host"))
    var hosts: [String] = []
    @Argument(help: "What git asks: get, store or erase (others are ignored, as git's protocol asks).") var operation: String

    /// The user name answered when neither `--username` nor the request gives one: the one
    /// GitLab requires, and one GitHub and Azure DevOps accept.
    static let defaultUsername = "oauth2"

    func run() async throws {
        guard ["get", "store", "erase"].contains(operation) else { return }
        let request: GitCredentialMessage
        do {
            request = try GitCredentialMessage.parse(try Self.readRequest())
        } catch let error as GitCredentialMessage.ReadError {
            throw CLIError.usage("git-credential cannot read git's request: \(error.reason)")
        }
        guard Self.serves(request, hosts: hosts) else { return }
        let context = Context(global)
        switch operation {
        case "get":
            do {
                let token = try await context.helperToken()
                Output.raw(Data(try Self.answer(to: request, username: username, token: token).utf8))
            } catch {
                // Stop git here: a password prompt cannot help with a bearer token.
                Output.raw(Data("quit=1\n".utf8))
                throw error
            }
        case "erase":
            try await erase(request, context: context)
        default:
            break  // store: the profile's store owns the tokens
        }
    }

    /// `erase`: git says the host refused `request.password`. When that is the profile's
    /// current access token, it is renewed now (the refresh token is kept), so that the
    /// next `get` does not hand out the refused one again. Signed out: nothing to erase.
    private func erase(_ request: GitCredentialMessage, context: Context) async throws {
        guard let refused = request.password, !refused.isEmpty else { return }
        let session: TokenSession
        do {
            (_, session) = try await context.session()
        } catch let error as CLIError where error.status == .signInAgain {
            return
        }
        guard let current = session.tokens?.accessToken, Self.constantTimeEqual(current, refused) else { return }
        do {
            try await session.refresh()
        } catch let error as OAuth2Error where error.code == .signInRequired {
            return  // the tokens are gone; the next get says to sign in again
        }
    }

    /// Whether the helper answers `request`: `https` (or `http` to a loopback host), and
    /// with `hosts`, one of them (`host` matches any port, `host:port` that port only).
    static func serves(_ request: GitCredentialMessage, hosts: [String]) -> Bool {
        guard let scheme = request.protocol?.lowercased(), let authority = request.host?.lowercased(), !authority.isEmpty else {
            return false
        }
        let host = hostPart(of: authority)
        guard scheme == "https" || (scheme == "http" && EndpointPolicy.isLoopback(host: host)) else { return false }
        guard !hosts.isEmpty else { return true }
        return hosts.contains { wanted in
            let wanted = wanted.lowercased()
            return wanted == authority || wanted == host
        }
    }

    /// The host of `host[:port]` (`[v6]:port` keeps its brackets).
    static func hostPart(of authority: String) -> String {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") { return String(authority[...close]) }
        if let colon = authority.lastIndex(of: ":"), !authority[..<colon].contains(":") { return String(authority[..<colon]) }
        return authority
    }

    /// The answer to `get`: user name, the token as the password, and its expiry (seconds
    /// since 1970, UTC, rounded down: never later than the token's).
    static func answer(to request: GitCredentialMessage, username: String?, token: HelperToken) throws -> String {
        var pairs: [(key: String, value: String)] = [
            ("username", username ?? request.username.flatMap { $0.isEmpty ? nil : $0 } ?? defaultUsername),
            ("password", token.accessToken),
        ]
        if let expiresAt = token.expiresAt {
            pairs.append(("password_expiry_utc", String(Int64(expiresAt.timeIntervalSince1970.rounded(.down)))))
        }
        do {
            return try GitCredentialMessage.encode(pairs)
        } catch let error as GitCredentialMessage.ReadError {
            throw CLIError(.refused, "git-credential cannot answer git: \(error.reason)")
        }
    }

    /// Reads git's request from stdin: up to the blank line that ends it (git may keep the
    /// pipe open after it), or the end of the input, and at most
    /// ``GitCredentialMessage/maximumSize`` bytes (one more, to tell that it was larger).
    static func readRequest() throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= GitCredentialMessage.maximumSize, !endsMessage(bytes) {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return bytes
    }

    /// Whether `bytes` hold a blank line (the end of a message): at the start, or after a line.
    static func endsMessage(_ bytes: [UInt8]) -> Bool {
        var previous: UInt8? = UInt8(ascii: "\n")
        for byte in bytes where byte != UInt8(ascii: "\r") {
            if byte == UInt8(ascii: "\n"), previous == UInt8(ascii: "\n") { return true }
            previous = byte
        }
        return false
    }

    /// Compares two secrets in time that depends on their lengths only.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

extension GitCredentialCommand: TakesGlobalOptions {}
