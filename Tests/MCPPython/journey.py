"""The official MCP Python SDK (`mcp` from PyPI) as a client of the example MCP server
(Examples/MCPServer), with the SDK's own OAuth client (OAuthClientProvider):

1. an unauthenticated request gets 401 with `resource_metadata`; the SDK reads our RFC 9728
   metadata, checks its `resource` against the URL, discovers the authorization server (the
   embedded test provider) and signs in with PKCE and `resource` for the challenge's scope
   (mcp:read) — the browser step played over HTTP: the provider signs its demo user in
   automatically, so GETting the authorization URL answers with the redirect carrying the code;
2. it lists the tools and calls `echo` (mcp:read);
3. it calls `write_note` (mcp:write): the server answers 403 insufficient_scope naming the
   scopes, the SDK signs in again for the union (step-up) and the call is retried and succeeds.

The client is pre-registered (the embedded provider has no dynamic registration): the token
storage hands the SDK its client information, so it skips registration.

Then, with CERT and KEY (a server certificate for 127.0.0.1 from a CA the example server's
embedded provider trusts), a second client identified by a Client ID Metadata Document
(draft-ietf-oauth-client-id-metadata-document; the SDK's `client_metadata_url`): the journey
serves the document over HTTPS itself, the SDK sees `client_id_metadata_document_supported` in
the provider's metadata and uses the document's URL as its client_id without registering, the
provider fetches and validates the document, and the client signs in, calls tools and steps up.
A client_id at an http URL is refused by the provider with invalid_client, without a redirect.

Usage: journey.py MCP_URL CLIENT_ID [CERT KEY]. Appends "mcp <check>" to $OAUTH2_INTEGRATION_LOG for each
check that passed; exits 1 if any failed. Never prints a token or a code.
"""

import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

TIMEOUT = 120  # a hang bound, not a speed requirement


class MemoryStorage(TokenStorage):
    def __init__(self, client_info: OAuthClientInformationFull | None):
        self.tokens: OAuthToken | None = None
        self.client_info = client_info

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class ScriptedBrowser:
    """Loads the authorization URL like a browser whose user approves at once, and hands the
    redirect's parameters to the SDK's callback handler."""

    def __init__(self) -> None:
        self.callback: dict[str, list[str]] | None = None
        self.authorization_requests: list[dict[str, list[str]]] = []

    async def redirect(self, url: str) -> None:
        self.authorization_requests.append(parse_qs(urlparse(url).query))
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            answer = await http.get(url)
        if answer.status_code not in (302, 303) or "location" not in answer.headers:
            raise RuntimeError(f"the authorization endpoint answered {answer.status_code} without a redirect")
        self.callback = parse_qs(urlparse(answer.headers["location"]).query)
        if "error" in self.callback:
            raise RuntimeError(f"the authorization endpoint refused: {self.callback['error'][0]}")

    async def wait_for_callback(self) -> AuthorizationCodeResult:
        assert self.callback is not None
        values = {k: v[0] for k, v in self.callback.items()}
        self.callback = None
        return AuthorizationCodeResult(code=values["code"], state=values.get("state"), iss=values.get("iss"))


async def journey(url: str, client_id: str, passed: list[str], failed: list[str]) -> None:
    def check(name: str, ok: bool, detail: str = "") -> None:
        (passed if ok else failed).append(name)
        print(f"mcp-python: {'ok' if ok else 'FAILED'} {name}{(' — ' + detail) if detail and not ok else ''}", flush=True)

    # The challenge a client starts from (RFC 9728 §5.1), read without the SDK.
    async with httpx2.AsyncClient(timeout=30) as raw:
        answer = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"Accept": "application/json, text/event-stream"})
    challenge = answer.headers.get("www-authenticate", "")
    check("answers 401 with resource_metadata and the endpoint's scope",
          answer.status_code == 401 and challenge.startswith("Bearer ") and 'scope="mcp:read"' in challenge
          and 'resource_metadata="' in challenge and "/.well-known/oauth-protected-resource/mcp" in challenge,
          f"{answer.status_code} {challenge}")

    redirect_uri = "http://127.0.0.1:53682/callback"  # never listened on: the scripted browser reads the redirect
    metadata = OAuthClientMetadata(
        client_name="mcp python journey", redirect_uris=[redirect_uri], grant_types=["authorization_code", "refresh_token"],
        response_types=["code"], token_endpoint_auth_method="none")
    storage = MemoryStorage(OAuthClientInformationFull(client_id=client_id, redirect_uris=[redirect_uri], token_endpoint_auth_method="none"))
    browser = ScriptedBrowser()
    auth = OAuthClientProvider(
        server_url=url, client_metadata=metadata, storage=storage,
        redirect_handler=browser.redirect, callback_handler=browser.wait_for_callback)

    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                prm = auth.context.protected_resource_metadata
                check("discovers the protected resource metadata", prm is not None and str(prm.resource).rstrip("/") == url.rstrip("/"),
                      f"resource {prm.resource if prm else None}")
                first = browser.authorization_requests[0] if browser.authorization_requests else {}
                # The SDK adds offline_access (it asks for refresh tokens) to the challenge's scope.
                first_scopes = set(first.get("scope", [""])[0].split())
                check("signs in with resource and the challenge's scope",
                      first.get("resource") == [url] and "mcp:read" in first_scopes and "mcp:write" not in first_scopes
                      and first.get("code_challenge_method") == ["S256"],
                      f"resource {first.get('resource')}, scope {sorted(first_scopes)}")

                tools = await session.list_tools()
                names = sorted(tool.name for tool in tools.tools)
                check("lists the tools", names == ["echo", "list_notes", "write_note"], f"{names}")

                echoed = await session.call_tool("echo", {"text": "hello from python"})
                text = echoed.content[0].text if echoed.content else None
                check("calls echo with mcp:read", not echoed.is_error and text == "hello from python", f"{text!r}")

                written = await session.call_tool("write_note", {"text": "a note from python"})
                second = browser.authorization_requests[1] if len(browser.authorization_requests) > 1 else {}
                scopes = sorted(second.get("scope", [""])[0].split())
                check("steps up for write_note's scope on 403 insufficient_scope",
                      len(browser.authorization_requests) == 2 and {"mcp:read", "mcp:write"} <= set(scopes)
                      and second.get("resource") == [url],
                      f"{len(browser.authorization_requests)} sign-ins, second for {scopes}")
                check("calls write_note after the step-up", not written.is_error, f"{written.content}")

                notes = await session.call_tool("list_notes", {})
                check("keeps the earlier scope after the step-up",
                      not notes.is_error and any(getattr(c, "text", None) == "a note from python" for c in notes.content)
                      and len(browser.authorization_requests) == 2)


class DocumentServer:
    """An HTTPS server on 127.0.0.1 serving one Client ID Metadata Document at /client.json,
    counting the provider's fetches."""

    def __init__(self, cert: str, key: str, redirect_uri: str) -> None:
        self.fetches = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 — http.server's name
                if self.path != "/client.json":
                    self.send_error(404)
                    return
                outer.fetches += 1
                body = json.dumps(outer.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/client.json"
        self.document = {
            "client_id": self.url, "client_name": "mcp python journey (metadata document)", "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def metadata_document_journey(url: str, cert: str, key: str, passed: list[str], failed: list[str]) -> None:
    def check(name: str, ok: bool, detail: str = "") -> None:
        (passed if ok else failed).append(name)
        print(f"mcp-python: {'ok' if ok else 'FAILED'} {name}{(' — ' + detail) if detail and not ok else ''}", flush=True)

    redirect_uri = "http://127.0.0.1:53683/callback"  # never listened on: the scripted browser reads the redirect
    documents = DocumentServer(cert, key, redirect_uri)
    try:
        metadata = OAuthClientMetadata(
            client_name="mcp python journey (metadata document)", redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"], token_endpoint_auth_method="none")
        storage = MemoryStorage(None)  # no client information: the SDK must find its own way
        browser = ScriptedBrowser()
        auth = OAuthClientProvider(
            server_url=url, client_metadata=metadata, storage=storage,
            redirect_handler=browser.redirect, callback_handler=browser.wait_for_callback,
            client_metadata_url=documents.url)

        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    oauth = auth.context.oauth_metadata
                    check("metadata document: the provider advertises client_id_metadata_document_supported",
                          oauth is not None and oauth.client_id_metadata_document_supported is True)
                    first = browser.authorization_requests[0] if browser.authorization_requests else {}
                    check("metadata document: signs in with the document's URL as client_id, without registering",
                          first.get("client_id") == [documents.url] and storage.client_info is not None
                          and storage.client_info.client_id == documents.url and documents.fetches >= 1,
                          f"client_id {first.get('client_id')}, {documents.fetches} fetches")

                    echoed = await session.call_tool("echo", {"text": "hello from a metadata document"})
                    text = echoed.content[0].text if echoed.content else None
                    check("metadata document: calls echo", not echoed.is_error and text == "hello from a metadata document", f"{text!r}")

                    written = await session.call_tool("write_note", {"text": "a note from a metadata document"})
                    second = browser.authorization_requests[1] if len(browser.authorization_requests) > 1 else {}
                    check("metadata document: steps up for write_note and calls it",
                          not written.is_error and len(browser.authorization_requests) == 2
                          and second.get("client_id") == [documents.url] and "mcp:write" in second.get("scope", [""])[0].split(),
                          f"{len(browser.authorization_requests)} sign-ins, {written.content}")

        # The hostile case: the same document named by an http URL. The provider refuses it
        # (invalid_client) on its own page, never redirecting to the unvalidated redirect_uri.
        assert oauth is not None
        fetches = documents.fetches
        insecure = documents.url.replace("https://", "http://", 1)
        query = urlencode({
            "response_type": "code", "client_id": insecure, "redirect_uri": redirect_uri, "state": "s",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256",
        })
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as raw:
            answer = await raw.get(f"{oauth.authorization_endpoint}?{query}")
        body = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else {}
        check("metadata document: a client_id at an http URL is refused (invalid_client, no redirect, no fetch)",
              answer.status_code == 400 and "location" not in answer.headers and body.get("error") == "invalid_client"
              and "https" in body.get("error_description", "") and documents.fetches == fetches,
              f"{answer.status_code} {body}")
    finally:
        documents.close()


def main() -> int:
    url, client_id = sys.argv[1], sys.argv[2]
    cert, key = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)
    passed: list[str] = []
    failed: list[str] = []

    async def run() -> None:
        with anyio.fail_after(TIMEOUT):
            await journey(url, client_id, passed, failed)
        if cert and key:
            with anyio.fail_after(TIMEOUT):
                await metadata_document_journey(url, cert, key, passed, failed)

    try:
        anyio.run(run)
    except Exception as error:  # noqa: BLE001 — reported, and the run fails
        failed.append(f"journey ({type(error).__name__}: {error})")
        print(f"mcp-python: FAILED the journey stopped: {type(error).__name__}: {error}", flush=True)
    log = os.environ.get("OAUTH2_INTEGRATION_LOG")
    if log:
        with open(log, "a") as out:
            for name in passed:
                out.write(f"mcp python {name}\n")
    print(f"mcp-python: {len(passed)} passed, {len(failed)} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
