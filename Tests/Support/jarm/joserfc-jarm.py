"""JWT-secured authorization responses (JARM) made by an independent implementation (Python
joserfc), for Tests/OAuth2Tests/Authorization/IndependentJARMTests.swift.

Reads one JSON object on stdin:
  {"keys": {NAME: private JWK, ...},          signing keys of the test's provider (and a stranger's)
   "encryption": {NAME: public JWK, ...},     the client's encryption keys
   "cases": [{"name": ..., "claims": {...},   one response per case: the claims,
              "key": NAME, "alg": "RS256",    signed by this key with this algorithm,
              "encrypt": [alg, enc, NAME],    then (optionally) encrypted to this key,
              "forge": "none" | "hs256-public" | "tamper"}, ...]}   or forged one of three ways
Writes {"made": {name: compact, ...}}.
"""
import base64
import hashlib
import hmac
import json
import sys

from joserfc import jwe, jwt
from joserfc.jwk import import_key

SIGNING = ["RS256", "ES256", "PS256"]
ENCRYPTION = ["RSA-OAEP-256", "ECDH-ES+A128KW", "A256GCM", "A128CBC-HS256"]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def compact_json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


request = json.load(sys.stdin)
keys = {name: import_key(jwk) for name, jwk in request["keys"].items()}
encryption = {name: import_key(jwk) for name, jwk in request["encryption"].items()}
made = {}
for case in request["cases"]:
    key_name, alg, claims, forge = case["key"], case["alg"], case["claims"], case.get("forge")
    kid = request["keys"][key_name].get("kid")
    header = {"alg": alg}
    if kid:
        header["kid"] = kid
    if forge == "none":
        # An unsecured JWT (RFC 7519 §6): no signature at all.
        token = b64(compact_json({"alg": "none"})) + "." + b64(compact_json(claims)) + "."
    elif forge == "hs256-public":
        # The algorithm-confusion attack: HS256 keyed with the provider's public key (PEM).
        public_pem = keys[key_name].as_pem(private=False)
        signing_input = b64(compact_json({"alg": "HS256", "kid": kid})) + "." + b64(compact_json(claims))
        signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
        token = signing_input + "." + b64(signature)
    else:
        token = jwt.encode(header, claims, keys[key_name], algorithms=SIGNING)
        if forge == "tamper":
            # The payload swapped for another after signing: the code changed.
            changed = dict(claims, code=claims["code"] + "-tampered")
            head, _, signature = token.split(".")
            token = head + "." + b64(compact_json(changed)) + "." + signature
    if case.get("encrypt"):
        enc_alg, enc, enc_name = case["encrypt"]
        enc_header = {"alg": enc_alg, "enc": enc, "cty": "JWT"}
        enc_kid = request["encryption"][enc_name].get("kid")
        if enc_kid:
            enc_header["kid"] = enc_kid
        token = jwe.encrypt_compact(enc_header, token, encryption[enc_name], algorithms=ENCRYPTION)
    made[case["name"]] = token
json.dump({"made": made}, sys.stdout)
