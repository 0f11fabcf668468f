import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OAuth2

/// Reads one request per connection and answers it: 404/405/400 at once, or hands a
/// callback to the listener for its verdict. With `relaysFragment` it also serves the
/// fragment relay page and takes its POST.
final class CallbackHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart

    /// The largest relayed fragment accepted (an ID token and an access token fit well).
    static let maximumRelayBody = 64 * 1024

    private let callbackPath: String
    private let state: ListenerState
    private let pages: LoopbackPages
    private let relaysFragment: Bool
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var bodyTooLarge = false

    init(callbackPath: String, state: ListenerState, pages: LoopbackPages, relaysFragment: Bool) {
        self.callbackPath = callbackPath
        self.state = state
        self.pages = pages
        self.relaysFragment = relaysFragment
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body = []
            bodyTooLarge = false
        case .body(var buffer):
            // Only the relay's POST has a body worth reading; anything else is dropped.
            guard relaysFragment, head?.method == .POST, !bodyTooLarge else { return }
            if body.count + buffer.readableBytes > Self.maximumRelayBody {
                bodyTooLarge = true
                body = []
            } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body += bytes
            }
        case .end:
            guard let requestHead = head else { return }
            head = nil
            handle(requestHead, channel: context.channel)
        }
    }

    private func handle(_ request: HTTPRequestHead, channel: any Channel) {
        let isHead = request.method == .HEAD
        let parts = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts.first ?? "")
        let query = parts.count > 1 ? String(parts[1]) : ""
        guard path == callbackPath else {
            _ = LoopbackPage.write(pages.notFoundPage(), status: .notFound, headOnly: isHead, to: channel)
            return
        }
        if relaysFragment, request.method == .POST {
            relay(request, channel: channel)
            return
        }
        // Only a browser's GET delivers a callback (a HEAD or a prefetch must not consume it).
        guard request.method == .GET else {
            let allowed = relaysFragment ? "GET, POST" : "GET"
            _ = LoopbackPage.write(pages.notFoundPage(), status: .methodNotAllowed, headOnly: isHead, to: channel, extraHeaders: [("Allow", allowed)])
            return
        }
        // A page elsewhere that rebinds its DNS name to 127.0.0.1 sends its own Host.
        guard let authority = request.headers.first(name: "host"),
            let url = state.callbackURL(authority: authority, target: request.uri)
        else {
            _ = LoopbackPage.write(pages.rejectedPage(), status: .badRequest, headOnly: false, to: channel)
            return
        }
        // The implicit grant's response is in the fragment, which the browser keeps: the
        // relay page's script sends it back. Nothing is delivered, the wait goes on.
        if relaysFragment, query.isEmpty {
            _ = LoopbackPage.write(pages.fragmentRelayPage(), status: .ok, headOnly: false, to: channel)
            return
        }
        if !state.deliver(PendingCallback(url: url, channel: channel)) {
            _ = LoopbackPage.write(pages.failurePage(errorCode: nil), status: .serviceUnavailable, headOnly: false, to: channel)
        }
    }

    /// The relay page's POST: a form-encoded fragment from the listener's own origin,
    /// judged as the redirect URI with that fragment.
    private func relay(_ request: HTTPRequestHead, channel: any Channel) {
        let rejected = pages.relayAnswer(.reject)
        guard let authority = request.headers.first(name: "host"),
            let base = state.callbackURL(authority: authority, target: callbackPath)
        else {
            _ = LoopbackPage.writeText(rejected, status: .badRequest, to: channel)
            return
        }
        // A browser names the page's origin; another site's page must not post here.
        if let origin = request.headers.first(name: "origin"), !state.isOwnOrigin(origin) {
            _ = LoopbackPage.writeText(rejected, status: .forbidden, to: channel)
            return
        }
        if let site = request.headers.first(name: "sec-fetch-site"), site.lowercased() != "same-origin" {
            _ = LoopbackPage.writeText(rejected, status: .forbidden, to: channel)
            return
        }
        let type = request.headers.first(name: "content-type")?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/x-www-form-urlencoded" else {
            _ = LoopbackPage.writeText(rejected, status: .unsupportedMediaType, to: channel)
            return
        }
        guard !bodyTooLarge else {
            _ = LoopbackPage.writeText(rejected, status: .payloadTooLarge, to: channel)
            return
        }
        let fragment = String(decoding: body, as: UTF8.self)
        body = []
        // No fragment, or one that is no URL fragment: not a response, the wait goes on.
        guard !fragment.isEmpty, fragment.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }),
            let url = URL(string: base.absoluteString + "#" + fragment)
        else {
            _ = LoopbackPage.writeText(rejected, status: .badRequest, to: channel)
            return
        }
        if !state.deliver(PendingCallback(url: url, channel: channel, relayed: true)) {
            _ = LoopbackPage.writeText(pages.failurePage(errorCode: nil).message, status: .serviceUnavailable, to: channel)
        }
    }
}
