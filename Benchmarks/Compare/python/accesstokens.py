"""Access-token validation (RFC 9068 JWTs at a resource server), Python side of scripts/bench-compare.

    accesstokens.py make PREFIX [N]       write PREFIX-ES256.json and PREFIX-RS256.json: N tokens
                                          each (default 2000), new keys, one JWK set for both
    accesstokens.py pyjwt FILE COUNT      validate COUNT tokens with PyJWT

The JWK set holds three keys (kids es-0, es-1, rs-1); ES256 tokens are signed with es-1,
RS256 tokens with rs-1. Each token: header typ at+jwt and kid; claims iss, sub, aud, exp
(a day), iat, nbf, jti, client_id, scope "read write", auth_time. Every contender does the
same checks on each token: signature with the set's key named by kid, typ at+jwt, alg in the
allow-list (the file's one), iss, aud, exp/nbf/iat with 60 s of leeway, sub, jti and
client_id present, scope granting "read"; each iteration takes the next token (nothing
cached by token string). Prints "<count> <seconds> <CPU seconds>" (the process's user and
system time) after a warm-up of 100 validations.
"""
import json
import sys
import time
import uuid

ISSUER, AUDIENCE, LEEWAY = "https://as.example", "https://api.example", 60


def make(prefix, n):
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    old = ec.generate_private_key(ec.SECP256R1())
    signing = {"ES256": ("es-1", ec.generate_private_key(ec.SECP256R1())),
               "RS256": ("rs-1", rsa.generate_private_key(public_exponent=65537, key_size=2048))}
    keys = []
    for kid, key, alg in [("es-0", old, "ES256"), (signing["ES256"][0], signing["ES256"][1], "ES256"),
                          (signing["RS256"][0], signing["RS256"][1], "RS256")]:
        to_jwk = ECAlgorithm.to_jwk if alg == "ES256" else RSAAlgorithm.to_jwk
        jwk = json.loads(to_jwk(key.public_key()))
        jwk.update(kid=kid, alg=alg, use="sig")
        keys.append(jwk)
    now = int(time.time())
    for alg, (kid, key) in signing.items():
        tokens = []
        for i in range(n):
            claims = {"iss": ISSUER, "sub": "user-%d" % i, "aud": AUDIENCE, "exp": now + 86400, "iat": now, "nbf": now - 5,
                      "jti": str(uuid.uuid4()), "client_id": "client-%d" % (i % 10), "scope": "read write",
                      "auth_time": now - 10}
            tokens.append(jwt.encode(claims, key, algorithm=alg, headers={"kid": kid, "typ": "at+jwt"}))
        pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        with open("%s-%s.json" % (prefix, alg), "w") as f:
            json.dump({"issuer": ISSUER, "audience": AUDIENCE, "alg": alg, "jwks": {"keys": keys}, "public_pem": pem,
                       "tokens": tokens}, f)


def pyjwt_validator(fixture):
    import jwt
    alg = fixture["alg"]
    keys = {k.key_id: k.key for k in jwt.PyJWKSet.from_dict(fixture["jwks"]).keys}
    decoder = jwt.PyJWT()

    def validate(token):
        header = jwt.get_unverified_header(token)
        if header.get("typ", "").lower() not in ("at+jwt", "application/at+jwt"):
            raise SystemExit("typ is not at+jwt")
        key = keys[header["kid"]]
        claims = decoder.decode(token, key, algorithms=[alg], audience=AUDIENCE, issuer=ISSUER, leeway=LEEWAY,
                                options={"require": ["exp", "iat", "iss", "aud", "sub", "jti"]})
        if not claims.get("client_id") or "read" not in claims.get("scope", "").split():
            raise SystemExit("client_id or scope")
        return claims["sub"]
    return validate


def main():
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2000)
        return
    with open(sys.argv[2]) as f:
        fixture = json.load(f)
    count, tokens = int(sys.argv[3]), fixture["tokens"]
    validate = pyjwt_validator(fixture)
    for token in tokens[:100]:
        validate(token)
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(count):
        validate(tokens[i % len(tokens)])
    print(count, "%.6f" % (time.perf_counter() - start), "%.6f" % (time.process_time() - cpu_start))


main()
