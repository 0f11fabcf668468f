#if Hummingbird
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The single-page app under `/spa/`: a static page and its script, which sign in through
/// the backend's routes and call the API through its proxy (`/bff/api/…`) with `fetch`.
/// The page never sees a token: only the session cookie (`HttpOnly`) goes with its calls.
enum SinglePageApp {
    /// `/spa/`: the page.
    static let page = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Single-page app</title></head>
        <body>
        <h1>swift-oauth2 · a single-page app with no token</h1>
        <p id="status">Loading…</p>
        <p><a id="signin" href="/auth/login?returnTo=/spa/" hidden>Sign in</a></p>
        <p><button id="call" type="button" hidden>Call the API</button></p>
        <pre id="result"></pre>
        <form id="signout" method="post" action="/auth/logout" hidden><input type="hidden" name="csrf" value=""><button type="submit" id="signout-button">Sign out</button></form>
        <script src="/spa/app.js"></script>
        </body></html>

        """

    /// `/spa/app.js`: every call carries `X-CSRF: 1`, the backend's anti-forgery header.
    static let script = """
        "use strict";
        const headers = { "X-CSRF": "1" };
        const $ = (id) => document.getElementById(id);

        async function showUser() {
          const response = await fetch("/bff/user", { headers });
          if (response.status === 401) {
            const reason = (await response.json()).error;
            $("status").textContent = reason === "session_expired" ? "Your session has ended" : "Not signed in";
            $("signin").hidden = false;
            return;
          }
          const user = await response.json();
          $("status").textContent = "Signed in as " + user.sub;
          document.querySelector("#signout input[name=csrf]").value = user.csrf;
          $("signout").hidden = false;
          $("call").hidden = false;
        }

        $("call").addEventListener("click", async () => {
          const response = await fetch("/bff/api/whoami", { headers });
          if (response.status === 401) {
            $("result").textContent = "Please sign in again";
            $("signin").hidden = false;
            return;
          }
          $("result").textContent = JSON.stringify(await response.json());
        });

        showUser();

        """

    /// The page's answers: no caching, and a content security policy that runs only the
    /// app's own script.
    static func response(_ text: String, contentType: String) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: contentType, .cacheControl: "no-store",
                HTTPField.Name("Content-Security-Policy")!: "default-src 'self'; frame-ancestors 'none'",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
#endif
