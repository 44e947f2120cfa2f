#!/usr/bin/env python3
"""Real Kafka clients against the real oxbow binary: byte-identical round trips, the
max.message.bytes limit, SIGKILL between produce and consume, both fetch paths.

    roundtrip.py --binary target/debug/oxbow --clients kcat,confluent-kafka,kafka-python,kafkajs

For every client: produce a deterministic message set (keys, null keys and values, binary
values, headers including repeated keys and a null value, explicit CreateTime timestamps)
once per codec (none, gzip, snappy, lz4, zstd), all acknowledged (acks=all, idempotent
producers); a record batch exactly at max.message.bytes (1048588 bytes: the batch header and
one record with a null key and no headers) is stored and one byte more is refused with
MESSAGE_TOO_LARGE. Then the broker is SIGKILLed and restarted: every client reads every
acknowledged message back and compares it field by field, once over the sendfile fetch
path and, after a clean restart with fetch.sendfile.enable=false, over the copying path.

Each client is driven through an adapter (kcat here, the others by *_client.py/js with one
JSON job on stdin and one JSON result on stdout):
    produce job: {op, bootstrap, topic, compression, idempotent, messages: [MESSAGE]}
                 -> {results: [{offset} | {error}]}
    consume job: {op, bootstrap, topic, count} -> {messages: [MESSAGE + offset, create_time]}
    MESSAGE: {key: base64|null, value: base64|null, headers: [[name, base64|null]], timestamp}
Prints one line per check and closes with "N passed, N failed".
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oxbow_e2e import Broker, require  # noqa: E402
CACHE = os.path.join(os.environ.get("OXBOW_CACHE", os.path.expanduser("~/.cache/oxbow")), "clients")
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
MESSAGES_PER_CODEC = 40
MAX_MESSAGE_BYTES = 1024 * 1024 + 12
# A v2 batch: 61 header bytes; one record: 3-byte length, attributes, timestamp delta, offset
# delta, null key length (1 byte each), 3-byte value length, value, header count (1 byte).
VALUE_AT_LIMIT = MAX_MESSAGE_BYTES - 61 - 3 - 4 - 3 - 1
KCAT_DELIMITER = b"<|oxbow-message-end|>"


def b64(data):
    return None if data is None else base64.b64encode(data).decode()


def unb64(text):
    return None if text is None else base64.b64decode(text)


def message_set(seed, binary_keys=True, null_header_values=True):
    """Deterministic messages; every byte value appears in the values."""
    messages = []
    for i in range(MESSAGES_PER_CODEC):
        n = i + seed * 1000
        key = None
        if i % 5 != 0:
            key = f"key-{n}".encode() + (bytes([0, 255, 10]) if binary_keys else b"")
        value = None
        if i % 7 != 3 or key is None:  # kafka-python refuses a null key with a null value
            value = bytes((j * 31 + n * 7) % 256 for j in range((i * 37) % 700 + 1))
        if i % 3 == 0:
            headers = []
        elif i % 3 == 1:
            headers = [["h", b64(bytes([0, 1, 2, 255]) if binary_keys else b"plain")]]
        else:
            headers = [["trace", b64(f"t-{n}".encode())], ["trace", b64(b"repeated name")]]
            headers.append(["null-header", None] if null_header_values else ["empty", b64(b"")])
        messages.append({"key": b64(key), "value": b64(value), "headers": headers,
                         "timestamp": 1_700_000_000_000 + n * 1000})
    return messages


# ---------------------------------------------------------------------------------------
# Adapters

class JsonAdapter:
    """A client program that takes one JSON job on stdin and prints one JSON result."""
    sets_timestamps = True
    binary_keys = True
    null_header_values = True

    def __init__(self, name, command, env=None, null_header_values=True):
        self.name, self.command, self.env = name, command, env
        self.null_header_values = null_header_values

    def run(self, job):
        done = subprocess.run(self.command, input=json.dumps(job).encode(), capture_output=True,
                              timeout=180, env={**os.environ, **(self.env or {})})
        if done.returncode != 0:
            raise RuntimeError(f"{self.name} failed ({done.returncode}): {done.stderr.decode()[-3000:]}")
        return json.loads(done.stdout)

    def produce(self, job):
        return self.run({**job, "op": "produce"})["results"]

    def consume(self, job):
        return self.run({**job, "op": "consume"})["messages"]


class KcatAdapter:
    """kcat: messages from delimited stdin (-D, -K), headers per invocation (-H), NULLs
    from empty input (-Z). kcat cannot set timestamps (librdkafka stamps CreateTime at
    produce), so those are checked against the produce window instead."""
    name = "kcat"
    sets_timestamps = False
    binary_keys = False
    null_header_values = True

    def produce(self, job):
        results = []
        # One invocation per run of messages with the same headers, in order.
        runs = []
        for message in job["messages"]:
            if runs and runs[-1][0] == message["headers"]:
                runs[-1][1].append(message)
            else:
                runs.append((message["headers"], [message]))
        for headers, messages in runs:
            command = ["kcat", "-P", "-b", job["bootstrap"], "-t", job["topic"], "-p", "0",
                       "-X", f"compression.codec={job['compression']}", "-X", "acks=all",
                       "-X", f"enable.idempotence={'true' if job.get('idempotent', True) else 'false'}",
                       "-X", "message.max.bytes=4000000", "-Z",
                       "-D", KCAT_DELIMITER.decode(), "-K", "\t"]
            for name, value in headers:
                command += ["-H", name if value is None else f"{name}={unb64(value).decode()}"]
            payload = b""
            for message in messages:
                key, value = unb64(message["key"]), unb64(message["value"])
                assert KCAT_DELIMITER not in (value or b"") and b"\t" not in (key or b"")
                payload += (key or b"") + b"\t" + (value or b"") + KCAT_DELIMITER
            done = subprocess.run(command, input=payload, capture_output=True, timeout=180)
            stderr = done.stderr.decode(errors="replace")
            if "MSG_SIZE_TOO_LARGE" in stderr or "too large" in stderr.lower():
                results += [{"error": "MESSAGE_TOO_LARGE"}] * len(messages)
            elif done.returncode != 0 or "failed" in stderr.lower():
                results += [{"error": stderr[-2000:] or f"exit {done.returncode}"}] * len(messages)
            else:
                # kcat prints no offsets: acknowledged ones follow each other on partition 0.
                results += [{"offset": None}] * len(messages)
        return results

    def consume(self, job):
        command = ["kcat", "-C", "-b", job["bootstrap"], "-t", job["topic"], "-p", "0",
                   "-o", "beginning", "-c", str(job["count"]), "-X", "check.crcs=true",
                   "-f", "%o %T %K %S %h\n%k%s\n"]
        done = subprocess.run(command, capture_output=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"kcat -C failed: {done.stderr.decode()[-2000:]}")
        out, messages = done.stdout, []
        while out:
            line, out = out.split(b"\n", 1)
            offset, timestamp, key_len, value_len, *rest = line.split(b" ", 4)
            key_len, value_len = int(key_len), int(value_len)
            key = out[:key_len] if key_len >= 0 else None
            out = out[max(key_len, 0):]
            value = out[:value_len] if value_len >= 0 else None
            out = out[max(value_len, 0) + 1:]
            headers = []
            if rest and rest[0]:
                for pair in rest[0].decode().split(","):
                    # kcat prints a null header value as NULL.
                    name, _, text = pair.partition("=")
                    headers.append([name, None if text == "NULL" else b64(text.encode())])
            messages.append({"offset": int(offset), "key": b64(key), "value": b64(value),
                             "headers": headers, "timestamp": int(timestamp), "create_time": True})
        return messages


def installed(name):
    """Whether the client `name` is installed where e2e/setup.d/10-clients.sh puts it."""
    python = os.path.join(CACHE, "venv", "bin", "python")
    if name == "kcat":
        return shutil.which("kcat") is not None
    if name in ("confluent-kafka", "kafka-python"):
        module = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka"}[name]
        return os.path.exists(python) and subprocess.run([python, "-c", f"import {module}"],
                                                         capture_output=True).returncode == 0
    if name == "kafkajs":
        return shutil.which("node") is not None and os.path.isdir(os.path.join(CACHE, "node", "node_modules", "kafkajs"))
    return False


def adapters():
    python = os.path.join(CACHE, "venv", "bin", "python")
    node_env = {"NODE_PATH": os.path.join(CACHE, "node", "node_modules")}
    return {
        "kcat": KcatAdapter(),
        "confluent-kafka": JsonAdapter("confluent-kafka", [python, os.path.join(HERE, "confluent_kafka_client.py")]),
        # kafka-python refuses null header values ("All headers items must be (str, bytes)").
        "kafka-python": JsonAdapter("kafka-python", [python, os.path.join(HERE, "kafka_python_client.py")],
                                    null_header_values=False),
        # kafkajs refuses null header values (TypeError in its header encoder).
        "kafkajs": JsonAdapter("kafkajs", ["node", os.path.join(HERE, "kafkajs_client.js")], node_env,
                               null_header_values=False),
    }


# ---------------------------------------------------------------------------------------
# The checks

class Report:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL  {name}: {detail}", flush=True)


def produce_phase(adapter, bootstrap, report):
    """Returns {topic: (expected messages, produce window)} of what was acknowledged."""
    expected = {}
    for seed, codec in enumerate(CODECS):
        topic = f"{adapter.name}-{codec}"
        messages = message_set(seed, adapter.binary_keys, adapter.null_header_values)
        started = int(time.time() * 1000)
        try:
            results = adapter.produce({"bootstrap": bootstrap, "topic": topic, "compression": codec,
                                       "idempotent": True, "messages": messages})
        except Exception as error:
            report.check(f"{adapter.name} produce {codec}", False, str(error))
            continue
        window = (started, int(time.time() * 1000))
        offsets = [r.get("offset") for r in results]
        errors = [r["error"] for r in results if "error" in r]
        in_order = all(o is None or o == i for i, o in enumerate(offsets))
        report.check(f"{adapter.name} produce {codec}: {len(messages)} acknowledged in order",
                     not errors and in_order, errors[:1] or offsets)
        if not errors:
            expected[topic] = (messages, window)

    topic = f"{adapter.name}-limit"
    at_limit = {"key": None, "value": b64(b"\xab" * VALUE_AT_LIMIT), "headers": [],
                "timestamp": 1_700_000_000_000}
    over_limit = {**at_limit, "value": b64(b"\xcd" * (VALUE_AT_LIMIT + 1))}
    job = {"bootstrap": bootstrap, "topic": topic, "compression": "none", "idempotent": False}
    started = int(time.time() * 1000)
    try:
        stored = adapter.produce({**job, "messages": [at_limit]})
        report.check(f"{adapter.name} batch of exactly {MAX_MESSAGE_BYTES} bytes stored",
                     "error" not in stored[0], stored[0])
        if "error" not in stored[0]:
            expected[topic] = ([at_limit], (started, int(time.time() * 1000)))
        refused = adapter.produce({**job, "messages": [over_limit]})
        report.check(f"{adapter.name} batch of {MAX_MESSAGE_BYTES + 1} bytes refused with MESSAGE_TOO_LARGE",
                     refused[0].get("error") == "MESSAGE_TOO_LARGE", refused[0])
    except Exception as error:
        report.check(f"{adapter.name} max.message.bytes", False, str(error))
    return expected


def consume_phase(adapter, bootstrap, expected, path, report):
    for topic, (messages, window) in expected.items():
        try:
            got = adapter.consume({"bootstrap": bootstrap, "topic": topic, "count": len(messages)})
        except Exception as error:
            report.check(f"{adapter.name} consume {topic} ({path})", False, str(error))
            continue
        problems = []
        if len(got) != len(messages):
            problems.append(f"{len(got)} of {len(messages)} messages")
        for offset, (sent, received) in enumerate(zip(messages, got)):
            for field in ("key", "value", "headers"):
                if sent[field] != received[field]:
                    problems.append(f"offset {offset} {field}: sent {str(sent[field])[:80]} got {str(received[field])[:80]}")
            if received["offset"] != offset:
                problems.append(f"offset {received['offset']} where {offset} was acknowledged")
            if not received["create_time"]:
                problems.append(f"offset {offset}: not CreateTime")
            if adapter.sets_timestamps and received["timestamp"] != sent["timestamp"]:
                problems.append(f"offset {offset} timestamp: sent {sent['timestamp']} got {received['timestamp']}")
            if not adapter.sets_timestamps and not window[0] <= received["timestamp"] <= window[1]:
                problems.append(f"offset {offset} timestamp {received['timestamp']} outside {window}")
        report.check(f"{adapter.name} consume {topic} ({path}): {len(messages)} byte-identical",
                     not problems, "; ".join(problems[:5]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--clients", default="kcat,confluent-kafka,kafka-python,kafkajs")
    args = parser.parse_args()
    available = adapters()
    names = args.clients.split(",")
    unknown = [name for name in names if name not in available]
    if unknown:
        sys.exit(f"unknown client(s) {unknown}; known: {sorted(available)}")
    for name in names:  # a client that failed to install fails the suite, it is never skipped
        require(name, installed(name), f"e2e/setup.d/10-clients.sh installs it into {CACHE}")
    chosen = [available[name] for name in names]
    report = Report()
    with tempfile.TemporaryDirectory(prefix="oxbow-clients-") as workdir:
        broker = Broker(os.path.abspath(args.binary), workdir)
        broker.start()
        try:
            expected = {adapter.name: produce_phase(adapter, broker.bootstrap, report) for adapter in chosen}
            broker.kill()
            print("SIGKILLed the broker after every produce was acknowledged; restarting", flush=True)
            broker.start()
            for adapter in chosen:
                consume_phase(adapter, broker.bootstrap, expected[adapter.name], "sendfile", report)
            broker.stop()
            broker.start("fetch.sendfile.enable=false")
            for adapter in chosen:
                consume_phase(adapter, broker.bootstrap, expected[adapter.name], "copy", report)
            report.check("broker still running after every client", broker.running())
            broker.stop()
        except Exception:
            print(broker.log_tail(), file=sys.stderr)
            raise
        finally:
            broker.kill()
        if report.failed:
            print(broker.log_tail(), file=sys.stderr)
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
