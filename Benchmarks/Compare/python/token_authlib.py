"""The Python authlib equivalent of `oauth2 token`, for scripts/bench-compare's whole-process
comparison: read the stored token set, print the access token if it is still valid for 60 s,
else refresh it with authlib (saving the rotated refresh token) and print the new one.

    token_authlib.py STORE.json

STORE.json: {"token_endpoint", "client_id", "client_secret", "token": {access_token,
refresh_token, expires_at, token_type}}.
"""
import json
import os
import sys

from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc6749 import OAuth2Token

path = sys.argv[1]
with open(path) as f:
    store = json.load(f)
token = OAuth2Token(store["token"])
if token.is_expired(leeway=60):
    session = OAuth2Session(store["client_id"], store["client_secret"], token=token,
                            token_endpoint_auth_method="client_secret_basic")
    token = session.refresh_token(store["token_endpoint"], refresh_token=token["refresh_token"])
    store["token"] = dict(token)
    with open(path + ".tmp", "w") as f:
        json.dump(store, f)
    os.replace(path + ".tmp", path)
print(token["access_token"])
