"""Python authlib contender of scripts/bench-compare: client_credentials grants.

    grants_authlib.py TOKEN_URL CLIENT_ID CLIENT_SECRET SCOPE COUNT IN_FLIGHT

authlib's requests integration (OAuth2Session.fetch_token, client_secret_basic), one
session (one keep-alive connection pool) per worker thread. Prints "<count> <seconds>"
after a warm-up of 50 grants; exits 1 on any failure.
"""
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from authlib.integrations.requests_client import OAuth2Session

url, client_id, secret, scope, count, in_flight = sys.argv[1:7]
count, in_flight = int(count), max(1, int(in_flight))
local = threading.local()


def session():
    if not hasattr(local, "session"):
        local.session = OAuth2Session(client_id, secret, scope=scope or None, token_endpoint_auth_method="client_secret_basic")
    return local.session


def grant(_=None):
    token = session().fetch_token(url, grant_type="client_credentials")
    if not token.get("access_token"):
        raise SystemExit("no access token")


def run(n):
    if in_flight == 1:
        for _ in range(n):
            grant()
    else:
        with ThreadPoolExecutor(in_flight) as pool:
            list(pool.map(grant, range(n)))


run(50)
start = time.perf_counter()
run(count)
print(count, "%.6f" % (time.perf_counter() - start))
