#!/usr/bin/env python3
"""The MCP Python SDK's enterprise-managed authorization (SEP-990) against swift-oauth2's test
provider in both roles: one TestProvider is the organisation's identity provider, the other the
MCP server's authorization server (Tests/OAuth2TestingTests/IdentityAssertionTests.swift starts
both on ephemeral ports and runs this script).

Leg 1 (the ID token for an ID-JAG at the identity provider) is written out here with httpx2 from
the draft, as the SDK leaves it to the deployment; leg 2 is the SDK's own
IdentityAssertionOAuthProvider, which presents the ID-JAG to the authorization server with the
JWT bearer grant. The MCP server is a stand-in here: it answers 401 without a token and checks a
token by introspection at the authorization server (active, audience = its resource, scope).

    identity_assertion.py --idp ISSUER --as ISSUER

Prints one line per check and a last line `RESULT passed=N failed=M`; exits 1 if any check
failed. Never prints a token, an assertion or a secret.
"""

import argparse
import asyncio
import base64
import json
import sys
import threading
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

# The identities the Swift test registers (published test values, not secrets).
IDP_CLIENT_ID = "oauth2-demo-confidential"
IDP_CLIENT_SECRET = "oauth2-demo-secret"
USERNAME, PASSWORD, SUBJECT = "demo", "demo-password", "demo-user-0001"
AGENT_ID, AGENT_SECRET = "mcp-agent", "mcp-agent-secret"
RESOURCE_SERVER_ID, RESOURCE_SERVER_SECRET = "mcp-server", "mcp-server-secret"
SCOPE = "mcp:read"

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}".rstrip())


def post_form(url, form, basic=None):
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST")
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    if basic:
        pair = f"{urllib.parse.quote(basic[0], safe='')}:{urllib.parse.quote(basic[1], safe='')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def metadata(issuer):
    with urllib.request.urlopen(issuer + "/.well-known/oauth-authorization-server", timeout=30) as response:
        return json.loads(response.read())


class Storage:
    def __init__(self):
        self.tokens, self.client = None, None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull):
        self.client = client_info


def resource_server(as_issuer):
    """The MCP server stand-in: its resource identifier is its own URL."""
    introspection = metadata(as_issuer)["introspection_endpoint"]
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status, body, challenge=False):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if challenge:
                self.send_header("WWW-Authenticate", f'Bearer scope="{SCOPE}"')
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            authorization = self.headers.get("Authorization", "")
            seen.append(bool(authorization))
            if not authorization.startswith("Bearer "):
                return self.answer(401, {"error": "unauthorized"}, challenge=True)
            status, claims = post_form(
                introspection, {"token": authorization[7:]}, basic=(RESOURCE_SERVER_ID, RESOURCE_SERVER_SECRET))
            audiences = claims.get("aud", [])
            audiences = [audiences] if isinstance(audiences, str) else audiences
            if status != 200 or not claims.get("active") or server.resource not in audiences \
                    or SCOPE not in claims.get("scope", "").split():
                return self.answer(401, {"error": "invalid_token"}, challenge=True)
            self.answer(200, {"sub": claims.get("sub"), "client_id": claims.get("client_id")})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.resource = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    server.seen = seen
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--idp", required=True)
    parser.add_argument("--as", dest="authorization_server", required=True)
    arguments = parser.parse_args()
    idp, authorization_server = arguments.idp.rstrip("/"), arguments.authorization_server.rstrip("/")
    idp_token_endpoint = metadata(idp)["token_endpoint"]

    # The user's sign-in at the identity provider (the password grant stands in for any sign-in).
    status, answer = post_form(
        idp_token_endpoint, {"grant_type": "password", "username": USERNAME, "password": PASSWORD, "scope": "openid"},
        basic=(IDP_CLIENT_ID, IDP_CLIENT_SECRET))
    id_token = answer.get("id_token")
    check("identity provider issues an ID token", status == 200 and bool(id_token), f"status {status}")

    legs = []

    async def assertion_provider(audience, resource):
        """Leg 1: RFC 8693 token exchange of the ID token for an ID-JAG (draft §4.3)."""
        status, answer = post_form(idp_token_endpoint, {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token": id_token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": audience,
            "resource": resource,
            "scope": SCOPE,
        }, basic=(IDP_CLIENT_ID, IDP_CLIENT_SECRET))
        legs.append((audience, resource))
        check("leg 1: the identity provider answers the token exchange", status == 200, f"status {status} {answer.get('error', '')}")
        check("leg 1: issued_token_type is id-jag, token_type N_A",
              answer.get("issued_token_type") == "urn:ietf:params:oauth:token-type:id-jag" and answer.get("token_type") == "N_A")
        assertion = answer.get("access_token", "")
        header = json.loads(base64.urlsafe_b64decode(assertion.split(".")[0] + "==")) if assertion.count(".") == 2 else {}
        check("leg 1: the ID-JAG's typ is oauth-id-jag+jwt", header.get("typ") == "oauth-id-jag+jwt")
        return assertion

    server = resource_server(authorization_server)
    try:
        storage = Storage()
        provider = IdentityAssertionOAuthProvider(
            server_url=server.resource, storage=storage, client_id=AGENT_ID, client_secret=AGENT_SECRET,
            issuer=authorization_server, assertion_provider=assertion_provider, scope=SCOPE)
        async with httpx2.AsyncClient(auth=provider, timeout=30) as client:
            response = await client.get(server.resource)
            check("leg 2: the SDK's jwt-bearer grant gets a token the MCP server accepts", response.status_code == 200,
                  f"status {response.status_code}")
            body = response.json() if response.status_code == 200 else {}
            check("the token is the user's, for the agent", body.get("sub") == SUBJECT and body.get("client_id") == AGENT_ID, str(body))
            check("the ID-JAG was asked for the configured authorization server and the MCP resource",
                  legs == [(authorization_server, server.resource)], str(legs))
            tokens = await storage.get_tokens()
            check("the SDK stored the MCP token (scope mcp:read)", tokens is not None and SCOPE in (tokens.scope or "").split())
            again = await client.get(server.resource)
            check("a second call reuses the token: no new ID-JAG", again.status_code == 200 and len(legs) == 1)
            check("the MCP server saw one call without a token, then only with one", server.seen == [False, True, True], str(server.seen))
    except Exception as error:  # the SDK's errors carry the server's answer, never a token of ours
        check("the flow completes", False, f"{type(error).__name__}: {error}")
    finally:
        server.shutdown()

    print(f"RESULT passed={passed} failed={failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
