"""JWEs made and opened by an independent implementation (Python joserfc), for
Tests/OAuth2JOSETests/IndependentJWETests.swift.

Reads one JSON object on stdin:
  {"public": {NAME: public JWK, ...},      keys of ours joserfc encrypts to
   "private": {NAME: private JWK, ...},    the same keys' private halves, to open ours
   "cases": [[alg, enc, NAME], ...],       what joserfc makes, one JWE per case
   "plaintext": "...",
   "ours": [[compact, NAME], ...]}         JWEs our code made, for joserfc to open
Writes {"made": [compact, ...], "opened": [plaintext or "ERROR: ...", ...]}.
"""
import json
import sys

from joserfc import jwe
from joserfc.jwk import import_key

ALGORITHMS = ["RSA-OAEP-256", "RSA-OAEP", "ECDH-ES", "ECDH-ES+A128KW", "ECDH-ES+A192KW", "ECDH-ES+A256KW",
              "A128GCM", "A192GCM", "A256GCM", "A128CBC-HS256", "A192CBC-HS384", "A256CBC-HS512"]

request = json.load(sys.stdin)
public = {name: import_key(jwk) for name, jwk in request["public"].items()}
private = {name: import_key(jwk) for name, jwk in request["private"].items()}
made = []
for alg, enc, name in request["cases"]:
    header = {"alg": alg, "enc": enc, "cty": "JWT"}
    kid = request["public"][name].get("kid")
    if kid:
        header["kid"] = kid
    made.append(jwe.encrypt_compact(header, request["plaintext"], public[name], algorithms=ALGORITHMS))
opened = []
for compact, name in request["ours"]:
    try:
        opened.append(jwe.decrypt_compact(compact, private[name], algorithms=ALGORITHMS).plaintext.decode())
    except Exception as error:  # reported to the Swift test, which fails on it
        opened.append(f"ERROR: {type(error).__name__}: {error}")
json.dump({"made": made, "opened": opened}, sys.stdout)
