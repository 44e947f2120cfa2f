"""OAUTHBEARER with signed tokens: the broker checks each token's RS256 signature against a
JSON Web Key Set file (`sasl.oauthbearer.jwks.endpoint.url`), its audience, issuer and
expiry. Part of the SASL scenario (sasl.py calls `signed_tokens`).

The identity provider is played by openssl: an RSA key whose public half is written as a
JWKS, and tokens signed with `openssl dgst -sha256 -sign`. librdkafka hands the token over
through confluent-kafka's `oauth_cb`; the Java console consumer reads it from a file with
Kafka's own `OAuthBearerLoginCallbackHandler` (`sasl.oauthbearer.token.endpoint.url=file:`).
"""

import base64
import json
import os
import subprocess
import time

from common import KAFKA_BIN, fail, log


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Issuer:
    """An RSA signing key, its JWKS entry, and the tokens it signs."""

    def __init__(self, work, name, kid):
        self.kid = kid
        self.key = os.path.join(work, f"idp-{name}.key")
        subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                        "-out", self.key], check=True, capture_output=True)
        modulus = subprocess.run(["openssl", "rsa", "-in", self.key, "-noout", "-modulus"], check=True,
                                 capture_output=True, text=True).stdout.strip().split("=", 1)[1]
        self.jwk = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
                    "n": b64url(bytes.fromhex(modulus)), "e": b64url((65537).to_bytes(3, "big"))}

    def token(self, subject, audience="oxbow", issuer="https://idp.test", lifetime=3600, alg="RS256"):
        now = int(time.time())
        header = b64url(json.dumps({"alg": alg, "typ": "JWT", "kid": self.kid}).encode())
        claims = b64url(json.dumps({"sub": subject, "aud": audience, "iss": issuer, "iat": now,
                                    "exp": now + lifetime}).encode())
        signed = f"{header}.{claims}"
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], input=signed.encode(),
                                   check=True, capture_output=True).stdout
        return f"{signed}.{b64url(signature)}"


def write_jwks(path, *issuers):
    with open(path + ".tmp", "w") as f:
        json.dump({"keys": [issuer.jwk for issuer in issuers]}, f)
    os.replace(path + ".tmp", path)


def librdkafka_config(bootstrap, token, principal):
    """confluent-kafka with a token of our own through oauth_cb (librdkafka's token refresh
    callback): (token, expiry in seconds, principal, extensions)."""
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": lambda _config: (token, time.time() + 3600, principal, {}), "log_level": 2}


def signed_tokens(work, broker, listeners, sasl, roundtrip, authentication_error):
    jwks = os.path.join(work, "jwks.json")
    first = Issuer(work, "first", "key-1")
    write_jwks(jwks, first)
    broker.stop()
    broker.start(listeners, "sasl.enabled.mechanisms=SCRAM-SHA-256,OAUTHBEARER",
                 f"sasl.oauthbearer.jwks.endpoint.url=file://{jwks}", "sasl.oauthbearer.expected.audience=oxbow",
                 "sasl.oauthbearer.expected.issuer=https://idp.test")
    problem = roundtrip(librdkafka_config(sasl, first.token("erin"), "erin"), "sasl-jwks", 100)
    if problem:
        fail(f"librdkafka OAUTHBEARER with an RS256 token: {problem}", broker)

    token_file = os.path.join(work, "frank.jwt")
    with open(token_file, "w") as f:
        f.write(first.token("frank"))
    properties = os.path.join(work, "java-jwks.properties")
    with open(properties, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                "sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer."
                "OAuthBearerLoginCallbackHandler\n"
                f"sasl.oauthbearer.token.endpoint.url=file://{token_file}\n"
                "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;\n")
    # Kafka 4 reads token endpoints only from URLs this system property allows.
    environment = {**os.environ, "KAFKA_OPTS": f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file://{token_file}"}
    consumed = subprocess.run([os.path.join(KAFKA_BIN, "kafka-console-consumer"), "--bootstrap-server", sasl,
                               "--consumer.config", properties, "--topic", "sasl-jwks", "--from-beginning",
                               "--max-messages", "100", "--timeout-ms", "30000"],
                              capture_output=True, text=True, timeout=120, env=environment)
    if len([line for line in consumed.stdout.splitlines() if line.startswith("sasl-jwks-")]) != 100:
        fail(f"the Java console consumer with a signed token file: {consumed.stdout[-400:]} "
             f"{consumed.stderr[-800:]}", broker)
    with open(broker.log_path) as f:
        principals = {line.split("principal=")[1].split()[0] for line in f if "SASL authenticated" in line}
    if not {"User:erin", "User:frank"} <= principals:
        fail(f"signed OAUTHBEARER principals {principals}", broker)
    log("ok OAUTHBEARER with RS256 tokens checked against a JWKS file: librdkafka (oauth_cb) as User:erin wrote "
        "and read 100 records, the Java console consumer (OAuthBearerLoginCallbackHandler, token file) as "
        "User:frank read them")

    stranger = Issuer(work, "stranger", "key-1")
    unsecured = b64url(b'{"alg":"none"}') + "." + b64url(json.dumps(
        {"sub": "erin", "aud": "oxbow", "iss": "https://idp.test", "exp": int(time.time()) + 600}).encode()) + "."
    refusals = {
        "a token signed by another key with the same kid": stranger.token("erin"),
        "an unsecured (alg:none) token": unsecured,
        "a token for another audience": first.token("erin", audience="elsewhere"),
        "a token from another issuer": first.token("erin", issuer="https://evil.test"),
        "an expired token": first.token("erin", lifetime=-120),
    }
    seen = []
    for what, token in refusals.items():
        error = authentication_error(librdkafka_config(sasl, token, "erin"))
        if error is None or "invalid_token" not in error:
            fail(f"{what} was not refused with invalid_token: {error}", broker)
        seen.append(error.split("invalid_token: ")[1].split(" (after")[0][:60])
    log(f"ok refused with SASL_AUTHENTICATION_FAILED: {'; '.join(seen)}")

    # The provider rotates its keys: the file changes, the broker takes the new set.
    second = Issuer(work, "second", "key-2")
    before = authentication_error(librdkafka_config(sasl, second.token("erin"), "erin"))
    if before is None:
        fail("a token signed by a key not yet in the set was accepted", broker)
    before = os.stat(jwks).st_mtime
    write_jwks(jwks, first, second)
    # A modification time the broker tells apart even on a coarse-grained filesystem.
    os.utime(jwks, (before + 10, before + 10))
    problem = roundtrip(librdkafka_config(sasl, second.token("erin"), "erin"), "sasl-jwks-rotated", 20)
    if problem:
        fail(f"a token signed by the rotated-in key: {problem}", broker)
    log("ok key rotation: a token of a new key is refused until the JWKS file holds it, then accepted without "
        "a restart")
