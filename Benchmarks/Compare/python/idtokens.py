"""ID-token validation, Python side of scripts/bench-compare.

    idtokens.py make FILE ALG [N]      write N tokens (default 2000) signed with a new key
    idtokens.py joserfc FILE COUNT     validate COUNT tokens with authlib's joserfc
    idtokens.py pyjwt FILE COUNT       validate COUNT tokens with PyJWT

Every contender does the same checks on each token: signature with the JWK in hand, iss,
aud, exp, iat, nonce and at_hash; each iteration takes the next token (nothing cached by
token string). Prints "<count> <seconds>" after a warm-up of 100 validations.
"""
import base64
import hashlib
import json
import sys
import time
import uuid

ISSUER, CLIENT_ID = "https://op.example", "bench-client"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def at_hash(access_token):
    return b64url(hashlib.sha256(access_token.encode()).digest()[:16])


def make(path, alg, n):
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    if alg == "ES256":
        key = ec.generate_private_key(ec.SECP256R1())
        jwk = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="k1", alg=alg, use="sig")
    now = int(time.time())
    tokens = []
    for i in range(n):
        nonce, access = "nonce-%d-%s" % (i, uuid.uuid4()), "at-%d-%s" % (i, uuid.uuid4())
        claims = {"iss": ISSUER, "sub": "user-%d" % i, "aud": CLIENT_ID, "exp": now + 86400, "iat": now,
                  "auth_time": now - 10, "nonce": nonce, "at_hash": at_hash(access), "jti": str(uuid.uuid4()),
                  "name": "Benchmark User", "email": "user@example.com", "email_verified": True}
        tokens.append({"id_token": jwt.encode(claims, key, algorithm=alg, headers={"kid": "k1", "typ": "JWT"}),
                       "nonce": nonce, "access_token": access})
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    with open(path, "w") as f:
        json.dump({"issuer": ISSUER, "client_id": CLIENT_ID, "alg": alg, "jwks": {"keys": [jwk]},
                   "public_pem": pem, "tokens": tokens}, f)


def check_common(claims, token):
    if claims["nonce"] != token["nonce"] or claims["at_hash"] != at_hash(token["access_token"]):
        raise SystemExit("nonce or at_hash mismatch")


def validator(kind, fixture):
    alg, jwk = fixture["alg"], fixture["jwks"]["keys"][0]
    if kind == "joserfc":
        from joserfc import jwt
        from joserfc.jwk import KeySet
        from joserfc.jwt import JWTClaimsRegistry

        keys = KeySet.import_key_set(fixture["jwks"])

        def validate(token):
            decoded = jwt.decode(token["id_token"], keys, algorithms=[alg])
            registry = JWTClaimsRegistry(iss={"essential": True, "value": ISSUER}, aud={"essential": True, "value": CLIENT_ID},
                                         exp={"essential": True}, iat={"essential": True}, sub={"essential": True})
            registry.validate(decoded.claims)
            check_common(decoded.claims, token)
        return validate
    import jwt
    key = jwt.PyJWK(jwk).key

    def validate(token):
        claims = jwt.decode(token["id_token"], key, algorithms=[alg], audience=CLIENT_ID, issuer=ISSUER,
                            options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        check_common(claims, token)
    return validate


def main():
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 2000)
        return
    with open(sys.argv[2]) as f:
        fixture = json.load(f)
    count, tokens = int(sys.argv[3]), fixture["tokens"]
    validate = validator(sys.argv[1], fixture)
    for token in tokens[:100]:
        validate(token)
    start = time.perf_counter()
    for i in range(count):
        validate(tokens[i % len(tokens)])
    print(count, "%.6f" % (time.perf_counter() - start))


main()
