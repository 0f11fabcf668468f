#if MCP
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import OAuth2
import OAuth2TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The example MCP server (`oauth2-mcp-server-example`, Examples/MCPServer) as a process on a
/// free port, with its embedded provider: `$OAUTH2_MCP_SERVER_EXAMPLE` names the binary
/// (scripts/test builds it with the tests' traits and sets it). Missing, the tests fail: they
/// never skip.
struct ExampleMCPServer {
    /// Its resource identifier: the `/mcp` URL (of `OAUTH2_EXAMPLE_PUBLIC_URL` when given).
    let resource: URL
    /// Where it listens: `http://127.0.0.1:<port>`.
    let address: URL
    /// The embedded provider's issuer.
    let issuer: URL
    /// The public client an MCP client signs in with there.
    let clientID: String
    let process: RunningWorker

    static let variable = "OAUTH2_MCP_SERVER_EXAMPLE"

    /// Starts the server (with `extra` added to its environment), runs `body`, stops the
    /// server (also when `body` throws).
    static func with<T>(environment extra: [String: String] = [:], _ body: (ExampleMCPServer) async throws -> T) async throws -> T {
        let path = try #require(
            ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 },
            "\(variable) names no binary: build it with `swift build --product oauth2-mcp-server-example --traits URLSession,Postgres,Vapor,Hummingbird,MCP` and set it to the binary (scripts/test does)")
        try #require(FileManager.default.isExecutableFile(atPath: path), "\(variable)=\(path) is not an executable file")
        var environment = ProcessInfo.processInfo.environment
        for name in ["OAUTH2_EXAMPLE_ISSUER", "OAUTH2_EXAMPLE_CLIENT_ID", "OAUTH2_EXAMPLE_CLIENT_SECRET", "OAUTH2_EXAMPLE_PUBLIC_URL"] {
            environment[name] = nil
        }
        environment["OAUTH2_EXAMPLE_HOST"] = "127.0.0.1"
        environment["OAUTH2_EXAMPLE_PORT"] = "0"
        environment.merge(extra) { _, given in given }
        let process = try RunningWorker.start([], environment: environment, executable: URL(fileURLWithPath: path))
        let result: Result<T, any Error>
        do {
            // Hang bounds, not speed requirements.
            let provider = try await process.waitForLine(startingWith: "PROVIDER ", timeout: .seconds(120)).split(separator: " ")
            let listening = try await process.waitForLine(startingWith: "LISTENING ", timeout: .seconds(120))
            let port = try #require(Int(try await process.waitForLine(startingWith: "PORT ", timeout: .seconds(10)).dropFirst("PORT ".count)))
            let server = ExampleMCPServer(
                resource: try #require(URL(string: String(listening.dropFirst("LISTENING ".count)))),
                address: try #require(URL(string: "http://127.0.0.1:\(port)")),
                issuer: try #require(provider.count == 3 ? URL(string: String(provider[1])) : nil, "\(provider)"),
                clientID: String(provider[2]), process: process)
            result = .success(try await body(server))
        } catch {
            result = .failure(error)
        }
        process.terminate()
        if (try? await process.waitForExit(timeout: .seconds(10))) == nil {
            process.send(SIGKILL)
            _ = try? await process.waitForExit(timeout: .seconds(10))
        }
        return try result.get()
    }

    /// A client of the embedded provider for this resource, found from the resource's URL
    /// alone (RFC 9728 discovery), its requests bound to the resource (RFC 8707).
    func client(scopes: [String] = ["mcp:read", "offline_access"], dpop: DPoPOptions? = nil) async throws -> (OAuth2Client, DiscoveredResource) {
        // A metadata cache of its own: an earlier test's provider may have had this issuer.
        let found = try await ProtectedResourceDiscovery(environment: HTTPEnvironment(metadataCache: MetadataCache())).discover(resource: resource)
        var configuration = found.boundToResource(
            ClientConfiguration(clientID: clientID, redirectURI: URL(string: "http://127.0.0.1:53682/callback")!, scopes: scopes))
        configuration.dpop = dpop
        return (try await OAuth2Client(server: found.server, configuration: configuration), found)
    }

    /// Signs the demo user in with an authorization code: the embedded provider signs it in
    /// without a page, so the authorization URL answers with the redirect carrying the code.
    static func signIn(_ client: OAuth2Client, scopes: [String]? = nil) async throws -> TokenSet {
        let request = try await client.startAuthorization(AuthorizationOptions(scopes: scopes))
        return try await client.completeAuthorization(callbackURL: try await redirect(from: request.url), request: request)
    }

    /// Where `url` redirects to (one hop, followed by nobody), fetched through `transport`.
    static func redirect(from url: URL, through transport: any HTTPTransport = URLSessionTransport.shared) async throws -> URL {
        let (response, _) = try await transport.send(HTTPRequest(method: .get, url: url), body: nil)
        let location = try #require(response.headerFields[.location], "\(url.path) answered \(response.status) without a redirect")
        return try #require(URL(string: location, relativeTo: url)?.absoluteURL)
    }
}

/// What the MCP Swift SDK's `HTTPClientTransport` lacks on Linux (0.12.1): it reads no
/// Server-Sent Events there ("SSE responses aren't fully supported on Linux") and hands the
/// raw `text/event-stream` body to the client, which cannot decode it — and the example
/// server, on the SDK's `StatefulHTTPServerTransport`, answers every POST with an SSE stream.
/// This relay on loopback forwards each request to the server unchanged (headers, tokens,
/// proofs) and each answer back unchanged (status, challenges, session id), but for an SSE
/// body, which it hands over as the JSON-RPC message(s) its events carry — what the
/// transport itself does on Apple platforms. On macOS the tests could do without it.
struct SSEUnwrappingRelay {
    let server: LocalHTTPServer
    /// The MCP endpoint through the relay.
    let endpoint: URL

    /// Where a relay forwards to: a server's origin, known once the server listens.
    final class Target: @unchecked Sendable {
        private let lock = NSLock()
        private var url: URL?
        init(_ url: URL? = nil) { self.url = url }
        func set(_ url: URL) { lock.withLock { self.url = url } }
        var value: URL? { lock.withLock { url } }
    }

    /// A relay to `resource`'s server; its endpoint has `resource`'s path.
    static func with<T>(to resource: URL, _ body: (SSEUnwrappingRelay) async throws -> T) async throws -> T {
        try await with(target: Target(resource), path: resource.path, body)
    }

    /// A relay to `target`'s origin (answering 503 until it is set), its endpoint at `path`:
    /// for a server started after the relay, its public URL the relay's.
    static func with<T>(target: Target, path: String, _ body: (SSEUnwrappingRelay) async throws -> T) async throws -> T {
        try await LocalHTTPServer.with(handler: { request in
            guard let target = target.value else { return .response(HTTPResponse(status: .serviceUnavailable), Data()) }
            var components = URLComponents(url: target, resolvingAgainstBaseURL: false)!
            components.percentEncodedPath = request.path
            var forwarded = HTTPRequest(method: request.head.method, url: components.url!)
            for field in request.head.headerFields where ![HTTPField.Name("Host")!, .contentLength, .connection, .transferEncoding].contains(field.name) {
                forwarded.headerFields.append(field)
            }
            guard let answer = try? await URLSessionTransport.shared.send(forwarded, body: request.body.isEmpty ? nil : request.body)
            else { return .close }
            let (response, data) = answer
            var fields = HTTPFields()
            for field in response.headerFields where ![.contentLength, .connection, .transferEncoding].contains(field.name) {
                fields.append(field)
            }
            var body = data
            if response.headerFields[.contentType]?.contains("text/event-stream") == true {
                let messages = Self.messages(inEventStream: data)
                body = messages.count == 1 ? messages[0] : Data("[".utf8) + Data(messages.joined(separator: Data(",".utf8))) + Data("]".utf8)
                fields[.contentType] = "application/json"
            }
            return .response(HTTPResponse(status: response.status, headerFields: fields), body)
        }) { server in
            var components = URLComponents(url: server.baseURL, resolvingAgainstBaseURL: false)!
            components.path = path
            return try await body(SSEUnwrappingRelay(server: server, endpoint: components.url!))
        }
    }

    /// The non-empty `data` of each event of an SSE body (lines joined by newlines).
    static func messages(inEventStream data: Data) -> [Data] {
        let text = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        return text.components(separatedBy: "\n\n").compactMap { event in
            let lines = event.split(separator: "\n", omittingEmptySubsequences: false).filter { $0.hasPrefix("data:") }
            let payload = lines.map { line in
                var value = line.dropFirst("data:".count)
                if value.first == " " { value = value.dropFirst() }
                return String(value)
            }.joined(separator: "\n")
            return payload.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : Data(payload.utf8)
        }
    }
}

/// Runs `body`, failing with `description` if it has not finished after `limit` (a hang
/// bound: generous, never a speed requirement).
func withinHangBound<T: Sendable>(_ description: String, limit: Duration = .seconds(120), _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            throw HangBoundExceeded(description: description)
        }
        group.cancelAll()
        return value
    }
}

/// A step did not finish within its hang bound.
struct HangBoundExceeded: Error, CustomStringConvertible {
    let description: String
}
#endif
