import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import OAuth2Internals
import OAuth2JOSE

/// The texts of the pages the loopback listener shows the browser.
///
/// Every page is one self-contained HTML document: inline style only, no script, no
/// image, no link to anything, served with `Referrer-Policy: no-referrer`, a
/// `Content-Security-Policy` that lets nothing load, `Cache-Control: no-store` and
/// `X-Frame-Options: DENY`. The one exception is the implicit grant's fragment relay page
/// (served only by a listener started with `relaysFragment`): it carries one inline script,
/// ``fragmentRelayScript``, which its CSP allows by hash and which may talk to its own
/// origin only. No page ever contains the authorization code, the state or a
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

    /// The page served on the callback path to a browser whose address holds the implicit
    /// grant's response in its fragment, which never reaches a server: its script posts the
    /// fragment back to the listener and shows the answer.
    func fragmentRelayPage() -> LoopbackPage {
        LoopbackPage(
            title: "Completing sign-in", heading: "Completing sign-in…",
            message: "Passing the sign-in response to the terminal…", applicationName: applicationName, success: true,
            script: Self.fragmentRelayScript,
            noscript: "This sign-in needs JavaScript to pass the response to the terminal.")
    }

    /// The one script a listener ever serves (on the fragment relay page). It reads the
    /// fragment, removes it from the address bar and history, and POSTs it unchanged
    /// (`application/x-www-form-urlencoded`) to the page's own path on its own origin — no
    /// credentials, no referrer — then shows the listener's plain-text answer, which never
    /// contains a token. Without a fragment it posts nothing.
    public static let fragmentRelayScript = #"(function(){var s=document.getElementById("status"),f=location.hash.slice(1);history.replaceState(null,"",location.pathname+location.search);if(!f){s.textContent="This address has no sign-in response. Return to the terminal.";return}fetch(location.pathname,{method:"POST",headers:{"Content-Type":"application/x-www-form-urlencoded"},body:f,credentials:"omit",cache:"no-store",referrerPolicy:"no-referrer",redirect:"error"}).then(function(r){return r.text()}).then(function(t){s.textContent=t},function(){s.textContent="The sign-in response could not be passed to the terminal."})})();"#

    /// The CSP source that allows ``fragmentRelayScript`` and nothing else: `'sha256-…'`.
    public static let fragmentRelayScriptSource: String = {
        "'sha256-" + Data(SHA256.hash(data: Data(fragmentRelayScript.utf8))).base64EncodedString() + "'"
    }()

    /// The plain-text answer to a relayed response (the script shows it as it is).
    func relayAnswer(_ verdict: LoopbackRedirectListener.Verdict) -> String {
        switch verdict {
        case .accept: return "\(successHeading). \(successMessage)"
        case .acceptFailure(let errorCode): return failurePage(errorCode: errorCode).message
        case .reject: return rejectedPage().message
        }
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
    /// The page's one inline script (the fragment relay's), allowed by its hash.
    var script: String? = nil
    /// Shown when scripts are off (with ``script``).
    var noscript: String? = nil

    /// The headers every page without a script is served with.
    static let securityHeaders: [(String, String)] = headers(scriptSource: nil)

    /// The headers of a page; `scriptSource` (a CSP hash source) allows that one inline
    /// script and `fetch` to the page's own origin.
    static func headers(scriptSource: String?, contentType: String = "text/html; charset=utf-8") -> [(String, String)] {
        let scripts = scriptSource.map { "script-src \($0); connect-src 'self'; " } ?? ""
        return [
            ("Content-Type", contentType),
            ("Referrer-Policy", "no-referrer"),
            ("Content-Security-Policy", "default-src 'none'; \(scripts)style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
            ("X-Frame-Options", "DENY"),
            ("Connection", "close"),
        ]
    }

    /// This page's headers.
    var headers: [(String, String)] {
        script == nil ? Self.securityHeaders : Self.headers(scriptSource: LoopbackPages.fragmentRelayScriptSource)
    }

    /// The HTML document.
    var html: String {
        let color = success ? "#1a7f37" : "#cf222e"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <title>\(HTML.escape(title)) – \(HTML.escape(applicationName))</title>
            <style>body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#f6f8fa;color:#1f2328}main{max-width:32rem;padding:2rem;border-radius:12px;background:#fff;box-shadow:0 1px 3px rgba(0,0,0,.15)}h1{margin-top:0;font-size:1.4rem;color:\(color)}p{line-height:1.5}</style>
            </head><body><main><h1>\(HTML.escape(heading))</h1><p id="status">\(HTML.escape(message))</p>\(noscript.map { "<noscript><p>\(HTML.escape($0))</p></noscript>" } ?? "")</main>\(script.map { "<script>\($0)</script>" } ?? "")</body></html>

            """
    }

    /// Writes the page with its headers, then closes the connection.
    static func write(
        _ page: LoopbackPage, status: HTTPResponseStatus, headOnly: Bool, to channel: any Channel,
        extraHeaders: [(String, String)] = []
    ) -> EventLoopFuture<Void> {
        write(Array(page.html.utf8), headers: page.headers + extraHeaders, status: status, headOnly: headOnly, to: channel)
    }

    /// Writes a plain-text answer (to the fragment relay's POST), then closes the connection.
    static func writeText(_ text: String, status: HTTPResponseStatus, to channel: any Channel) -> EventLoopFuture<Void> {
        write(Array(text.utf8), headers: headers(scriptSource: nil, contentType: "text/plain; charset=utf-8"), status: status, headOnly: false, to: channel)
    }

    /// Writes a body with its headers, then closes the connection.
    static func write(
        _ body: [UInt8], headers fields: [(String, String)], status: HTTPResponseStatus, headOnly: Bool, to channel: any Channel
    ) -> EventLoopFuture<Void> {
        var headers = HTTPHeaders(fields)
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
}
