import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OAuth2Internals

extension TestProvider {
    /// Plays the user's browser for one step: GETs `url` (an authorization URL, an
    /// end-session URL) over a real connection and returns where the provider redirects to —
    /// for an authorization request, the client's redirect URI with `code`, `state` and `iss`
    /// (or `error`). Nothing is sent to the redirect target.
    ///
    /// ```swift
    /// let request = try await client.startAuthorization()
    /// let callback = try await provider.followRedirect(from: request.url)
    /// let tokens = try await client.completeAuthorization(callbackURL: callback, request: request)
    /// ```
    ///
    /// - Throws: ``TestProviderError`` `.errorPage` when the provider refuses with an error
    ///   page (the error holds its status and the start of its body, which says what was
    ///   refused); `.noRedirect` when it answers with a page instead; `.browser` when the URL
    ///   is not `http` or the connection fails or times out.
    public func followRedirect(from url: URL, timeout: Duration = .seconds(30)) async throws -> URL {
        let answer = try await Self.get(url, group: server.group, timeout: timeout)
        guard let target = try Self.redirectTarget(of: answer, from: url) else {
            throw TestProviderError(
                .noRedirect, "\(url.path) answered \(answer.status) without a redirect.", statusCode: answer.status,
                body: answer.text)
        }
        return target
    }

    /// Plays the user's browser for a whole visit: loads `url`; when the provider redirects,
    /// loads the redirect target too — so that a loopback listener waiting there receives the
    /// callback — and returns the target; when it shows a page (the device verification page
    /// after approving a device, the "signed out" page), returns `url`.
    ///
    /// Use it as the browser launcher of an interactive sign-in, or to approve a device by
    /// its `verification_uri_complete`:
    ///
    /// ```swift
    /// let signIn = LoopbackSignIn(browser: .custom { url in (try? await provider.openInBrowser(url)) != nil })
    /// let tokens = try await signIn.signIn(client: client)
    /// if let complete = deviceAuthorization.verificationURIComplete { try await provider.openInBrowser(complete) }
    /// ```
    ///
    /// - Throws: ``TestProviderError`` `.errorPage` when the provider refuses; `.browser` when
    ///   the URL is not `http`, or the provider or the redirect target does not answer (any
    ///   HTTP status from the target counts as an answer).
    @discardableResult
    public func openInBrowser(_ url: URL, timeout: Duration = .seconds(30)) async throws -> URL {
        let answer = try await Self.get(url, group: server.group, timeout: timeout)
        guard let target = try Self.redirectTarget(of: answer, from: url) else { return url }
        _ = try await Self.get(target, group: server.group, timeout: timeout)
        return target
    }

    struct Answer: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
        var text: String { String(decoding: body.prefix(2048), as: UTF8.self) }
    }

    /// The redirect target of an answer; `nil` for a page; throws for an error page.
    private static func redirectTarget(of answer: Answer, from url: URL) throws(TestProviderError) -> URL? {
        if answer.status >= 400 {
            throw TestProviderError(
                .errorPage, "\(url.path) answered \(answer.status).", statusCode: answer.status, body: answer.text)
        }
        guard (300..<400).contains(answer.status) else { return nil }
        guard let location = answer.headers.first(name: "Location"), let target = URL(string: location, relativeTo: url)?.absoluteURL else {
            throw TestProviderError(.browser, "\(url.path) answered \(answer.status) without a usable Location.", statusCode: answer.status)
        }
        return target
    }

    /// One HTTP/1.1 GET, redirects not followed.
    static func get(_ url: URL, group: any EventLoopGroup, timeout: Duration) async throws -> Answer {
        try await send(.GET, url, headers: ["User-Agent": "swift-oauth2-test-browser", "Accept": "text/html, */*"], body: [], group: group, timeout: timeout)
    }

    /// One HTTP/1.1 request to an `http` URL, redirects not followed.
    ///
    /// - Throws: ``TestProviderError`` `.browser` when the URL is not `http`, or the
    ///   connection fails or times out.
    static func send(
        _ method: HTTPMethod, _ url: URL, headers extraHeaders: HTTPHeaders, body: [UInt8], group: any EventLoopGroup, timeout: Duration
    ) async throws -> Answer {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.scheme?.lowercased() == "http",
            let rawHost = components.host, !rawHost.isEmpty
        else { throw TestProviderError(.browser, "The browser stand-in loads only http URLs.") }
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let port = components.port ?? 80
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        let hostHeader = (host.contains(":") ? "[\(host)]" : host) + (components.port.map { ":\($0)" } ?? "")
        var headers: HTTPHeaders = ["Host": hostHeader, "Connection": "close"]
        headers.add(contentsOf: extraHeaders)
        if method == .POST { headers.add(name: "Content-Length", value: String(body.count)) }
        let request = HTTPRequestHead(version: .http1_1, method: method, uri: target, headers: headers)
        do {
            let path = url.path
            return try await withDeadline(timeout, onTimeout: { throw TestProviderError(.browser, "\(path) did not answer within \(timeout).") }) {
                try await exchange(request, body: body, host: host, port: port, group: group)
            }
        } catch let error as TestProviderError {
            throw error
        } catch {
            throw TestProviderError(.browser, "\(url.path) could not be loaded: \(error)")
        }
    }

    private static func exchange(
        _ request: HTTPRequestHead, body requestBody: [UInt8], host: String, port: Int, group: any EventLoopGroup
    ) async throws -> Answer {
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            // One write: a server that answers as soon as it has the head and closes (Connection:
            // close) would otherwise make a later write of the same request fail.
            var parts: [HTTPClientRequestPart] = [.head(request)]
            if !requestBody.isEmpty { parts.append(.body(.byteBuffer(ByteBuffer(bytes: requestBody)))) }
            parts.append(.end(nil))
            try await outbound.write(contentsOf: parts)
            var head: HTTPResponseHead?
            var body: [UInt8] = []
            for try await part in inbound {
                switch part {
                case .head(let received): head = received
                case .body(let buffer): if body.count < 1 << 20 { body.append(contentsOf: buffer.readableBytesView) }
                case .end:
                    guard let head else { break }
                    return Answer(status: Int(head.status.code), headers: head.headers, body: body)
                }
            }
            throw TestProviderError(.browser, "The connection closed before a complete answer.")
        }
    }
}
