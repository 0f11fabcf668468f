import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OAuth2

/// A callback request waiting for its verdict.
struct PendingCallback: Sendable {
    let url: URL
    let channel: any Channel
    /// `true` for the fragment relay's POST, which gets plain text, not a page.
    var relayed = false

    /// Writes the page (or, to a relayed POST, the plain-text answer) and closes the
    /// connection; the future completes when it is closed.
    func respond(status: HTTPResponseStatus, page: LoopbackPage, relayAnswer: String? = nil) -> EventLoopFuture<Void> {
        if relayed { return LoopbackPage.writeText(relayAnswer ?? page.message, status: status, to: channel) }
        return LoopbackPage.write(page, status: status, headOnly: false, to: channel)
    }
}
