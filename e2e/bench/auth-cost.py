#!/usr/bin/env python3
"""What a new connection costs the broker per security protocol, Oxbow against Apache Kafka
on the same machine in the same run:

    e2e/bench/auth-cost.py [--connections 300] [--binary PATH]

One broker each with four listeners: PLAINTEXT, SSL with client certificates required
(mTLS), SASL_PLAINTEXT and SASL_SSL with SCRAM-SHA-512 (4096 iterations, Kafka's minimum and
kafka-configs' default). Each connection is opened, secured (TLS 1.3 handshake, SASL
exchange), asks ApiVersions once and is closed, one after another from a Python client (its
SCRAM proof is hashlib's PBKDF2). Reported per protocol: connections per second, the client's
median and p99 time to an answered ApiVersions, and the broker's CPU milliseconds per
connection (user+system from /proc over the run). Each protocol is warmed up first (the JVM's
JIT, Oxbow's allocator). Not part of the test command; numbers go in closing notes.
"""

import argparse
import base64
import hashlib
import hmac
import os
import shutil
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from certs import broker_store, issue, make_ca  # noqa: E402

PEERS = os.path.join(ROOT, "e2e", "peers")
USER, PASSWORD = "bench", "bench-secret"
JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def free_ports(count):
    out = subprocess.run([os.path.join(ROOT, "e2e", "lib", "free-port"), str(count)], capture_output=True,
                         text=True, check=True).stdout.split()
    return [int(p) for p in out]


class Connection:
    def __init__(self, port, context=None):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname="127.0.0.1") if context else raw
        self.correlation = 0

    def request(self, api_key, version, body):
        self.correlation += 1
        frame = struct.pack(">hhih", api_key, version, self.correlation, 5) + b"bench" + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        return self._read(size)[4:]

    def _read(self, size):
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return bytes(data)

    def authenticate(self, bytes_):
        answer = self.request(36, 1, struct.pack(">i", len(bytes_)) + bytes_)
        code, length = struct.unpack(">hh", answer[:4])
        rest = answer[4 + max(length, 0):]
        size = struct.unpack(">i", rest[:4])[0]
        if code != 0:
            raise ConnectionError(f"SaslAuthenticate answered {code}")
        return rest[4:4 + size]

    def scram_sha512(self, user, password):
        mechanism = b"SCRAM-SHA-512"
        handshake = self.request(17, 1, struct.pack(">h", len(mechanism)) + mechanism)
        if struct.unpack(">h", handshake[:2])[0] != 0:
            raise ConnectionError("SaslHandshake refused")
        nonce = base64.b64encode(os.urandom(18)).decode()
        bare = f"n={user},r={nonce}"
        server_first = self.authenticate(f"n,,{bare}".encode()).decode()
        fields = dict(item.split("=", 1) for item in server_first.split(","))
        salted = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
        client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
        without_proof = f"c=biws,r={fields['r']}"
        message = f"{bare},{server_first},{without_proof}".encode()
        signature = hmac.new(hashlib.sha512(client_key).digest(), message, hashlib.sha512).digest()
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
        self.authenticate(f"{without_proof},p={proof}".encode())

    def api_versions(self):
        answer = self.request(18, 0, b"")
        if struct.unpack(">h", answer[:2])[0] != 0:
            raise ConnectionError("ApiVersions failed")

    def close(self):
        self.sock.close()


def cpu_ms(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def connect_once(port, context, sasl):
    started = time.perf_counter()
    connection = Connection(port, context)
    if sasl:
        connection.scram_sha512(USER, PASSWORD)
    connection.api_versions()
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed


def measure(pid, port, context, sasl, count):
    for _ in range(max(20, count // 5)):
        connect_once(port, context, sasl)
    before, started = cpu_ms(pid), time.perf_counter()
    times = [connect_once(port, context, sasl) for _ in range(count)]
    wall = time.perf_counter() - started
    times.sort()
    return {"per_second": count / wall, "median_ms": statistics.median(times) * 1000,
            "p99_ms": times[int(len(times) * 0.99) - 1] * 1000, "cpu_ms": (cpu_ms(pid) - before) / count}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--binary", help="the oxbow binary (default: build the release one)")
    args = parser.parse_args()
    cache = os.environ.get("OXBOW_CACHE", os.path.expanduser("~/.cache/oxbow"))
    binary = args.binary
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "oxbow-broker", "--bin", "oxbow"],
                       cwd=ROOT, check=True)
        binary = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(cache, "target")), "release", "oxbow")
    work = tempfile.mkdtemp(prefix="oxbow-auth-bench-")
    ca = make_ca(work, "ca", "/CN=bench-ca")
    store = broker_store(work, "broker", ca, "broker")
    client = issue(work, "client", "/CN=bench-client", ca, "extendedKeyUsage=clientAuth\n")
    tls = ssl.create_default_context(cafile=ca[1])
    mutual = ssl.create_default_context(cafile=ca[1])
    mutual.load_cert_chain(client[1], client[0])
    common = ["listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
              "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
              "ssl.keystore.type=PEM", f"ssl.keystore.location={store}", "ssl.truststore.type=PEM",
              f"ssl.truststore.location={ca[1]}", "ssl.client.auth=required",
              "sasl.enabled.mechanisms=SCRAM-SHA-512",
              f"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={JAAS}",
              f"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={JAAS}"]
    brokers = {}
    try:
        for name in ("oxbow", "kafka"):
            plain, tls_port, sasl, sasl_ssl, controller = free_ports(5)
            listeners = (f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls_port},"
                         f"SASL_PLAINTEXT://127.0.0.1:{sasl},SASL_SSL://127.0.0.1:{sasl_ssl}")
            command = [os.path.join(PEERS, name, "start-single"), "--port", str(plain), "--dir",
                       os.path.join(work, name)]
            configs = list(common)
            if name == "kafka":
                command += ["--controller-port", str(controller)]
                configs += [f"listeners={listeners},CONTROLLER://127.0.0.1:{controller}",
                            f"advertised.listeners={listeners}"]
            else:
                configs += [f"listeners={listeners}", "inter.broker.listener.name=PLAINTEXT"]
            for kv in configs:
                command += ["--config", kv]
            environment = {**os.environ, "OXBOW_BINARY": binary}
            pid = int(subprocess.run(command, check=True, capture_output=True, text=True, env=environment)
                      .stdout.split()[-1])
            brokers[name] = (pid, plain, tls_port, sasl, sasl_ssl)
            subprocess.run([os.path.join(PEERS, "kafka", "bin", "kafka-configs"), "--bootstrap-server",
                            f"127.0.0.1:{plain}", "--alter", "--entity-type", "users", "--entity-name", USER,
                            "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={PASSWORD}]"],
                           check=True, capture_output=True)
        time.sleep(2)
        print(f"{'broker':<6} {'protocol':<22} {'conn/s':>8} {'median ms':>10} {'p99 ms':>8} {'broker CPU ms/conn':>19}")
        for name, (pid, plain, tls_port, sasl, sasl_ssl) in brokers.items():
            for label, port, context, with_sasl in (
                    ("PLAINTEXT", plain, None, False),
                    ("SSL (mTLS)", tls_port, mutual, False),
                    ("SASL_PLAINTEXT SCRAM", sasl, None, True),
                    ("SASL_SSL SCRAM", sasl_ssl, tls, True)):
                row = measure(pid, port, context, with_sasl, args.connections)
                print(f"{name:<6} {label:<22} {row['per_second']:>8.0f} {row['median_ms']:>10.2f} "
                      f"{row['p99_ms']:>8.2f} {row['cpu_ms']:>19.3f}", flush=True)
    finally:
        for name in brokers:
            subprocess.run([os.path.join(PEERS, name, "stop"), "--dir", os.path.join(work, name)],
                           capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
