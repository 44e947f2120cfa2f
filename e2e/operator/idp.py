#!/usr/bin/env python3
"""An identity provider played by openssl for the operator's oauth listeners (the same one
e2e/security/oauth_jwks.py is for the broker alone): RSA keys, their JSON Web Key Set, and
RS256 tokens.

usage: idp.py init DIR NAME...                 a key per NAME (kid = NAME); DIR/jwks.json
                                               lists the first one only
       idp.py token DIR NAME SUBJECT [AUDIENCE]  prints a token of NAME's key for SUBJECT"""
import json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "security"))
from oauth_jwks import Issuer, write_jwks  # noqa: E402


def main():
    command, directory = sys.argv[1], sys.argv[2]
    if command == "init":
        os.makedirs(directory, exist_ok=True)
        issuers = [Issuer(directory, name, name) for name in sys.argv[3:]]
        for issuer in issuers:
            with open(os.path.join(directory, issuer.kid + ".issuer"), "w") as out:
                json.dump({"kid": issuer.kid, "key": issuer.key, "jwk": issuer.jwk}, out)
        write_jwks(os.path.join(directory, "jwks.json"), issuers[0])
    elif command == "token":
        name, subject = sys.argv[3], sys.argv[4]
        audience = sys.argv[5] if len(sys.argv) > 5 else "oxbow"
        with open(os.path.join(directory, name + ".issuer")) as source:
            saved = json.load(source)
        issuer = Issuer.__new__(Issuer)   # the key made by `init`, not a new one
        issuer.kid, issuer.key, issuer.jwk = saved["kid"], saved["key"], saved["jwk"]
        print(issuer.token(subject, audience=audience))
    else:
        raise SystemExit(__doc__)


main()
