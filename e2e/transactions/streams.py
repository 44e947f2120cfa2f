"""Kafka Streams with processing.guarantee=exactly_once_v2 on three `oxbow` nodes.

A real Streams application (e2e/peers/kafka-streams/EosWordCount.java: split lines, re-key
by word through a repartition topic, count in a state store backed by a changelog topic,
write each new count) runs while lines arrive at a steady rate; meanwhile a broker is
SIGKILLed and restarted, the application itself is SIGKILLed and restarted (its state
restored from the changelog), and another broker is SIGKILLed. Then, read at
read_committed, every word's last count is exactly how often it was written and no count
ever went above that (a record processed twice would have).

Usage: streams.py BINARY"""
import collections
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RUN = os.path.join(ROOT, "e2e", "peers", "kafka-streams", "run")
INPUT, OUTPUT, APP = "words", "word-counts", "eos-wordcount"
LINES, RATE = 1500, 60  # lines, lines per second
VOCABULARY = [f"w{i:02d}" for i in range(40)]


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def fail(message):
    print(f"FAIL {message}", flush=True)
    raise SystemExit(1)


class App:
    """The Streams application as a child process; its STATE lines are followed."""

    def __init__(self, bootstrap, state_dir, log_path):
        self.args = [RUN, bootstrap, INPUT, OUTPUT, APP, state_dir, "3"]
        self.log_path = log_path
        self.process = None
        self.state = None

    def start(self):
        self.state = None
        log_file = open(self.log_path, "ab")
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=log_file,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        threading.Thread(target=self.follow, args=(self.process,), daemon=True).start()

    def follow(self, process):
        for line in process.stdout:
            line = line.decode(errors="replace").strip()
            if line.startswith("STATE "):
                self.state = line.split(" ", 1)[1]

    def wait_running(self, timeout=180):
        deadline = time.monotonic() + timeout
        while self.state != "RUNNING":
            if self.process.poll() is not None:
                fail(f"the Streams application exited with {self.process.returncode}; see {self.log_path}")
            if time.monotonic() > deadline:
                fail(f"the Streams application not RUNNING within {timeout} s (state {self.state})")
            time.sleep(0.2)

    def kill(self):
        self.process.kill()
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


def restart_node(cluster, node, why):
    cluster.kill(node)
    log(f"SIGKILL node {node} ({why})")
    time.sleep(3)
    cluster.start(node)
    deadline = time.monotonic() + 90
    while not cluster.ready(node):
        if time.monotonic() > deadline:
            fail(f"node {node} not ready again within 90 s")
        time.sleep(0.3)


def counts(bootstrap, idle=3.0):
    """The last and the largest count of every word in OUTPUT, read at read_committed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    # Assigned, not subscribed: no group join to wait for before the first record.
    consumer.assign([TopicPartition(OUTPUT, p, OFFSET_BEGINNING) for p in range(3)])
    last, largest = {}, collections.Counter()
    quiet = time.monotonic()
    while time.monotonic() - quiet < idle:
        message = consumer.poll(0.3)
        if message is None or message.error():
            continue
        quiet = time.monotonic()
        word = message.key().decode()
        value = int.from_bytes(message.value(), "big", signed=True)
        last[word] = value
        largest[word] = max(largest[word], value)
    consumer.close()
    return last, largest


def committed_transactions(cluster):
    total = 0
    for node in cluster.nodes:
        try:
            url = f"http://{cluster.net.host(node)}:{cluster.metrics_port(node)}/metrics"
            with urllib.request.urlopen(url, timeout=2) as response:
                for line in response.read().decode().splitlines():
                    if line.startswith('oxbow_transactions_completed_total{result="commit"}'):
                        total += int(float(line.split()[-1]))
        except OSError:
            pass
    return total


def main():
    binary = sys.argv[1]
    subprocess.run([RUN, "--compile-only"], check=True)
    work = tempfile.mkdtemp(prefix="oxbow-streams-")
    cluster = Cluster(binary, work, Network(False), cluster_id="streams-eos", extra=[
        "transaction.state.log.num.partitions=3", "transaction.state.log.replication.factor=3",
        "transaction.state.log.min.isr=2", "offsets.topic.num.partitions=3",
        "offsets.topic.replication.factor=3",
    ])
    rng = random.Random(int(os.environ.get("OXBOW_STREAMS_SEED", "11")))
    lines = [" ".join(rng.choice(VOCABULARY) for _ in range(5)) for _ in range(LINES)]
    expected = collections.Counter(word for line in lines for word in line.split())
    with cluster.running():
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topics = [NewTopic(t, num_partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
                  for t in (INPUT, OUTPUT)]
        for future in admin.create_topics(topics).values():
            future.result(60)
        app = App(cluster.bootstrap, os.path.join(work, "state"), os.path.join(work, "streams.log"))
        app.start()
        app.wait_running()
        log("ok three nodes; the exactly_once_v2 word count is RUNNING")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                             "acks": "all", "linger.ms": 5})
        began = time.monotonic()
        faults = [(5, "broker"), (12, "application"), (19, "broker")]
        sent = 0
        while sent < LINES:
            due = int((time.monotonic() - began) * RATE)
            while sent < min(due, LINES):
                producer.produce(INPUT, key=str(sent).encode(), value=lines[sent].encode())
                sent += 1
            producer.poll(0)
            if faults and time.monotonic() - began >= faults[0][0]:
                _, what = faults.pop(0)
                if what == "broker":
                    restart_node(cluster, rng.choice(cluster.nodes), "while the application runs")
                else:
                    app.kill()
                    log("SIGKILL the Streams application")
                    app.start()
            time.sleep(0.02)
        if producer.flush(60):
            fail("not every input line was acknowledged")
        log(f"ok {LINES} lines written ({sum(expected.values())} words)")
        deadline = time.monotonic() + 240
        while True:
            last, largest = counts(cluster.bootstrap)
            if last == dict(expected) or time.monotonic() > deadline:
                break
        app.stop()
        if last != dict(expected):
            wrong = {w: (last.get(w), n) for w, n in expected.items() if last.get(w) != n}
            fail(f"final counts differ for {len(wrong)} words (got, expected): {list(wrong.items())[:5]}")
        over = {w: (largest[w], n) for w, n in expected.items() if largest[w] > n}
        if over:
            fail(f"counts went above the truth (a record processed twice): {list(over.items())[:5]}")
        log(f"ok Kafka Streams exactly_once_v2: {len(expected)} words' counts exact and never above the "
            f"truth after 2 broker SIGKILLs and 1 application SIGKILL; "
            f"{committed_transactions(cluster)} transactions committed on the nodes still up")


if __name__ == "__main__":
    main()
