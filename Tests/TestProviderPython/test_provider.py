#!/usr/bin/env python3
"""The swift-oauth2 test provider, checked by an independent client.

Nothing here comes from the Swift library: HTTP is urllib, PKCE and client authentication
are written out below from the RFCs, and ID tokens are verified by PyJWT against the
provider's JWK set. Run by scripts/test-provider against `oauth2-test-provider`
(demo configuration):

    test_provider.py --issuer http://127.0.0.1:PORT --algorithm RS256

Prints one line per check and a last line `RESULT passed=N failed=M`; exits 1 if any check
failed. Never prints a token, code or secret.
"""

import argparse
import base64
import hashlib
import json
import secrets
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

import jwt
from jwt import PyJWKClient

# The demo identities (OAuth2Testing, TestProvider+Demo.swift). Published, not secrets.
PUBLIC_ID = "oauth2-demo"
CONFIDENTIAL_ID = "oauth2-demo-confidential"
CONFIDENTIAL_SECRET = "oauth2-demo-secret"
USERNAME, PASSWORD, SUBJECT = "demo", "demo-password", "demo-user-0001"
REDIRECT_URI = "http://127.0.0.1:8765/callback"  # registered without a port: any port (RFC 8252 §7.3)
POST_LOGOUT_URI = "http://127.0.0.1:8765/logged-out"

HASHES = {"256": hashlib.sha256, "384": hashlib.sha384, "512": hashlib.sha512}


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirects)


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def summary(self):
        """Status and OAuth error code: what a failure message may show (never a token)."""
        try:
            error = self.json().get("error")
        except (ValueError, AttributeError):
            error = None
        return f"{self.status}" + (f" {error}" if error else "")

    def location_query(self):
        location = self.headers.get("Location")
        expect(location is not None, f"expected a redirect, got {self.status}")
        parsed = urllib.parse.urlsplit(location)
        return parsed, dict(urllib.parse.parse_qsl(parsed.query))


def http(method, url, form=None, headers=None):
    data = urllib.parse.urlencode(form).encode("ascii") if form is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with OPENER.open(request, timeout=30) as response:
            return Response(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:  # 3xx (not followed), 4xx, 5xx
        return Response(error.code, error.headers, error.read())


def basic(client_id, secret):
    # RFC 6749 §2.3.1: form-encode id and secret, join with ':', base64.
    raw = urllib.parse.quote_plus(client_id) + ":" + urllib.parse.quote_plus(secret)
    return {"Authorization": "Basic " + base64.b64encode(raw.encode("utf-8")).decode("ascii")}


class Provider:
    def __init__(self, issuer, algorithm):
        self.issuer, self.algorithm = issuer, algorithm
        self.meta = http("GET", issuer + "/.well-known/openid-configuration").json()
        self.jwks = PyJWKClient(self.meta["jwks_uri"], cache_keys=False, cache_jwk_set=False)

    # -- front channel -------------------------------------------------------------------
    def authorize(self, client_id=PUBLIC_ID, redirect_uri=REDIRECT_URI, scope="openid profile email offline_access",
                  pkce=True, method="S256"):
        verifier = b64url(secrets.token_bytes(32))
        state, nonce = b64url(secrets.token_bytes(16)), b64url(secrets.token_bytes(16))
        params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": scope,
                  "state": state, "nonce": nonce}
        if pkce:
            challenge = b64url(hashlib.sha256(verifier.encode("ascii")).digest()) if method == "S256" else verifier
            params.update(code_challenge=challenge, code_challenge_method=method)
        response = http("GET", self.meta["authorization_endpoint"] + "?" + urllib.parse.urlencode(params))
        return response, {"verifier": verifier, "state": state, "nonce": nonce, "redirect_uri": redirect_uri,
                          "client_id": client_id}

    def code(self, **kwargs):
        response, flow = self.authorize(**kwargs)
        expect(response.status == 302, f"authorization answered {response.status}")
        _, query = response.location_query()
        expect(query.get("state") == flow["state"], "state not echoed")
        expect(query.get("iss") == self.issuer, "iss missing or wrong in the authorization response (RFC 9207)")
        expect("code" in query, f"no code in the authorization response: {query.get('error')}")
        flow["code"] = query["code"]
        return flow

    # -- back channel --------------------------------------------------------------------
    def token(self, form, client=(PUBLIC_ID, None), method="basic"):
        client_id, secret = client
        headers = {}
        form = dict(form)
        if secret is None:
            form["client_id"] = client_id
        elif method == "basic":
            headers.update(basic(client_id, secret))
        else:
            form.update(client_id=client_id, client_secret=secret)
        return http("POST", self.meta["token_endpoint"], form=form, headers=headers)

    def exchange(self, flow, verifier=None, redirect_uri=None, client=None, method="basic"):
        form = {"grant_type": "authorization_code", "code": flow["code"],
                "redirect_uri": redirect_uri or flow["redirect_uri"], "code_verifier": verifier or flow["verifier"]}
        return self.token(form, client or (flow["client_id"], None), method)

    def introspect(self, token):
        return http("POST", self.meta["introspection_endpoint"], form={"token": token},
                    headers=basic(CONFIDENTIAL_ID, CONFIDENTIAL_SECRET)).json()

    # -- ID tokens -----------------------------------------------------------------------
    def verify_id_token(self, id_token, client_id, nonce=None, access_token=None):
        header = jwt.get_unverified_header(id_token)
        expect(header.get("alg") == self.algorithm, f"ID token alg {header.get('alg')}, expected {self.algorithm}")
        key = self.jwks.get_signing_key_from_jwt(id_token)  # by kid, from the JWK set
        claims = jwt.decode(id_token, key.key, algorithms=[self.algorithm], audience=client_id, issuer=self.issuer,
                            options={"require": ["iss", "sub", "aud", "exp", "iat"]})
        expect(claims["sub"] == SUBJECT, "wrong sub")
        expect(isinstance(claims.get("auth_time"), int), "auth_time missing")
        if nonce is not None:
            expect(claims.get("nonce") == nonce, "nonce missing or wrong")
        if access_token is not None:
            digest = (hashlib.sha512 if self.algorithm == "EdDSA" else HASHES[self.algorithm[-3:]])(access_token.encode("ascii")).digest()
            expect(claims.get("at_hash") == b64url(digest[: len(digest) // 2]), "at_hash does not match the access token")
        return claims


# ---------------------------------------------------------------------------------------
# Checks. Each raises on failure.

def check_discovery(p):
    meta = p.meta
    expect(meta["issuer"] == p.issuer, "issuer differs from the URL it was fetched for")
    for name in ["authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint", "revocation_endpoint",
                 "introspection_endpoint", "device_authorization_endpoint", "end_session_endpoint"]:
        expect(meta.get(name, "").startswith(p.issuer + "/"), f"{name} missing")
    expect(meta["code_challenge_methods_supported"] == ["S256"], "S256 only")
    expect(meta["authorization_response_iss_parameter_supported"] is True, "iss parameter not advertised")
    expect(meta["id_token_signing_alg_values_supported"] == [p.algorithm], "advertised algorithm")
    oauth = http("GET", p.issuer + "/.well-known/oauth-authorization-server").json()
    expect(oauth["issuer"] == p.issuer, "RFC 8414 document names another issuer")
    keys = http("GET", meta["jwks_uri"]).json()["keys"]
    expect(len(keys) >= 1 and all("d" not in k and "p" not in k for k in keys), "JWK set empty or has private members")


def check_code_flow_public(p):
    flow = p.code()
    response = p.exchange(flow)
    expect(response.status == 200, f"token endpoint answered {response.status}")
    expect(response.headers.get("Cache-Control") == "no-store", "token response is cacheable")
    body = response.json()
    expect(body["token_type"] == "Bearer" and body["expires_in"] > 0 and "refresh_token" in body, "token response members")
    p.verify_id_token(body["id_token"], PUBLIC_ID, nonce=flow["nonce"], access_token=body["access_token"])


def check_code_flow_confidential(p):
    for method in ["basic", "post"]:
        flow = p.code(client_id=CONFIDENTIAL_ID)
        response = p.exchange(flow, client=(CONFIDENTIAL_ID, CONFIDENTIAL_SECRET), method=method)
        expect(response.status == 200, f"client_secret_{method}: token endpoint answered {response.status}")
        body = response.json()
        p.verify_id_token(body["id_token"], CONFIDENTIAL_ID, nonce=flow["nonce"], access_token=body["access_token"])


def check_tampered_id_token_fails(p):
    flow = p.code()
    id_token = p.exchange(flow).json()["id_token"]
    header, payload, signature = id_token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "someone-else"
    forged = ".".join([header, b64url(json.dumps(claims).encode()), signature])
    try:
        p.verify_id_token(forged, PUBLIC_ID)
    except jwt.InvalidSignatureError:
        return
    raise CheckFailed("a tampered ID token verified")


def check_wrong_code_verifier(p):
    flow = p.code()
    response = p.exchange(flow, verifier=b64url(secrets.token_bytes(32)))
    expect(response.status == 400 and response.json()["error"] == "invalid_grant",
           f"wrong code_verifier: {response.summary()}")
    # The code is spent by the failed attempt.
    expect(p.exchange(flow).status == 400, "the code still worked after a wrong verifier")


def check_missing_pkce(p):
    for kwargs in [{"pkce": False}, {"method": "plain"}]:
        response, flow = p.authorize(**kwargs)
        expect(response.status == 302, f"authorization answered {response.status}")
        _, query = response.location_query()
        expect(query.get("error") == "invalid_request" and "code" not in query, f"{kwargs}: got {query.get('error')}")
        expect(query.get("state") == flow["state"], "state not echoed with the error")


def check_reused_code(p):
    flow = p.code()
    first = p.exchange(flow)
    expect(first.status == 200, f"first exchange answered {first.status}")
    access_token = first.json()["access_token"]
    expect(p.introspect(access_token)["active"] is True, "fresh access token inactive")
    second = p.exchange(flow)
    expect(second.status == 400 and second.json()["error"] == "invalid_grant", f"reused code: {second.summary()}")
    expect(p.introspect(access_token)["active"] is False, "tokens of a reused code were not revoked")


def check_wrong_redirect_uri(p):
    for uri in ["http://127.0.0.1:8765/elsewhere", "http://localhost:8765/callback", "https://evil.example/callback"]:
        response, _ = p.authorize(redirect_uri=uri)
        expect(response.status == 400, f"{uri}: authorization answered {response.status}")
        expect(response.headers.get("Location") is None, f"{uri}: redirected to an unregistered URI")
    flow = p.code()
    response = p.exchange(flow, redirect_uri="http://127.0.0.1:9999/callback")
    expect(response.status == 400 and response.json()["error"] == "invalid_grant",
           f"token endpoint accepted another redirect_uri: {response.status}")


def check_wrong_client_secret(p):
    form = {"grant_type": "client_credentials"}
    for method in ["basic", "post"]:
        response = p.token(form, client=(CONFIDENTIAL_ID, "not-the-secret"), method=method)
        expect(response.status == 401 and response.json()["error"] == "invalid_client",
               f"client_secret_{method} with a wrong secret: {response.summary()}")
        if method == "basic":
            expect(response.headers.get("WWW-Authenticate", "").startswith("Basic"), "no Basic challenge with the 401")
        good = p.token(form, client=(CONFIDENTIAL_ID, CONFIDENTIAL_SECRET), method=method)
        expect(good.status == 200, f"client_secret_{method} with the right secret: {good.status}")
    # A wrong secret at the code exchange, too.
    flow = p.code(client_id=CONFIDENTIAL_ID)
    response = p.exchange(flow, client=(CONFIDENTIAL_ID, "wrong"))
    expect(response.status == 401, f"code exchange with a wrong secret: {response.status}")
    # A confidential client that sends no secret at all.
    response = p.token(form, client=(CONFIDENTIAL_ID, None))
    expect(response.status == 401, f"confidential client without secret: {response.status}")


def check_refresh_rotation(p):
    flow = p.code()
    tokens = p.exchange(flow).json()
    refreshed = p.token({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]})
    expect(refreshed.status == 200, f"refresh answered {refreshed.status}")
    new = refreshed.json()
    expect(new["refresh_token"] != tokens["refresh_token"], "refresh token not rotated")
    p.verify_id_token(new["id_token"], PUBLIC_ID, access_token=new["access_token"])
    reuse = p.token({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]})
    expect(reuse.status == 400 and reuse.json()["error"] == "invalid_grant", f"old refresh token reused: {reuse.status}")
    expect(p.introspect(new["refresh_token"])["active"] is False, "reuse did not revoke the grant")


def check_password_and_client_credentials(p):
    client = (CONFIDENTIAL_ID, CONFIDENTIAL_SECRET)
    wrong = p.token({"grant_type": "password", "username": USERNAME, "password": "wrong", "scope": "openid"}, client)
    expect(wrong.status == 400 and wrong.json()["error"] == "invalid_grant", f"wrong password: {wrong.status}")
    right = p.token({"grant_type": "password", "username": USERNAME, "password": PASSWORD, "scope": "openid"}, client)
    expect(right.status == 200, f"password grant: {right.status}")
    body = right.json()
    p.verify_id_token(body["id_token"], CONFIDENTIAL_ID, access_token=body["access_token"])
    cc = p.token({"grant_type": "client_credentials", "scope": "api"}, client).json()
    expect(cc.get("scope") == "api" and "refresh_token" not in cc and "id_token" not in cc, "client credentials response")
    public = p.token({"grant_type": "client_credentials"})
    expect(public.status == 400 and public.json()["error"] == "unauthorized_client", "public client got client credentials")


def check_userinfo(p):
    tokens = p.exchange(p.code()).json()
    url = p.meta["userinfo_endpoint"]
    ok = http("GET", url, headers={"Authorization": "Bearer " + tokens["access_token"]})
    expect(ok.status == 200 and ok.json()["sub"] == SUBJECT, f"userinfo: {ok.status}")
    expect(ok.json().get("email") == "demo@example.com", "email claim missing with the email scope")
    in_query = http("GET", url + "?" + urllib.parse.urlencode({"access_token": tokens["access_token"]}))
    expect(in_query.status == 400, f"token in the query accepted: {in_query.status}")
    bad = http("GET", url, headers={"Authorization": "Bearer nope"})
    expect(bad.status == 401 and 'error="invalid_token"' in bad.headers.get("WWW-Authenticate", ""), "bad token")


def check_revocation(p):
    tokens = p.exchange(p.code()).json()
    response = http("POST", p.meta["revocation_endpoint"],
                    form={"token": tokens["refresh_token"], "token_type_hint": "refresh_token", "client_id": PUBLIC_ID})
    expect(response.status == 200, f"revocation answered {response.status}")
    expect(p.introspect(tokens["refresh_token"])["active"] is False, "refresh token still active")
    expect(p.introspect(tokens["access_token"])["active"] is False, "access token of the revoked grant still active")


def check_device_flow(p):
    response = http("POST", p.meta["device_authorization_endpoint"], form={"client_id": PUBLIC_ID, "scope": "openid profile"})
    expect(response.status == 200, f"device authorization answered {response.status}")
    device = response.json()
    poll = {"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": device["device_code"]}
    pending = p.token(poll)
    expect(pending.status == 400 and pending.json()["error"] == "authorization_pending", "not pending before approval")
    page = http("GET", device["verification_uri_complete"])
    expect(page.status == 200, f"verification page answered {page.status}")
    time.sleep(device["interval"])
    done = p.token(poll)
    expect(done.status == 200, f"poll after approval: {done.summary()}")
    body = done.json()
    p.verify_id_token(body["id_token"], PUBLIC_ID, access_token=body["access_token"])
    again = p.token(poll)
    expect(again.status == 400 and again.json()["error"] == "invalid_grant", "device code worked twice")


def check_end_session(p):
    flow = p.code()
    id_token = p.exchange(flow).json()["id_token"]
    url = p.meta["end_session_endpoint"]
    params = {"id_token_hint": id_token, "post_logout_redirect_uri": POST_LOGOUT_URI, "state": "bye-123"}
    ok = http("GET", url + "?" + urllib.parse.urlencode(params))
    expect(ok.status == 302, f"end session answered {ok.status}")
    parsed, query = ok.location_query()
    expect(parsed.path == "/logged-out" and query.get("state") == "bye-123", "post-logout redirect or state")
    params["post_logout_redirect_uri"] = "http://127.0.0.1:8765/unregistered"
    bad = http("GET", url + "?" + urllib.parse.urlencode(params))
    expect(bad.status == 400 and bad.headers.get("Location") is None, f"unregistered post-logout URI: {bad.status}")


CHECKS = [
    check_discovery, check_code_flow_public, check_code_flow_confidential, check_tampered_id_token_fails,
    check_wrong_code_verifier, check_missing_pkce, check_reused_code, check_wrong_redirect_uri,
    check_wrong_client_secret, check_refresh_rotation, check_password_and_client_credentials, check_userinfo,
    check_revocation, check_device_flow, check_end_session,
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--algorithm", default="RS256")
    args = parser.parse_args()
    provider = Provider(args.issuer.rstrip("/"), args.algorithm)
    passed = failed = 0
    for check in CHECKS:
        name = check.__name__.removeprefix("check_")
        try:
            check(provider)
            passed += 1
            print(f"ok   {args.algorithm} {name}")
        except CheckFailed as error:
            failed += 1
            print(f"FAIL {args.algorithm} {name}: {error}")
        except Exception as error:  # noqa: BLE001 -- report any crash as a failed check
            failed += 1
            print(f"FAIL {args.algorithm} {name}: {type(error).__name__}: {error}")
            traceback.print_exc(limit=3, file=sys.stderr)
        sys.stdout.flush()
    print(f"RESULT passed={passed} failed={failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
