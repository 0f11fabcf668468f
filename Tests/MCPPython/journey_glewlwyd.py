"""The official MCP Python SDK (`mcp` from PyPI) as a client of the example MCP server
(Examples/MCPServer) whose authorization server is Glewlwyd 2.7.5 (its OIDC instance oidc-mcp,
scripts/test-servers/glewlwyd.sh seed_mcp_peers), with the SDK's own OAuth client
(OAuthClientProvider) and a real browser:

1. an unauthenticated request gets 401 with `resource_metadata`; the SDK reads our RFC 9728
   metadata, checks its `resource` against the URL and discovers Glewlwyd from it;
2. it has no client there: it registers one dynamically (RFC 7591) at Glewlwyd's
   registration endpoint. The registration carries `resource` (the server's URL), Glewlwyd's
   registration member listing the resources its tokens may name (the instance's
   resource-client-property): the server's port is picked per run, so no configuration could
   list it beforehand. It registers as a confidential client (client_secret_basic): Glewlwyd
   2.7.5 stores a client registered with `none` as confidential without a secret, which could
   never use the token endpoint;
3. it signs in with PKCE and `resource` for the challenge's scope (mcp:read): the
   authorization URL the SDK hands its redirect handler is opened by the existing Chromium
   driver (Tests/Support/browser/oauth2-browser), which signs the test user in on Glewlwyd's
   own login page, consents, and follows the redirect to this journey's loopback listener;
4. Glewlwyd's token names the server's URL as its audience (the server checks it);
5. it lists the tools and calls `echo` (mcp:read);
6. it calls `write_note` (mcp:write): 403 insufficient_scope naming the scopes, the SDK signs
   in again (the browser again, consent for the wider scope) and the retried call succeeds.

Usage: journey_glewlwyd.py MCP_URL. Environment: OAUTH2_TEST_GLEWLWYD_MCP_ISSUER (the issuer
the server must list), OAUTH2_TEST_GLEWLWYD_MCP_RS_ID / _SECRET (the resource servers'
introspection client), OAUTH2_TEST_GLEWLWYD_MCP_USER / _PASSWORD (the person at the browser),
OAUTH2_MCP_PYTHON_STATE_DIR (the browser's log and cookies). Appends "mcp python-glewlwyd
<check>" to $OAUTH2_INTEGRATION_LOG for each check that passed; exits 1 if any failed. Never
prints a token, a secret or a code.
"""

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from journey import MemoryStorage  # noqa: E402 — the same token storage as the embedded journey

TIMEOUT = 300  # a hang bound for the whole journey (two browser sign-ins), not a speed requirement
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DRIVER = os.path.join(ROOT, "Tests", "Support", "browser", "oauth2-browser")


class GlewlwydClientMetadata(OAuthClientMetadata):
    """The SDK's registration metadata plus Glewlwyd's `resource` member: the resources the
    registered client's tokens may name (RFC 8707 `resource` values)."""

    resource: list[str] | None = None


class LoopbackListener:
    """The redirect URI: a listener on 127.0.0.1 (a port of the system's choosing) that keeps
    the query of each redirect it receives and answers a small page."""

    def __init__(self) -> None:
        self.received: list[dict[str, list[str]]] = []
        self.arrived = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 — http.server's name
                parsed = urlparse(self.path)
                if parsed.path != "/callback":
                    self.send_error(404)
                    return
                body = b"<!doctype html><title>Signed in</title><p>Signed in. You may close this window."
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with outer.arrived:
                    outer.received.append(parse_qs(parsed.query))
                    outer.arrived.notify_all()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.redirect_uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count: int, timeout: float) -> dict[str, list[str]] | None:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.received) >= count, timeout=timeout)
            return self.received[count - 1] if len(self.received) >= count else None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ChromiumBrowser:
    """The SDK's redirect and callback handlers: the authorization URL is opened by
    oauth2-browser (headless Chromium signing the person in on Glewlwyd's pages, consenting
    when asked); the code comes back through the loopback listener. The provider's session
    cookie carries over from one sign-in to the next, as in a browser left open."""

    def __init__(self, listener: LoopbackListener, state_dir: str, user: str, password: str) -> None:
        self.listener = listener
        self.authorization_requests: list[dict[str, list[str]]] = []
        self.env = dict(os.environ)
        self.env.update({
            "OAUTH2_BROWSER_USER": user, "OAUTH2_BROWSER_PASSWORD": password,
            "OAUTH2_BROWSER_COOKIES": os.path.join(state_dir, "glewlwyd-browser-cookies.json"),
            "OAUTH2_BROWSER_LOG": os.path.join(state_dir, "glewlwyd-browser.log"),
            "OAUTH2_BROWSER_TIMEOUT": "60",
        })
        try:
            os.remove(self.env["OAUTH2_BROWSER_COOKIES"])  # start signed out
        except FileNotFoundError:
            pass

    async def redirect(self, url: str) -> None:
        self.authorization_requests.append(parse_qs(urlparse(url).query))
        # A hang bound of its own besides the driver's (2 × 60 s + its start).
        done = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, DRIVER, url], env=self.env, capture_output=True, text=True, timeout=180))
        if done.returncode != 0:
            raise RuntimeError(f"oauth2-browser exited {done.returncode}: {done.stderr.strip()[-400:]}")

    async def wait_for_callback(self) -> AuthorizationCodeResult:
        count = len(self.authorization_requests)
        received = await anyio.to_thread.run_sync(lambda: self.listener.wait(count, 60))
        if received is None:
            raise RuntimeError("the browser's redirect did not reach the loopback listener")
        values = {k: v[0] for k, v in received.items()}
        if "error" in values:
            raise RuntimeError(f"Glewlwyd refused the sign-in: {values['error']}")
        return AuthorizationCodeResult(code=values["code"], state=values.get("state"), iss=values.get("iss"))


async def journey(url: str, passed: list[str], failed: list[str]) -> None:
    def check(name: str, ok: bool, detail: str = "") -> None:
        (passed if ok else failed).append(name)
        print(f"mcp-python-glewlwyd: {'ok' if ok else 'FAILED'} {name}{(' — ' + detail) if detail and not ok else ''}", flush=True)

    env = os.environ
    issuer = env["OAUTH2_TEST_GLEWLWYD_MCP_ISSUER"]
    introspection = (env["OAUTH2_TEST_GLEWLWYD_MCP_RS_ID"], env["OAUTH2_TEST_GLEWLWYD_MCP_RS_SECRET"])
    state_dir = env.get("OAUTH2_MCP_PYTHON_STATE_DIR") or os.path.join(ROOT, ".build", "mcp-python")
    os.makedirs(state_dir, exist_ok=True)

    # The challenge a client starts from (RFC 9728 §5.1), read without the SDK.
    async with httpx2.AsyncClient(timeout=30) as raw:
        answer = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"Accept": "application/json, text/event-stream"})
    challenge = answer.headers.get("www-authenticate", "")
    check("answers 401 with resource_metadata and the endpoint's scope",
          answer.status_code == 401 and 'scope="mcp:read"' in challenge and 'resource_metadata="' in challenge,
          f"{answer.status_code} {challenge}")

    listener = LoopbackListener()
    try:
        metadata = GlewlwydClientMetadata(
            client_name="mcp python journey (Glewlwyd)", redirect_uris=[listener.redirect_uri],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="client_secret_basic", resource=[url])
        storage = MemoryStorage(None)  # no client information: the SDK registers one
        browser = ChromiumBrowser(listener, state_dir, env["OAUTH2_TEST_GLEWLWYD_MCP_USER"], env["OAUTH2_TEST_GLEWLWYD_MCP_PASSWORD"])
        auth = OAuthClientProvider(
            server_url=url, client_metadata=metadata, storage=storage,
            redirect_handler=browser.redirect, callback_handler=browser.wait_for_callback)

        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    prm = auth.context.protected_resource_metadata
                    oauth = auth.context.oauth_metadata
                    check("discovers the protected resource metadata and Glewlwyd from it",
                          prm is not None and str(prm.resource).rstrip("/") == url.rstrip("/")
                          and oauth is not None and str(oauth.issuer).rstrip("/") == issuer.rstrip("/"),
                          f"resource {prm.resource if prm else None}, issuer {oauth.issuer if oauth else None}")

                    info = storage.client_info
                    registered = info is not None and bool(info.client_id) and bool(info.client_secret)
                    check("registers a client dynamically at Glewlwyd (RFC 7591)",
                          registered and oauth is not None and oauth.registration_endpoint is not None
                          and str(oauth.registration_endpoint).startswith(issuer),
                          f"client info {'stored' if info else 'missing'}")

                    first = browser.authorization_requests[0] if browser.authorization_requests else {}
                    first_scopes = set(first.get("scope", [""])[0].split())
                    check("signs in through Glewlwyd's login page in Chromium, with resource and the challenge's scope",
                          len(browser.authorization_requests) == 1 and first.get("resource") == [url]
                          and "mcp:read" in first_scopes and "mcp:write" not in first_scopes
                          and first.get("code_challenge_method") == ["S256"]
                          and info is not None and first.get("client_id") == [info.client_id],
                          f"{len(browser.authorization_requests)} sign-ins, resource {first.get('resource')}, scope {sorted(first_scopes)}")

                    # What the server's introspection sees: the token names the server (aud).
                    tokens = storage.tokens
                    async with httpx2.AsyncClient(timeout=30) as raw:
                        introspected = (await raw.post(f"{issuer}/introspect", data={"token": tokens.access_token if tokens else ""},
                                                       auth=introspection)).json()
                    check("Glewlwyd's token names the server's URL as its audience",
                          introspected.get("active") is True and introspected.get("aud") == url
                          and info is not None and introspected.get("client_id") == info.client_id,
                          f"active {introspected.get('active')}, aud {introspected.get('aud')}")

                    tools = await session.list_tools()
                    names = sorted(tool.name for tool in tools.tools)
                    check("lists the tools", names == ["echo", "list_notes", "write_note"], f"{names}")

                    echoed = await session.call_tool("echo", {"text": "hello from python via Glewlwyd"})
                    text = echoed.content[0].text if echoed.content else None
                    check("calls echo with mcp:read", not echoed.is_error and text == "hello from python via Glewlwyd", f"{text!r}")

                    written = await session.call_tool("write_note", {"text": "a note from python via Glewlwyd"})
                    second = browser.authorization_requests[1] if len(browser.authorization_requests) > 1 else {}
                    scopes = sorted(second.get("scope", [""])[0].split())
                    check("steps up for write_note's scope on 403 insufficient_scope, through the browser again",
                          len(browser.authorization_requests) == 2 and {"mcp:read", "mcp:write"} <= set(scopes)
                          and second.get("resource") == [url] and second.get("client_id") == first.get("client_id"),
                          f"{len(browser.authorization_requests)} sign-ins, second for {scopes}")
                    check("calls write_note after the step-up", not written.is_error, f"{written.content}")

                    notes = await session.call_tool("list_notes", {})
                    check("keeps the earlier scope after the step-up",
                          not notes.is_error and len(browser.authorization_requests) == 2
                          and any(getattr(c, "text", None) == "a note from python via Glewlwyd" for c in notes.content))
    finally:
        listener.close()


def main() -> int:
    url = sys.argv[1]
    passed: list[str] = []
    failed: list[str] = []

    async def run() -> None:
        with anyio.fail_after(TIMEOUT):
            await journey(url, passed, failed)

    try:
        anyio.run(run)
    except Exception as error:  # noqa: BLE001 — reported, and the run fails
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]  # the one error a task group wrapped
        failed.append(f"journey ({type(error).__name__}: {error})")
        print(f"mcp-python-glewlwyd: FAILED the journey stopped: {type(error).__name__}: {error}", flush=True)
    log = os.environ.get("OAUTH2_INTEGRATION_LOG")
    if log:
        with open(log, "a") as out:
            for name in passed:
                out.write(f"mcp python-glewlwyd {name}\n")
    print(f"mcp-python-glewlwyd: {len(passed)} passed, {len(failed)} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
