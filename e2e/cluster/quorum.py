#!/usr/bin/env python3
"""The metadata quorum as a user meets it, with real processes and Kafka's own tools.

1. `oxbow dev --brokers 3` exactly as the README shows it: every node ready, Kafka's
   `kafka-topics --describe` shows an RF=3 topic spread over the three brokers,
   `kafka-metadata-quorum describe --status` a leader and three voters, kcat produces
   through one broker and reads back through another, every node's image digest is the
   same, and Ctrl-C stops them all cleanly.
2. Controller failover, measured: the three plain `oxbow` commands `oxbow dev` stands for;
   RUNS times, SIGKILL the active controller and time until a CreateTopics through a
   survivor (confluent-kafka's AdminClient) succeeds; restart the killed node and wait
   until it has caught up. Prints median and worst; asserts only that every run recovers.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAFKA_BIN = os.path.join(ROOT, "e2e", "peers", "kafka", "bin")
RUNS = int(os.environ.get("OXBOW_FAILOVER_RUNS", "10"))
# Client ports of the `oxbow dev` cluster; controllers at +100, metrics at +552, and the
# failover cluster 1000 above. Below the ephemeral port range (32768-), so no client
# connection holds them; OXBOW_SUITE_PORT moves them all (e.g. beside another run).
PORT = int(os.environ.get("OXBOW_SUITE_PORT", "21092"))

sys.path.insert(0, os.path.join(ROOT, "e2e", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402
from oxbow_e2e import fail, http_get, wait_for  # noqa: E402


def view(port):
    status, body = http_get(port, "/metadata")
    return json.loads(body) if status == 200 else None


def ready(ports):
    return all(http_get(p, "/readyz")[0] == 200 for p in ports)


def same_image(ports):
    views = [view(p) for p in ports]
    if any(v is None for v in views):
        return None
    digests = {v["image_digest"] for v in views}
    return views if len(digests) == 1 else None


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def dev_cluster(binary, work):
    base, controller_base, metrics_base = PORT, PORT + 100, PORT + 552
    data = os.path.join(work, "dev")
    dev = subprocess.Popen(
        [binary, "dev", "--brokers", "3", "--dir", data, "--base-port", str(base),
         "--controller-base-port", str(controller_base), "--metrics-base-port", str(metrics_base)],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "dev.log"), "w"))
    metrics = [metrics_base + i for i in range(3)]
    bootstrap = ",".join(f"127.0.0.1:{base + i}" for i in range(3))
    try:
        wait_for(lambda: ready(metrics), what="three ready nodes")
        created = run([f"{KAFKA_BIN}/kafka-topics", "--bootstrap-server", f"127.0.0.1:{base}",
                       "--create", "--topic", "spread", "--partitions", "6", "--replication-factor", "3"])
        if created.returncode != 0:
            fail(f"kafka-topics --create: {created.stderr[-500:]}")
        described = run([f"{KAFKA_BIN}/kafka-topics", "--bootstrap-server", f"127.0.0.1:{base + 2}",
                         "--describe", "--topic", "spread"])
        print(described.stdout, end="")
        rows = [line for line in described.stdout.splitlines() if "Partition:" in line and "Leader:" in line]
        if len(rows) != 6:
            fail(f"expected 6 partitions: {described.stdout}")
        leaders = sorted(int(r.split("Leader:")[1].split()[0]) for r in rows)
        if leaders != [1, 1, 2, 2, 3, 3]:
            fail(f"leaders not spread: {leaders}")
        for r in rows:
            replicas = r.split("Replicas:")[1].split()[0].split(",")
            if sorted(replicas) != ["1", "2", "3"]:
                fail(f"replicas not on all three brokers: {r}")
        quorum = run([f"{KAFKA_BIN}/kafka-metadata-quorum", "--bootstrap-server", f"127.0.0.1:{base + 1}",
                      "describe", "--status"])
        print(quorum.stdout, end="")
        fields = dict(line.split(":", 1) for line in quorum.stdout.splitlines() if ":" in line)
        if quorum.returncode != 0 or fields.get("LeaderId", "").strip() not in {"1", "2", "3"}:
            fail(f"kafka-metadata-quorum: {quorum.stdout} {quorum.stderr[-500:]}")
        if fields.get("CurrentVoters", "").count('"id"') != 3:
            fail(f"expected three voters: {fields.get('CurrentVoters')}")
        messages = "".join(f"m{i}\n" for i in range(100))
        produced = run(["kcat", "-b", f"127.0.0.1:{base}", "-t", "spread", "-P", "-X", "acks=1"], input=messages)
        if produced.returncode != 0:
            fail(f"kcat produce: {produced.stderr}")
        consumed = run(["kcat", "-b", f"127.0.0.1:{base + 2}", "-t", "spread", "-C", "-e", "-q"])
        if sorted(consumed.stdout.split()) != sorted(messages.split()):
            fail(f"read back {len(consumed.stdout.split())} of 100 messages")
        # The README's replicated topic, exactly as it shows it (kafka-topics.sh).
        created = run([f"{KAFKA_BIN}/kafka-topics.sh", "--bootstrap-server", f"127.0.0.1:{base}",
                       "--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "3",
                       "--config", "min.insync.replicas=2"])
        if created.returncode != 0:
            fail(f"kafka-topics --create orders: {created.stderr[-500:]}")
        seq = "".join(f"{i}\n" for i in range(1, 1001))
        produced = run(["kcat", "-P", "-b", f"127.0.0.1:{base}", "-t", "orders", "-X", "acks=all",
                        "-X", "enable.idempotence=true"], input=seq)
        if produced.returncode != 0:
            fail(f"kcat acks=all produce: {produced.stderr}")
        consumed = run(["kcat", "-b", f"127.0.0.1:{base + 1}", "-t", "orders", "-C", "-e", "-q"])
        if sorted(consumed.stdout.split(), key=int) != [str(i) for i in range(1, 1001)]:
            fail(f"orders: read back {len(consumed.stdout.split())} of 1000 acks=all records")
        described = run([f"{KAFKA_BIN}/kafka-topics", "--bootstrap-server", f"127.0.0.1:{base + 1}",
                         "--describe", "--topic", "orders"])
        for row in [l for l in described.stdout.splitlines() if "Isr:" in l]:
            if sorted(row.split("Isr:")[1].split()[0].split(",")) != ["1", "2", "3"]:
                fail(f"orders: not every replica in sync: {row}")
        print("ok orders: RF=3 min.insync.replicas=2, 1000 acks=all records read back, ISR = all three", flush=True)
        readme_move(work, base)
        views = wait_for(lambda: same_image(metrics), 30, "one image on every node")
        controllers = {v["controller_id"] for v in views}
        if len(controllers) != 1:
            fail(f"nodes disagree on the controller: {controllers}")
        print(f"ok oxbow dev: 3 brokers over {bootstrap}, controller {controllers.pop()}, "
              f"image {views[0]['image_digest']} on every node", flush=True)
    finally:
        dev.send_signal(signal.SIGINT)
        try:
            code = dev.wait(timeout=30)
        except subprocess.TimeoutExpired:
            dev.kill()
            fail("oxbow dev did not stop on Ctrl-C")
    if code != 0:
        fail(f"oxbow dev exited with {code} on Ctrl-C: {open(os.path.join(work, 'dev.log')).read()[-2000:]}")
    print("ok oxbow dev stops every node on Ctrl-C", flush=True)


def failover(binary, work):
    sys.path.insert(0, "")
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = Cluster(binary, work, Network(False), cluster_id="failover-test",
                      bases=(PORT + 1000, PORT + 1100, PORT + 1552))
    metrics = {n: cluster.metrics_port(n) for n in cluster.nodes}
    for node in cluster.nodes:
        cluster.start(node)
    windows = []
    try:
        wait_for(lambda: ready(metrics.values()), what="three ready nodes")
        for attempt in range(RUNS):
            active = wait_for(lambda: cluster.controller(1), what="an active controller")
            survivor = 1 if active != 1 else 2
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.client_port(survivor)}",
                                 "socket.timeout.ms": 2000})
            killed_at = time.time()
            cluster.kill(active)
            name = f"after-kill-{attempt}"
            while True:
                future = admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10)[name]
                try:
                    future.result(timeout=15)
                    break
                except Exception as error:
                    if "already exists" in str(error).lower():
                        break
                    if time.time() - killed_at > 60:
                        fail(f"run {attempt}: no CreateTopics within 60 s of killing node {active}: {error}")
                    time.sleep(0.02)
            windows.append(time.time() - killed_at)
            cluster.start(active)
            wait_for(lambda: ready([metrics[active]]) and same_image(metrics.values()), what=f"node {active} to rejoin")
            print(f"ok run {attempt + 1}: killed controller {active}, CreateTopics through node {survivor} "
                  f"after {windows[-1]:.2f} s; node {active} rejoined", flush=True)
    finally:
        cluster.shutdown_all()
    print(f"controller failover (SIGKILL -> first successful CreateTopics), {len(windows)} runs: "
          f"median {statistics.median(windows):.2f} s, worst {max(windows):.2f} s, "
          f"best {min(windows):.2f} s", flush=True)


def readme_move(work, base):
    """The README's kafka-reassign-partitions.sh example, as it shows it (its port pointed at
    this cluster, e2e/peers/kafka/bin on PATH as the README says), then --verify until the
    move is done."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    start = readme.index("  ```sh\n  cat > move.json")
    block = readme[start:readme.index("  ```\n", start + 8)].split("\n")[1:]
    script = "\n".join(line[2:] for line in block)
    if "kafka-reassign-partitions.sh " not in script:
        fail(f"the README's move example does not run kafka-reassign-partitions.sh: {script}")
    script = script.replace("127.0.0.1:9092", f"127.0.0.1:{base}")
    done = run(["bash", "-euc", script], cwd=work,
               env={**os.environ, "PATH": f"{KAFKA_BIN}:{os.environ.get('PATH', '')}"})
    if done.returncode != 0:
        fail(f"the README's move example failed: {done.stdout[-1000:]} {done.stderr[-1000:]}")

    def moved():
        verify = run([f"{KAFKA_BIN}/kafka-reassign-partitions", "--bootstrap-server", f"127.0.0.1:{base}",
                      "--reassignment-json-file", os.path.join(work, "move.json"), "--verify"])
        return verify.returncode == 0 and "is completed" in verify.stdout
    wait_for(moved, 60, "the README's move to complete")
    described = run([f"{KAFKA_BIN}/kafka-topics", "--bootstrap-server", f"127.0.0.1:{base}",
                     "--describe", "--topic", "orders"])
    row = next((l for l in described.stdout.splitlines() if "Partition: 0" in l), "")
    if "Replicas: 2,3" not in row:
        fail(f"orders-0 not on brokers 2,3 after the README's move: {row}")
    print("ok the README's kafka-reassign-partitions example moved orders-0 to brokers 2,3 (throttled)", flush=True)


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-quorum-")
    try:
        dev_cluster(binary, work)
        failover(binary, work)
    except BaseException:  # fail() and a wait_for timeout alike: show the logs
        for name in sorted(os.listdir(work)):
            if name.endswith(".log"):
                print(f"--- {name} (tail) ---")
                print("".join(open(os.path.join(work, name)).readlines()[-25:]))
        raise
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
