#if Hummingbird
import Foundation
import Hummingbird
import NIOCore
import OAuth2Web

/// The app's HTML pages. Every value printed into them is HTML-escaped.
enum Pages {
    /// `/`: who is signed in, if anyone.
    static func home(_ user: WebUser?) -> Response {
        let status = user.map { "Signed in as \(escape($0.subject))" } ?? "Not signed in"
        let links =
            user == nil
            ? #"<a id="signin" href="/auth/login">Sign in</a>"#
            : #"<a id="profile" href="/profile">Profile</a> · <a id="userinfo" href="/api/userinfo">UserInfo</a>"#
        return html(
            title: "Home",
            """
            <h1>swift-oauth2 · Hummingbird example</h1>
            <p id="status">\(status)</p>
            <p>\(links)</p>
            """)
    }

    /// `/profile`: the signed-in user and the sign-out form (with the session's CSRF token).
    static func profile(_ user: WebUser) -> Response {
        html(
            title: "Profile",
            """
            <h1>Profile</h1>
            <p id="subject">\(escape(user.subject))</p>
            <p id="name">\(escape(user.claims["name"]?.stringValue ?? ""))</p>
            <p><a href="/">Home</a> · <a href="/api/userinfo">UserInfo</a></p>
            <form id="signout" method="post" action="/auth/logout"><input type="hidden" name="csrf" value="\(escape(user.csrfToken))"><button type="submit" id="signout-button">Sign out</button></form>
            """)
    }

    /// A whole page, never cached (it shows who is signed in).
    static func html(title: String, _ body: String) -> Response {
        let page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title></head>
            <body>
            \(body)
            </body></html>

            """
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
    }

    /// `text` with `&`, `<`, `>`, `"` and `'` escaped: safe in element content and quoted attributes.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
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
#endif
