"""An MCP server made with the official MCP Python SDK (mcp==2.3.0) as an OAuth 2.0 protected
resource whose tokens Glewlwyd issues: what our client signs into from the server's URL alone.

  resource_server.py

Environment:
  MCP_RS_ISSUER               Glewlwyd's issuer, the one authorization server the metadata lists
  MCP_RS_INTROSPECTION_URL    Glewlwyd's introspection endpoint (RFC 7662)
  MCP_RS_INTROSPECTION_ID     the client the server introspects as (HTTP Basic)
  MCP_RS_INTROSPECTION_SECRET its secret
  MCP_RS_AUDIENCE             optional: the audience a token must name (RFC 8707 / RFC 9068
                              `aud`); by default the server's own URL, its resource identifier

The SDK's parts: `AuthSettings` (issuer_url, resource_server_url, required_scopes) makes the
protected resource metadata (RFC 9728) and the 401 challenge naming it; `token_verifier=` is
`GlewlwydIntrospection`, which asks Glewlwyd about each token and refuses one that is not
active, whose `aud` does not name the audience, or without a scope; it reports the audience as
the token's `resource`, and `validate_token_resource=True` has the SDK's bearer middleware
refuse, again, a token whose resource is not `resource_server_url` (when the audience is the
server's URL). The SDK checks one scope list for the
whole server: the tool `profile` needs `g_profile` as well, and `ToolScopes` answers a call to
it with 403 `insufficient_scope` naming the scopes (RFC 6750 §3.1), the MCP step-up challenge.

Binds 127.0.0.1 on a port the system picks and prints `LISTENING <url>` (the MCP endpoint) on
stdout once it serves. Nothing secret is printed or logged.
"""

import asyncio
import json
import os
import socket
import sys
import time

import httpx2 as httpx
import uvicorn
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

REQUIRED = ["read"]  # every request (the SDK's required_scopes)
TOOL_SCOPES = {"profile": ["read", "g_profile"]}  # a tool needing more than the server's scopes


class GlewlwydIntrospection(TokenVerifier):
    """RFC 7662 at Glewlwyd, as a confidential client (HTTP Basic). Glewlwyd's instance oidc-mcp
    answers such a client about every token it issued (it has an introspection scope configured,
    glewlwyd.sh seed_mcp_peers), so the tokens of clients registered at run time are seen; a
    token of another instance or issuer is `active: false`."""

    def __init__(self, endpoint: str, client_id: str, secret: str, audience: str):
        self.endpoint, self.auth, self.audience = endpoint, (client_id, secret), audience

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(self.endpoint, data={"token": token}, auth=self.auth)
        if response.status_code != 200:
            print(f"resource-server: introspection answered {response.status_code}", file=sys.stderr)
            return None
        answer = response.json()
        if answer.get("active") is not True:
            return None
        exp = answer.get("exp")
        if isinstance(exp, int) and exp <= time.time():
            return None
        # Glewlwyd's aud is one string: the resource indicator of the token request, else its
        # scope list. A list is taken too (RFC 7662 allows both).
        aud = answer.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if self.audience not in audiences:
            print("resource-server: a token for another audience refused", file=sys.stderr)
            return None
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id", "")),
            scopes=str(answer.get("scope", "")).split(),
            expires_at=exp if isinstance(exp, int) else None,
            resource=self.audience,
            subject=answer.get("sub"),
        )


class ToolScopes:
    """The per-tool scope check the SDK lacks: a `tools/call` of a tool in TOOL_SCOPES by a
    token without its scopes gets 403 with `error="insufficient_scope"`, the scopes it needs
    and the metadata URL. Runs after the SDK's authentication (it wraps the MCP route)."""

    def __init__(self, app, metadata_url: str):
        self.app, self.metadata_url = app, metadata_url

    async def __call__(self, scope, receive, send):
        user = scope.get("user")
        if scope["type"] != "http" or scope.get("method") != "POST" or not getattr(user, "is_authenticated", False):
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            call = json.loads(body)
        except ValueError:
            call = None
        if isinstance(call, dict) and call.get("method") == "tools/call":
            needed = TOOL_SCOPES.get((call.get("params") or {}).get("name"), [])
            held = set(scope["auth"].scopes)
            if not set(needed) <= held:
                challenge = (
                    f'Bearer error="insufficient_scope", scope="{" ".join(needed)}", '
                    f'resource_metadata="{self.metadata_url}"'
                )
                payload = json.dumps({"error": "insufficient_scope"}).encode()
                await send({"type": "http.response.start", "status": 403, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                    (b"www-authenticate", challenge.encode())]})
                await send({"type": "http.response.body", "body": payload})
                return
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def main() -> None:
    env = os.environ
    issuer = env["MCP_RS_ISSUER"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    url = base + "/mcp"

    audience = env.get("MCP_RS_AUDIENCE") or url
    server = MCPServer(
        "orders",
        token_verifier=GlewlwydIntrospection(
            env["MCP_RS_INTROSPECTION_URL"], env["MCP_RS_INTROSPECTION_ID"], env["MCP_RS_INTROSPECTION_SECRET"],
            audience),
        auth=AuthSettings(
            issuer_url=issuer, resource_server_url=url, required_scopes=REQUIRED,
            # The verifier checks the audience (Glewlwyd's aud, see above); bound to the
            # server's URL, the SDK checks the resource the verifier reports as well.
            validate_token_resource=audience == url),
    )

    @server.tool()
    def list_orders() -> str:
        """The orders (scope read)."""
        return "orders: 1, 2, 3"

    @server.tool()
    def profile() -> str:
        """The caller's profile (scopes read and g_profile)."""
        return "profile: alice"

    app = server.streamable_http_app(json_response=True)
    metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
    for route in app.routes:
        if getattr(route, "path", None) == "/mcp":
            route.app = ToolScopes(route.app, metadata_url)

    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    uvicorn_server = uvicorn.Server(config)

    async def serve():
        task = asyncio.create_task(uvicorn_server.serve(sockets=[sock]))
        while not uvicorn_server.started:
            if task.done():
                await task
                return
            await asyncio.sleep(0.05)
        print(f"LISTENING {url}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
