#!/usr/bin/env python3
"""make-proofs.py: DPoP proofs (RFC 9449) made by an independent implementation, Python
joserfc, for OAuth2Web's verifier to accept or refuse.

    make-proofs.py --url URL --method METHOD --access-token TOKEN --nonce NONCE --now EPOCH

Prints one JSON object: "jkt" (the RFC 7638 thumbprint of the proofs' key, computed by
joserfc: what a token bound to it carries as cnf.jkt), "otherJkt" (another key's), and
"proofs", each a compact JWS signed by joserfc:
  valid          every claim right: htm, htu, iat = now, jti, ath, nonce
  valid2         another valid proof (its own jti), for a second request
  otherURL       htu of another path          otherMethod   htm POST instead of METHOD
  tooOld         iat 10 minutes ago           future        iat 10 minutes ahead
  withoutNonce   no nonce                     wrongNonce    a nonce the server never gave
  wrongAth       ath of another token         withoutAth    no ath
  wrongType      typ JWT                      withoutJti    no jti
  symmetric      HS256 with the JWK an oct key (a proof must be signed with a private key)
  otherKey       valid, but signed by another key (the token is bound to "jkt")
  privateJWK     the header's jwk includes the private part "d"
"""
import argparse
import base64
import hashlib
import json
import secrets
import sys

from joserfc import jws
from joserfc.jwk import ECKey, OctKey


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def proof(key, claims, alg="ES256", typ="dpop+jwt", jwk=None):
    header = {"typ": typ, "alg": alg, "jwk": jwk if jwk is not None else key.as_dict(private=False)}
    return jws.serialize_compact(header, json.dumps(claims).encode(), key, algorithms=[alg])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--access-token", required=True)
    parser.add_argument("--nonce", required=True)
    parser.add_argument("--now", type=int, required=True)
    args = parser.parse_args()

    key = ECKey.generate_key("P-256")
    other = ECKey.generate_key("P-256")
    ath = b64url(hashlib.sha256(args.access_token.encode()).digest())

    def claims(**changes):
        base = {"htm": args.method, "htu": args.url, "iat": args.now, "jti": secrets.token_urlsafe(16),
                "ath": ath, "nonce": args.nonce}
        base.update(changes)
        return {k: v for k, v in base.items() if v is not None}

    symmetric = OctKey.generate_key(256)
    public = key.as_dict(private=False)
    private = key.as_dict(private=True)
    proofs = {
        "valid": proof(key, claims()),
        "valid2": proof(key, claims()),
        "otherURL": proof(key, claims(htu=args.url.rstrip("/") + "/other")),
        "otherMethod": proof(key, claims(htm="POST" if args.method != "POST" else "PUT")),
        "tooOld": proof(key, claims(iat=args.now - 600)),
        "future": proof(key, claims(iat=args.now + 600)),
        "withoutNonce": proof(key, claims(nonce=None)),
        "wrongNonce": proof(key, claims(nonce="not-a-server-nonce")),
        "wrongAth": proof(key, claims(ath=b64url(hashlib.sha256(b"another token").digest()))),
        "withoutAth": proof(key, claims(ath=None)),
        "wrongType": proof(key, claims(), typ="JWT"),
        "withoutJti": proof(key, claims(jti=None)),
        "symmetric": proof(symmetric, claims(), alg="HS256", jwk=symmetric.as_dict(private=False)),
        "otherKey": proof(other, claims()),
        "privateJWK": proof(key, claims(), jwk=private),
    }
    assert "d" not in public
    json.dump({"jkt": key.thumbprint(), "otherJkt": other.thumbprint(), "proofs": proofs}, sys.stdout)


if __name__ == "__main__":
    main()
