import Foundation
import NIOCore
import NIOHTTP1

/// The texts of the pages the loopback listener shows the browser.
///
/// Every page is one self-contained HTML document: inline style only, no script, no
/// image, no link to anything, served with `Referrer-Policy: no-referrer`, a
/// `Content-Security-Policy` that lets nothing load, `Cache-Control: no-store` and
/// `X-Frame-Options: DENY`. No page ever contains the authorization code, the state or a
/// server's `error_description`; the failure page names the error code only when it is a
/// plain code (`access_denied`).
public struct LoopbackPages: Sendable, Hashable {
    /// The application's name, shown in titles (`"oauth2"` for the command-line tool).
    public var applicationName: String
    /// The success page's heading.
    public var successHeading: String
    /// The success page's text.
    public var successMessage: String
    /// The failure page's text.
    public var failureMessage: String

    /// Creates page texts.
    public init(
        applicationName: String = "swift-oauth2",
        successHeading: String = "Signed in",
        successMessage: String = "You are signed in. You can close this window and return to the terminal.",
        failureMessage: String = "Sign-in did not complete. Return to the terminal for details."
    ) {
        self.applicationName = applicationName
        self.successHeading = successHeading
        self.successMessage = successMessage
        self.failureMessage = failureMessage
    }

    /// The page after an accepted response.
    func successPage() -> LoopbackPage {
        LoopbackPage(title: successHeading, heading: successHeading, message: successMessage, applicationName: applicationName, success: true)
    }

    /// The page after a response that reports an error (`errorCode` shown only when plain).
    func failurePage(errorCode: String?) -> LoopbackPage {
        var message = failureMessage
        if let errorCode, LoopbackPage.isPlainCode(errorCode) { message += " (\(errorCode))" }
        return LoopbackPage(title: "Sign-in failed", heading: "Sign-in failed", message: message, applicationName: applicationName, success: false)
    }

    /// The page for a request that is not this sign-in's response.
    func rejectedPage() -> LoopbackPage {
        LoopbackPage(
            title: "Not recognised", heading: "Not recognised",
            message: "This response does not belong to the sign-in in progress. Start the sign-in again from the terminal if it does not complete.",
            applicationName: applicationName, success: false)
    }

    /// Any other path.
    func notFoundPage() -> LoopbackPage {
        LoopbackPage(title: "Not found", heading: "Not found", message: "There is nothing here.", applicationName: applicationName, success: false)
    }
}

/// One rendered page.
struct LoopbackPage: Sendable, Hashable {
    let title: String
    let heading: String
    let message: String
    let applicationName: String
    let success: Bool

    /// The headers every page is served with.
    static let securityHeaders: [(String, String)] = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Referrer-Policy", "no-referrer"),
        ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Connection", "close"),
    ]

    /// The HTML document.
    var html: String {
        let color = success ? "#1a7f37" : "#cf222e"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <title>\(Self.escape(title)) – \(Self.escape(applicationName))</title>
            <style>body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#f6f8fa;color:#1f2328}main{max-width:32rem;padding:2rem;border-radius:12px;background:#fff;box-shadow:0 1px 3px rgba(0,0,0,.15)}h1{margin-top:0;font-size:1.4rem;color:\(color)}p{line-height:1.5}</style>
            </head><body><main><h1>\(Self.escape(heading))</h1><p>\(Self.escape(message))</p></main></body></html>

            """
    }

    /// Writes the page with its headers, then closes the connection.
    static func write(
        _ page: LoopbackPage, status: HTTPResponseStatus, headOnly: Bool, to channel: any Channel,
        extraHeaders: [(String, String)] = []
    ) -> EventLoopFuture<Void> {
        let body = Array(page.html.utf8)
        var headers = HTTPHeaders(securityHeaders + extraHeaders)
        headers.add(name: "Content-Length", value: String(body.count))
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        let eventLoop = channel.eventLoop
        return eventLoop.flatSubmit {
            channel.write(HTTPServerResponsePart.head(head), promise: nil)
            if !headOnly {
                channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
            }
            return channel.writeAndFlush(HTTPServerResponsePart.end(nil)).flatMap {
                channel.close()
            }.flatMapError { _ in
                // The browser went away first: still make sure the connection is closed.
                channel.close().recover { _ in }
            }
        }
    }

    /// `true` for an error code made of letters, digits and `_.-` only (at most 64).
    static func isPlainCode(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 64
            && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_.-".unicodeScalars.contains($0)) }
    }

    /// HTML-escapes text.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
