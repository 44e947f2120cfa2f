#!/usr/bin/env python3
"""Moving partitions under load, with Kafka's own tools (issue 14), checked from the outside.

    reassignment.py BINARY

1. Five `oxbow` nodes on loopback: 1..3 combined broker+controller voters, 4 and 5
   broker-only. `leader.imbalance.check.interval.seconds=5` (Kafka's default is 300 s: the
   test does not wait minutes).
2. Topic `moving`: 3 partitions placed by hand on {1,2,3} (CreateTopics with a replica
   assignment), min.insync.replicas=2, preloaded with PRELOAD_MB of records so the moves
   copy real data. Idempotent acks=all librdkafka producers (e2e/cluster/history.py) write
   sequence-numbered values at RATE msg/s throughout, and a consumer group reads along.
3. `kafka-reassign-partitions --generate` proposes a plan for brokers 3,4,5; the test then
   `--execute`s its own plan moving every replica from {1,2,3} to {3,4,5}, SIGKILLs the
   active controller in the middle (and restarts it), and `--verify`s until done. Checks:
   every partition's replicas and ISR are {3,4,5}, the old replicas' directories are gone
   from brokers 1 and 2, and `ListPartitionReassignments` is empty.
4. A move back of `moving-0` to {1,2,3}, with the partition's leader SIGKILLed in the
   middle: the move still completes.
5. A move of `moving-1` to {3,4,X} with broker X (1 or 2, not the active controller)
   SIGSTOPped stays in progress; `kafka-reassign-partitions --cancel` reverts it to {3,4,5}
   and broker X drops the replica's log.
   (Each "in the middle" holds an added broker with SIGSTOP so the move cannot finish
   first, and the tools bootstrap from the brokers that are not stopped.)
6. `kafka-leader-election --election-type preferred --all-topic-partitions` runs, and
   every partition ends up led by its preferred replica. Then a move with no fault (every
   replica back to {1,2,3}) is timed, and a move of `moving-0` to {1,2,4} with
   `--throttle THROTTLE_RATE`: broker 4's throttled fetch rate (its
   oxbow_replication_throttled_bytes_total{role="follower"}) must be within 20 % of the rate,
   and `--verify` must clear the throttle configs.
7. The producers stop; every acknowledged record is read back exactly once at its offset
   (e2e/cluster/history.py's checker); the consumer group saw every acknowledged record;
   its longest stall (gap between two deliveries while producing) is printed and must stay
   under STALL_BOUND_S.

Prints the time each move took, the bytes moved (from the brokers' replication byte
counters) and the producers' p99 acknowledgement latency during the move.
"""
import json
from array import array
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from history import Workload, check_history, identities, read_back, KINDS, now  # noqa: E402
from oxbow_cluster import Cluster, Network  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAFKA_BIN = os.path.join(ROOT, "e2e", "peers", "kafka", "bin")
NODES = (1, 2, 3, 4, 5)
VOTERS = (1, 2, 3)
# Apart from the other suites' ports (46 uses 29192.., the bench 24092..).
BASES = (28192, 28292, 28392)
TOPIC = "moving"
PARTITIONS = 3
RATE = int(os.environ.get("OXBOW_REASSIGN_RATE", "500"))
PRELOAD_MB = int(os.environ.get("OXBOW_REASSIGN_PRELOAD_MB", "60"))
MOVE_TIMEOUT = 180.0
SESSION_MS = 15000
STALL_BOUND_S = 15.0
THROTTLE_RATE = int(os.environ.get("OXBOW_REASSIGN_THROTTLE", "2000000"))  # bytes/s


def log(message):
    print(message, flush=True)


def fail(message, cluster=None, work=None):
    log(f"FAIL {message}")
    if cluster is not None:
        cluster.logs_tail(40)
    if work is not None:
        log(f"work dir kept: {work}")
    sys.exit(1)


def wait_until(condition, timeout, interval=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    return None


def kafka_tool(name, *args, check=True, timeout=120):
    result = subprocess.run([os.path.join(KAFKA_BIN, name), *args], capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)} exited {result.returncode}: "
                           f"{result.stdout[-2000:]} {result.stderr[-2000:]}")
    return result


def replicas_of(cluster, via):
    """{partition: (leader, replicas, sorted ISR)} of TOPIC as node `via` answers Metadata."""
    answer = cluster.metadata(via)
    if answer is None:
        return None
    out = {}
    for p in range(PARTITIONS):
        state = answer["partitions"].get((TOPIC, p))
        if state is None:
            return None
        out[p] = (state["leader"], list(state["replicas"]), sorted(state["isr"]))
    return out


def any_metadata(cluster):
    for node in NODES:
        states = replicas_of(cluster, node)
        if states is not None:
            return states
    return None


def replica_bytes(cluster, placements):
    """Bytes on disk of the replicas `placements` ({partition: [broker, ...]}) hold."""
    total = 0
    for p, brokers in placements.items():
        for node in brokers:
            directory = os.path.join(cluster.data_dir(node), f"{TOPIC}-{p}")
            for name in os.listdir(directory) if os.path.isdir(directory) else ():
                if name.endswith(".log"):
                    total += os.path.getsize(os.path.join(directory, name))
    return total


def throttled_bytes(cluster, node, role):
    """oxbow_replication_throttled_bytes_total{role=ROLE} of one broker."""
    url = f"http://127.0.0.1:{cluster.metrics_port(node)}/metrics"
    with urllib.request.urlopen(url, timeout=2) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(f'oxbow_replication_throttled_bytes_total{{role="{role}"}}'):
                return float(line.split()[-1])
    return 0.0


class RateSampler(threading.Thread):
    """Samples a broker's throttled byte counter every 0.5 s until stopped."""

    def __init__(self, cluster, node, role):
        super().__init__(daemon=True)
        self.cluster, self.node, self.role = cluster, node, role
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.samples.append((time.time(), throttled_bytes(self.cluster, self.node, self.role)))
            except OSError:
                pass
            self.stop.wait(0.5)

    def rate(self):
        """Bytes/s from the first sample that moved to the last one that did."""
        moving = [i for i in range(1, len(self.samples)) if self.samples[i][1] > self.samples[i - 1][1]]
        if len(moving) < 2:
            return None, 0.0
        (t0, b0), (t1, b1) = self.samples[moving[0] - 1], self.samples[moving[-1]]
        return (b1 - b0) / (t1 - t0), b1 - b0


def ack_latency_p99(workload, since, until):
    """p99 of produce→ack latency for acks in [since, until], from the workload's samples."""
    samples = [lat for at, lat in list(workload.latencies) if since <= at <= until]
    if len(samples) < 20:
        return None
    return statistics.quantiles(samples, n=100)[98]


class GroupReader(threading.Thread):
    """A consumer group member reading TOPIC along; records every value and the longest
    gap between two deliveries."""

    def __init__(self, bootstrap, log_path):
        super().__init__(daemon=True)
        self.errors = []
        import logging
        from confluent_kafka import Consumer
        # The group protocol's steps go to a file in the work dir: a failure keeps it.
        logger = logging.getLogger("moving-readers")
        logger.propagate = False
        logger.addHandler(logging.FileHandler(log_path))
        logger.setLevel(logging.DEBUG)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "moving-readers",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": True,
                                  "fetch.wait.max.ms": 100, "debug": "cgrp", "logger": logger,
                                  "error_cb": lambda error: self.errors.append(f"client: {error}")})
        self.values = set()
        self.longest_gap = 0.0
        self.last = None
        self.stop = threading.Event()

    def run(self):
        try:
            self.consumer.subscribe([TOPIC])
            while not self.stop.is_set():
                for message in self.consumer.consume(1000, timeout=0.5):
                    if message.error():
                        self.errors.append(str(message.error()))
                        continue
                    now = time.time()
                    if self.last is not None:
                        self.longest_gap = max(self.longest_gap, now - self.last)
                    self.last = now
                    self.values.add((message.value() or b"")[:64])
            self.consumer.close()
        except Exception as error:  # the failure report says why the reader stopped
            self.errors.append(f"reader stopped: {error!r}")


def preload(bootstrap, megabytes):
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 1 << 20, "compression.type": "none", "log_level": 2})
    payload = b"preload:" + os.urandom(1016)
    for i in range(megabytes * 1024):
        while True:
            try:
                producer.produce(TOPIC, key=b"preload", value=payload, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("preload not flushed in 120 s")


def plan(assignment):
    return json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": p, "replicas": replicas, "log_dirs": ["any"] * len(replicas)}
        for p, replicas in assignment.items()]})


def reachable(cluster, held=()):
    """A bootstrap list without the SIGSTOPped brokers `held`: a tool that bootstraps from a
    stopped broker waits out its request timeout there (with Kafka too)."""
    return ",".join(f"127.0.0.1:{cluster.client_port(n)}" for n in NODES if n not in held)


def move(cluster, work, name, assignment, middle=None, held=(), execute_args=()):
    """Executes `assignment` with kafka-reassign-partitions, runs `middle()` once it is in
    progress, waits until every replica and ISR is at the target, then --verify must report
    completion; returns the seconds until the target was reached."""
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        f.write(plan(assignment))
    began = time.time()
    kafka_tool("kafka-reassign-partitions", "--bootstrap-server", reachable(cluster, held),
               "--reassignment-json-file", path, "--execute", *execute_args)
    if middle is not None:
        middle()

    def done():
        try:
            result = kafka_tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap,
                                "--reassignment-json-file", path, "--verify", check=False, timeout=60)
        except subprocess.TimeoutExpired:
            return False
        lines = [line for line in result.stdout.splitlines() if line.startswith("Reassignment of partition")]
        return result.returncode == 0 and len(lines) == len(assignment) and all("is completed" in line for line in lines)
    def settled():
        states = any_metadata(cluster)
        return states and all(states[p][1] == replicas and states[p][2] == sorted(replicas)
                              for p, replicas in assignment.items())
    # Watched through Metadata (cheap); the tool's --verify (a JVM start each time, which
    # on two cores would weigh on the clients being measured) runs once it looks done.
    if not wait_until(settled, MOVE_TIMEOUT):
        fail(f"{name}: replicas/ISR not at the target within {MOVE_TIMEOUT:.0f} s: {any_metadata(cluster)}",
             cluster, work)
    took = time.time() - began
    if not wait_until(done, 60, interval=1.0):
        fail(f"{name}: kafka-reassign-partitions --verify does not report completion 60 s after the "
             f"replicas and ISR reached the target; metadata {any_metadata(cluster)}", cluster, work)
    return took


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-reassign-")
    network = Network(False)
    cluster = Cluster(binary, work, network, cluster_id="reassignment", nodes=NODES, voters=VOTERS, bases=BASES,
                      extra=["leader.imbalance.check.interval.seconds=5",
                             # A SIGSTOPped broker stays unfenced long enough for the tool to
                             # accept it as a target (it refuses fenced brokers, as with Kafka).
                             f"broker.session.timeout.ms={SESSION_MS}"])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workload = reader = None
    try:
        for node in NODES:
            cluster.start(node)
        if not wait_until(lambda: all(cluster.ready(n) for n in NODES), 60):
            fail("nodes not ready within 60 s", cluster, work)
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
        original = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
        topic = NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=[original[p] for p in range(PARTITIONS)],
                         config={"min.insync.replicas": "2"})
        admin.create_topics([topic], request_timeout=30)[TOPIC].result(timeout=60)
        if not wait_until(lambda: (s := any_metadata(cluster)) and all(
                s[p][1] == original[p] and s[p][2] == [1, 2, 3] for p in range(PARTITIONS)), 30):
            fail(f"{TOPIC} not placed as asked, ISR not full: {any_metadata(cluster)}", cluster, work)
        log(f"ok five nodes; {TOPIC} placed by hand on {original}")
        preload(cluster.bootstrap, PRELOAD_MB)
        log(f"ok preloaded {PRELOAD_MB} MiB")

        workload = Workload(cluster.bootstrap, TOPIC, f"m{os.getpid()}", 2, RATE, acks_all=True,
                            partitions=PARTITIONS)
        workload.start()
        reader = GroupReader(cluster.bootstrap, os.path.join(work, "reader.log"))
        reader.start()
        if not wait_until(lambda: workload.acks_since(0), 30):
            fail(f"no acks=all write acknowledged within 30 s ({dict(workload.client_errors)})", cluster, work)

        generated = kafka_tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap,
                               "--topics-to-move-json-file", write(work, "topics.json",
                                                                  json.dumps({"version": 1, "topics": [{"topic": TOPIC}]})),
                               "--broker-list", "3,4,5", "--generate")
        proposed = json.loads(generated.stdout.strip().splitlines()[-1])
        if sorted({b for p in proposed["partitions"] for b in p["replicas"]}) != [3, 4, 5]:
            fail(f"--generate proposed {proposed}", cluster, work)
        log("ok kafka-reassign-partitions --generate proposed a plan on brokers 3,4,5")

        def stuck_in_progress(name, partitions, held):
            listed = ongoing(reachable(cluster, held))
            if not all((TOPIC, p) in listed for p in partitions):
                fail(f"{name}: a move to a SIGSTOPped broker is not listed in progress: {listed}", cluster, work)

        def kill_controller():
            # Broker 5 (added to every partition) is stopped: the move cannot finish yet.
            stuck_in_progress("to-345", range(PARTITIONS), (5,))
            controller = next((c for c in map(cluster.controller, NODES) if c is not None), None)
            if controller is None:
                fail("no active controller known mid-reassignment", cluster, work)
            log(f"SIGKILL of the active controller {controller} mid-reassignment")
            cluster.kill(controller)
            time.sleep(2.0)
            cluster.start(controller)
            cluster.signal(5, signal.SIGCONT)

        target = {0: [3, 4, 5], 1: [4, 5, 3], 2: [5, 3, 4]}
        began = now()
        cluster.signal(5, signal.SIGSTOP)
        took = move(cluster, work, "to-345", target, kill_controller, held=(5,))
        moved = replica_bytes(cluster, {p: [b for b in target[p] if b not in original[p]] for p in target})
        p99 = ack_latency_p99(workload, began, now())
        log(f"ok moved {TOPIC} from {{1,2,3}} to {{3,4,5}} in {took:.1f} s (broker 5 held stopped, then the "
            f"active controller SIGKILLed mid-move): {moved / 2**20:.1f} MiB of segments on the added replicas; "
            f"acks=all p99 during the move {p99 * 1000 if p99 else float('nan'):.0f} ms")
        gone = lambda: not any(os.path.exists(os.path.join(cluster.data_dir(n), f"{TOPIC}-{p}"))
                               for n in (1, 2) for p in range(PARTITIONS))
        if not wait_until(gone, 60):
            fail("the old replicas' directories are still on brokers 1/2 60 s after the move", cluster, work)
        if ongoing(cluster.bootstrap):
            fail(f"ListPartitionReassignments still lists {ongoing(cluster.bootstrap)}", cluster, work)
        log("ok old replicas' data deleted from brokers 1 and 2; no reassignment listed")

        def kill_leader():
            stuck_in_progress("back-0", [0], (held,))
            leader = any_metadata(cluster)[0][0]
            log(f"SIGKILL of moving-0's leader {leader} mid-reassignment")
            cluster.kill(leader)
            time.sleep(2.0)
            cluster.start(leader)
            cluster.signal(held, signal.SIGCONT)
        # Held: an added broker that is not the active controller (a stopped controller is
        # replaced, and the new one fences it at once).
        controller = next((c for c in map(cluster.controller, NODES) if c is not None), None)
        held = 1 if controller == 2 else 2
        cluster.signal(held, signal.SIGSTOP)
        took = move(cluster, work, "back-0", {0: [1, 2, 3]}, kill_leader, held=(held,))
        log(f"ok moved moving-0 back to {{1,2,3}} in {took:.1f} s (broker {held} held stopped, then the leader "
            f"SIGKILLed mid-move)")

        # Held: a broker that is not the active controller (a stopped controller is
        # replaced, and the new one fences it at once).
        controller = next((c for c in map(cluster.controller, NODES) if c is not None), None)
        held = 2 if controller == 1 else 1
        cluster.signal(held, signal.SIGSTOP)
        stuck = write(work, "stuck.json", plan({1: [3, 4, held]}))
        kafka_tool("kafka-reassign-partitions", "--bootstrap-server", reachable(cluster, (held,)),
                   "--reassignment-json-file", stuck, "--execute")
        stuck_in_progress("stuck", [1], (held,))
        # --preserve-throttles: clearing them would address every broker, the stopped one too.
        cancelled = kafka_tool("kafka-reassign-partitions", "--bootstrap-server", reachable(cluster, (held,)),
                               "--reassignment-json-file", stuck, "--cancel", "--preserve-throttles")
        cluster.signal(held, signal.SIGCONT)
        # Back to brokers {3,4,5}; as in KRaft, in the order of the move's replica list.
        if not wait_until(lambda: (s := any_metadata(cluster)) and sorted(s[1][1]) == [3, 4, 5]
                          and s[1][2] == [3, 4, 5] and (TOPIC, 1) not in ongoing(cluster.bootstrap), 60):
            fail(f"--cancel did not revert moving-1 to brokers 3, 4, 5: {any_metadata(cluster)}; "
                 f"tool said {cancelled.stdout[-500:]}", cluster, work)
        if not wait_until(lambda: not os.path.exists(os.path.join(cluster.data_dir(held), f"{TOPIC}-1")), 60):
            fail(f"broker {held} kept the cancelled replica's log", cluster, work)
        log("ok a move stuck on a SIGSTOPped broker is listed, and --cancel reverts it")

        election = kafka_tool("kafka-leader-election", "--bootstrap-server", cluster.bootstrap,
                              "--election-type", "preferred", "--all-topic-partitions", check=False)
        if election.returncode != 0 and "ELECTION_NOT_NEEDED" not in election.stdout + election.stderr:
            fail(f"kafka-leader-election failed: {election.stdout[-1000:]} {election.stderr[-1000:]}", cluster, work)
        if not wait_until(lambda: (s := any_metadata(cluster)) and all(s[p][0] == s[p][1][0] for p in s), 30):
            fail(f"partitions not led by their preferred replicas: {any_metadata(cluster)}", cluster, work)
        log("ok kafka-leader-election --election-type preferred: every partition led by its preferred replica")

        # A move with no fault, to measure: every replica back to {1,2,3}, after 5 quiet
        # seconds that give the latency baseline.
        quiet = now()
        time.sleep(5.0)
        before, began = any_metadata(cluster), now()
        took = move(cluster, work, "measured", original)
        moved = replica_bytes(cluster, {p: [b for b in original[p] if b not in before[p][1]] for p in original})
        p99 = ack_latency_p99(workload, began, now())
        base = ack_latency_p99(workload, quiet, began)
        log(f"ok measured move of {TOPIC} ({PRELOAD_MB} MiB preloaded) back to {{1,2,3}}: {took:.1f} s from "
            f"--execute (a JVM start) to replicas and ISR at the target, {moved / 2**20:.1f} MiB of segments on the added replicas; acks=all p99 during it "
            f"{p99 * 1000 if p99 else float('nan'):.0f} ms (the 5 s before it: "
            f"{base * 1000 if base else float('nan'):.0f} ms); no throttle")

        # The same kind of move under a throttle: moving-0 from [1,2,3] to [1,2,4] at
        # THROTTLE_RATE bytes/s; broker 4's throttled fetch rate must be within 20 % of it.
        follower = RateSampler(cluster, 4, "follower")
        follower.start()
        began = now()
        took = move(cluster, work, "throttled", {0: [1, 2, 4]}, execute_args=("--throttle", str(THROTTLE_RATE)))
        follower.stop.set()
        follower.join()
        p99 = ack_latency_p99(workload, began, now())
        measured, moved = follower.rate()
        if measured is None or abs(measured - THROTTLE_RATE) > 0.2 * THROTTLE_RATE:
            fail(f"throttled move: broker 4 fetched at {measured} bytes/s ({moved:.0f} bytes), "
                 f"throttle {THROTTLE_RATE} bytes/s (±20 %); samples {follower.samples}", cluster, work)
        log(f"ok throttled move of moving-0 to [1,2,4] at {THROTTLE_RATE / 1e6:.1f} MB/s: broker 4 fetched "
            f"{moved / 2**20:.1f} MiB at {measured / 1e6:.2f} MB/s, {took:.1f} s; acks=all p99 during it "
            f"{p99 * 1000 if p99 else float('nan'):.0f} ms")
        described = kafka_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap, "--entity-type", "brokers",
                               "--entity-name", "4", "--describe").stdout
        if "throttled.rate" in described:
            fail(f"--verify did not clear the broker throttles: {described}", cluster, work)
        log("ok kafka-reassign-partitions --verify cleared the throttles")

        time.sleep(2.0)
        workload.stop()
        for error in workload.fatal:
            fail(f"fatal idempotent-producer error: {error}", cluster, work)
        logs = read_back(cluster.bootstrap, TOPIC, PARTITIONS)
        # The preload's records are not part of the history: keep the workload's only.
        logs = {p: (hw, array("q", [o for o, v in zip(offsets, values) if not v.startswith(b"preload:")]),
                    [v for v in values if not v.startswith(b"preload:")])
                for p, (hw, offsets, values) in logs.items()}
        counts, examples = check_history(workload, logs, identities([cluster.data_dir(n) for n in NODES], TOPIC))
        if counts["resent_after_bump"]:
            log(f"history: {counts['resent_after_bump']} record(s) written twice because librdkafka bumped its "
                f"epoch and re-sent them as new data (confluentinc/librdkafka#4953), e.g. "
                + "; ".join(examples["resent_after_bump"]))
        bad = {k: counts[k] for k in KINDS if counts[k]}
        if bad:
            fail(f"history: {bad}, e.g. {[examples[k] for k in bad]}", cluster, work)
        log(f"ok history: {counts['acked']} acknowledged records read back once each, at their offsets, in order")
        acked_keys = {key for _, _, key, _ in workload.acked()}
        seen = lambda: {workload.key_of(v) for v in list(reader.values)}
        if not wait_until(lambda: acked_keys <= seen(), 60):
            missing = len(acked_keys - seen())
            described = kafka_tool("kafka-consumer-groups", "--bootstrap-server", cluster.bootstrap, "--describe",
                                   "--group", "moving-readers", "--state", check=False)
            log(f"kafka-consumer-groups --describe --state: {described.stdout[-1500:]} {described.stderr[-1500:]}")
            fail(f"the consumer group never received {missing} acknowledged record(s) (reader "
                 f"{'running' if reader.is_alive() else 'stopped'}, {len(reader.values)} distinct values read, "
                 f"errors {reader.errors[-5:]}; its log: reader.log)", cluster, work)
        reader.stop.set()
        log(f"ok the consumer group received every acknowledged record; longest gap between deliveries "
            f"{reader.longest_gap:.2f} s")
        if reader.longest_gap > STALL_BOUND_S:
            fail(f"the consumer group stalled {reader.longest_gap:.1f} s (bound {STALL_BOUND_S} s)", cluster, work)
        problems = cluster.terminate(NODES)
        if problems:
            fail("; ".join(problems), cluster, work)
    finally:
        if reader is not None:
            reader.stop.set()
        if workload is not None:
            workload.halt()
        cluster.shutdown_all()
    shutil.rmtree(work, ignore_errors=True)
    log("ok reassignment: moves under load with Kafka's tools, controller and leader kills, cancel")


def write(work, name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def ongoing(bootstrap):
    """(topic, partition) of every reassignment in progress, from `kafka-reassign-partitions
    --list` (ListPartitionReassignments)."""
    result = subprocess.run([os.path.join(KAFKA_BIN, "kafka-reassign-partitions"), "--bootstrap-server",
                             bootstrap, "--list"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"kafka-reassign-partitions --list exited {result.returncode}: {result.stderr[-1000:]}")
    listed = set()
    for line in result.stdout.splitlines():
        # "moving-1: replicas: 3,4,1,5. adding: 1. removing: 5."
        head = line.split(":", 1)[0].strip()
        if "-" in head and head.rsplit("-", 1)[1].isdigit():
            topic, p = head.rsplit("-", 1)
            listed.add((topic, int(p)))
    return listed


if __name__ == "__main__":
    main()
