#!/usr/bin/env python3
"""ISR replication under faults, checked from the outside (issue 12): a history checker and
a nemesis against three real `oxbow` processes.

    replication.py BINARY [--long] [--tls]

1. Three combined broker+controller nodes (ids 1..3), started with the plain `--override`
   flags `oxbow dev` prints, each with its own data directory. When this machine allows it
   (root, `ip netns`), each node runs in its own network namespace on a bridge this script
   creates (10.231.x.0/24) and removes afterwards; otherwise on loopback, and the network
   partition faults are reported as skipped.
2. Topic `history`: 3 partitions, RF=3, min.insync.replicas=2. Idempotent acks=all
   producers — two librdkafka ones and one Java-client one (e2e/peers/java-client/
   HistoryProducer.java, the client's default idempotence) sharing the rate — write unique,
   sequence-numbered values to every partition at a steady rate; every acknowledged record
   is kept with its partition and offset. After a fault, each client must ack again.
3. The nemesis, in a seeded random order, one fault at a time, each followed by a wait
   until every broker is back in every ISR it was in before the fault:
   - SIGKILL the leader of a partition, restart it on the same data;
   - SIGTERM (controlled shutdown) the leader, restart it;
   - SIGSTOP the leader past broker.session.timeout.ms, then SIGCONT;
   - SIGKILL two brokers at once (the quorum is lost), restart both;
   - (network namespaces) cut the leader off from the other brokers and the quorum but not
     from its clients, hold it there past the session timeout, heal.
   A fault whose partitions had another in-sync replica must see a new leader and an ack
   within 30 s. Unavailability of a partition during a fault = the longest gap between two
   consecutive acknowledgements of that partition from the fault to its recovery (the last
   ack before the outage to the first ack after it); reported (median, worst, and split by
   whether the victim was the active controller), never asserted.
4. The checker: producers flushed; every partition read by a consumer from the start to
   its high watermark; every acknowledged record must be there exactly once, at the offset
   it was acknowledged with; no value may appear twice anywhere (idempotence across
   failover); each producer's values appear in sequence order within a partition. The one
   second copy counted apart (printed, not failed) is librdkafka's own re-send of
   confluentinc/librdkafka#4953, told by its batch header in the segment files (same
   producer id, a later epoch) and the client's log (it bumped to that epoch for skipped
   sequence numbers after a request the broker said it had not appended): the broker
   answered each request as Apache Kafka does and cannot tell that copy from new data.
5. acks=1 phase on `history-acks1` (no idempotence) with a few leader SIGKILLs: the
   acknowledged records that did not survive are counted and reported (allowed).
6. Every broker stopped with SIGTERM (exit 0 required); the same history check against
   node 1's segment files (so a record the cluster lost is told from one Fetch did not
   serve); and, for each partition, the RecordBatch bytes below the high watermark in the
   segment files of the three replicas must be identical.

--tls: the same, with every Kafka listener SSL and client certificates required (mutual
TLS): the client listener, replication (the inter-broker listener) and the controller
quorum. Each node's certificate names only its own address (10.231.x.N, or 127.0.0.1 on
loopback), so clients and brokers check the address they dial; every client — the
librdkafka producers, the Java producer (PEM stores), the admin client, the read-back
consumer and the harness's raw Metadata requests — presents one client certificate. The
nemesis and the checks do not change. Only the nodes' metrics/readiness HTTP listener stays
in clear. Certificates: e2e/lib/certs.py, in the work directory.

Helpers: e2e/lib/oxbow_cluster.py (the nodes, namespaces, a node's own Metadata answer) and
e2e/cluster/history.py (the workload, the checks, segment parsing). Any violation prints a
FAIL line and the script exits 1; the node logs' tails follow and the work directory is
kept. Fault lines carry their UTC start time to find them in the node logs.

Knobs (environment): OXBOW_REPLICATION_KILLS (20; --long 100), _TERMS (5; 20), _STOPS
(1; 10), _DOUBLES (1; 10), _PARTITIONS (2; 100), _ACKS1_KILLS (3; 10), _RATE (total msg/s,
1000), _JAVA (Java-client producers, 1), _MIN_ISR (2), _SEED, _NETNS (auto | 0 | 1), and
_KEEP=1 (keep the work dir and node logs after a passing run), and
_REQUIRE_ISR=0, which after a fault
waits only for live leaders, not for restored ISRs (to develop this harness against a broker
that does not replicate; such a run is reported as skipped at best, never as passed).
"""
import argparse
import json
import os
import random
import signal
import shutil
import socket
import ssl
import struct
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from history import (KINDS, BatchIdentities, Workload, check_history, compare_replicas, identities,  # noqa: E402
                     outage, read_back, segment_records)
from kafka_wire import metadata_request  # noqa: E402
from oxbow_cluster import NODES, Cluster, Network  # noqa: E402
from certs import MutualTls  # noqa: E402
from oxbow_e2e import SKIP_EXIT, skip  # noqa: E402

TOPIC = "history"
ACKS1_TOPIC = "history-acks1"
PARTITIONS = 3
SESSION_TIMEOUT = 3.0      # broker.session.timeout.ms, Oxbow's (and KRaft's) default, in seconds
START_TIMEOUT = 60.0       # a node answers /readyz
FAILOVER_TIMEOUT = 30.0    # a new leader is elected, and then acknowledges
RECOVERY_TIMEOUT = 90.0    # a restarted node is back in every ISR it was in
ACKS_TIMEOUT = 60.0        # every partition acknowledges again
CLIENTS = ("librdkafka", "java")  # whose acknowledgements the windows are also split by
HOLD = 2.0                 # how long a partitioned / double-killed state is held once reached
FAULT_KINDS = ("SIGKILL", "SIGTERM", "SIGSTOP", "2xSIGKILL", "partition")
# --tls probes: a Kafka ApiVersions v0 request, and a frame of the controller RPC (length, kind, JSON).
API_VERSIONS = struct.pack(">ihhih", 15, 18, 0, 7, 5) + b"probe"
CONTROLLER_FRAME = struct.pack(">I", 3) + b"\x01{}"


def env_int(name, default):
    return int(os.environ.get(f"OXBOW_REPLICATION_{name}", default))


def now():
    return time.monotonic()


def log(message):
    print(message, flush=True)


class Abort(Exception):
    """The cluster did not come back: the nemesis stops; the checks run on what there is."""


class Violations:
    def __init__(self):
        self.items = []

    def add(self, message):
        self.items.append(message)
        log(f"violation: {message}")


def wait_until(condition, timeout, interval=0.05):
    """The condition's first truthy value, or None after `timeout` seconds."""
    deadline = now() + timeout
    while True:
        value = condition()
        if value:
            return value
        if now() > deadline:
            return None
        time.sleep(interval)


class Fault:
    def __init__(self, kind, victims, topic, partitions, started, controller):
        self.kind, self.victims, self.topic = kind, victims, topic
        self.controller = controller  # the active controller just before the fault
        wall = time.time()  # UTC, as the node logs print it
        self.wall = time.strftime("%H:%M:%S", time.gmtime(wall)) + f".{int(wall % 1 * 1000):03d}Z"
        self.partitions = partitions  # the partitions of `topic` the victims led
        self.started, self.ended = started, None
        self.notes = []
        self.windows = {}
        self.client_windows = {}  # client -> {partition: window}, each client's own acks


class Nemesis:
    def __init__(self, cluster, network, violations, rng):
        self.cluster, self.net, self.violations, self.rng = cluster, network, violations, rng
        # Which node answers Metadata is spread over the nodes without touching the seeded
        # generator, so the same seed picks the same faults.
        self.spread = random.Random()
        # Off only to develop this harness against a broker that does not replicate yet.
        self.require_isr = os.environ.get("OXBOW_REPLICATION_REQUIRE_ISR", "1") != "0"
        self.faults = []

    def view(self, exclude=()):
        """The Metadata answer of a running node not in `exclude`, or None."""
        for node in self.spread.sample(NODES, len(NODES)):
            if node not in exclude:
                answer = self.cluster.metadata(node)
                if answer is not None:
                    return answer
        return None

    def isr_snapshot(self):
        answer = wait_until(self.view, 30)
        if answer is None:
            raise Abort("no node answers Metadata")
        return {tp: set(s["isr"]) for tp, s in answer["partitions"].items() if not tp[0].startswith("__")}

    def restored(self, snapshot):
        """On every node: all brokers registered and unfenced, every partition with a live
        leader and (unless development mode) at least the ISR it had before the fault."""
        for node in NODES:
            if not self.cluster.ready(node):
                return False
            answer = self.cluster.metadata(node)
            if answer is None or answer["brokers"] != set(NODES):
                return False
            for tp, isr in snapshot.items():
                state = answer["partitions"].get(tp)
                if state is None or state["leader"] not in NODES:
                    return False
                if self.require_isr and not isr <= set(state["isr"]):
                    return False
        return True

    def state(self):
        answer = self.view() or {"partitions": {}}
        return {f"{t}-{p}": (s["leader"], s["isr"]) for (t, p), s in sorted(answer["partitions"].items())
                if not t.startswith("__")}

    def recover(self, fault, snapshot, workload):
        started = now()
        what = f"{fault.kind} of {fault.victims}"
        if not wait_until(lambda: all(self.cluster.ready(n) for n in NODES), START_TIMEOUT):
            down = [n for n in NODES if not self.cluster.ready(n)]
            self.violations.add(f"{what}: node(s) {down} not ready {START_TIMEOUT:.0f} s after the fault ended")
            raise Abort("a node did not come back")
        if not wait_until(lambda: self.restored(snapshot), RECOVERY_TIMEOUT, 0.1):
            before = {f"{t}-{p}": sorted(i) for (t, p), i in sorted(snapshot.items())}
            self.violations.add(f"{what}: ISRs not restored {RECOVERY_TIMEOUT:.0f} s after the fault ended; "
                                f"ISRs before {before}; (leader, ISR) now {self.state()}")
            raise Abort("ISRs not restored")
        back = now()
        if not wait_until(lambda: workload.acks_since(back), ACKS_TIMEOUT):
            silent = ", ".join(f"{client} on partition {p}" for client, p in workload.silent(back))
            self.violations.add(f"{what}: no ack on {workload.topic} from {silent} within "
                                f"{ACKS_TIMEOUT:.0f} s after the cluster recovered")
            raise Abort("acks did not resume")
        fault.ended = now()
        fault.notes.append(f"recovered {back - started:.1f} s after the fault ended")

    def await_failover(self, fault, snapshot, workload):
        """Waits for a new live leader of each partition the victims led that had another
        in-sync replica, then for an ack on it. A partition whose ISR held only victims stays
        offline (no unclean election): nothing to wait for."""
        victims = set(fault.victims)
        expected = [p for p in fault.partitions if snapshot.get((fault.topic, p), set()) - victims]
        if not expected:
            fault.notes.append("no failover possible (ISR = victims)")
            return
        survivors = [n for n in NODES if n not in victims]

        def elected():
            answer = self.view(exclude=victims)
            if answer is None:
                return None
            leaders = {p: answer["partitions"].get((fault.topic, p), {}).get("leader") for p in expected}
            return leaders if all(leader in survivors for leader in leaders.values()) else None

        leaders = wait_until(elected, FAILOVER_TIMEOUT)
        if leaders is None:
            isrs = {p: sorted(snapshot[(fault.topic, p)]) for p in expected}
            self.violations.add(f"{fault.kind} of node {fault.victims}: no new leader of {fault.topic} partitions "
                                f"{expected} within {FAILOVER_TIMEOUT:.0f} s (ISRs before: {isrs}; now {self.state()})")
            return
        at = now()
        fault.notes.append(f"new leaders {leaders} seen after {at - fault.started:.2f} s")
        if not wait_until(lambda: workload.acks_since(at, expected), FAILOVER_TIMEOUT):
            silent = ", ".join(f"{client} on partition {p}" for client, p in workload.silent(at, expected))
            self.violations.add(f"{fault.kind} of node {fault.victims}: new leaders {leaders} elected but no ack "
                                f"from {silent} within {FAILOVER_TIMEOUT:.0f} s; (leader, ISR) now {self.state()}; "
                                f"client errors so far {dict(workload.client_errors)}")

    def await_fenced(self, fault):
        """Waits until the other nodes fence the victim (it leaves their Metadata brokers)."""
        victim = fault.victims[0]

        def fenced():
            answer = self.view(exclude={victim})
            return answer is not None and victim not in answer["brokers"]

        timeout = SESSION_TIMEOUT + 30
        if wait_until(fenced, timeout):
            fault.notes.append(f"fenced after {now() - fault.started:.2f} s")
        else:
            self.violations.add(f"{fault.kind} of node {victim}: still unfenced {timeout:.0f} s later")

    def run(self, kind, workload):
        """One fault against the leader of a random partition of the workload's topic, then
        the wait until the cluster is whole again. Returns the Fault."""
        snapshot = self.isr_snapshot()
        topic = workload.topic
        answer = wait_until(self.view, 30)
        target = self.rng.randrange(PARTITIONS)
        victim = answer["partitions"][(topic, target)]["leader"] if answer else -1
        if victim not in NODES:
            raise Abort(f"{topic}-{target} has no leader before the fault")
        victims = [victim]
        if kind == "2xSIGKILL":
            victims.append(self.rng.choice([n for n in NODES if n != victim]))
        led = [p for p in range(PARTITIONS) if answer["partitions"][(topic, p)]["leader"] in victims]
        controller = next((c for c in map(self.cluster.controller, NODES) if c is not None), None)
        fault = Fault(kind, victims, topic, led, now(), controller)
        self.faults.append(fault)
        cluster = self.cluster
        if kind == "SIGKILL":
            cluster.kill(victim)
            self.await_failover(fault, snapshot, workload)
            cluster.start(victim)
        elif kind == "2xSIGKILL":
            for node in victims:
                cluster.kill(node)
            time.sleep(HOLD)  # the fault's duration: two of three voters down
            for node in victims:
                cluster.start(node)
        elif kind == "SIGTERM":
            for problem in cluster.terminate([victim]):
                self.violations.add(f"SIGTERM of leader {victim}: {problem}")
            fault.notes.append(f"exited after {now() - fault.started:.2f} s")
            self.await_failover(fault, snapshot, workload)
            cluster.start(victim)
        elif kind == "SIGSTOP":
            cluster.signal(victim, signal.SIGSTOP)
            self.await_fenced(fault)
            self.await_failover(fault, snapshot, workload)
            cluster.signal(victim, signal.SIGCONT)
        elif kind == "partition":
            self.net.cut(victim, [n for n in NODES if n != victim])
            self.await_fenced(fault)
            self.await_failover(fault, snapshot, workload)
            time.sleep(HOLD)  # the fault's duration: the new leader takes writes, the old one still runs
            self.net.heal()
        else:
            raise ValueError(kind)
        self.recover(fault, snapshot, workload)
        times = workload.ack_times()
        for p in fault.partitions:
            window = outage(times[p], fault.started, fault.ended)
            if window is not None:
                fault.windows[p] = window
        # Each client's own window: what its users wait, from its last ack before the fault
        # to its first after (a faster client's acks do not hide a slower one's stall).
        for client in CLIENTS:
            times = workload.ack_times(client)
            for p in fault.partitions:
                window = outage(times[p], fault.started, fault.ended)
                if window is not None:
                    fault.client_windows.setdefault(client, {})[p] = window
        return fault


def describe(samples):
    if not samples:
        return "no samples"
    return (f"{len(samples)} partition windows: median {statistics.median(samples):.2f} s, "
            f"worst {max(samples):.2f} s, best {min(samples):.2f} s")


def security(cluster):
    """The librdkafka clients' connection settings for the cluster (empty: PLAINTEXT)."""
    return cluster.tls.librdkafka() if cluster.tls else {}


def refused_without_certificate(host, port, context, frame):
    """What a TLS client without a certificate gets on host:port when it sends `frame`:
    "refused" (a TLS alert: TLS 1.3 reports a refused client certificate on the first read),
    "accepted" (an answer), or what else happened."""
    try:
        with socket.create_connection((host, port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(frame)
                return f"accepted (answered {tls.recv(64)[:16]!r})"
    except ssl.SSLCertVerificationError as error:  # our side refused the broker: a harness problem
        return f"the broker's certificate was not accepted: {error}"
    except ssl.SSLError:
        return "refused"
    except OSError as error:
        return f"no TLS alert: {type(error).__name__}: {error}"


def check_mutual_tls_only(cluster, violations):
    """--tls: every node's client and controller port refuse a client without a certificate,
    and its client port gives no Kafka answer in clear (the nodes' Metadata answers over TLS
    with the client certificate, which the nemesis relies on, are the other half)."""
    no_certificate = ssl.create_default_context(cafile=cluster.tls.ca[1])
    for node in NODES:
        host = cluster.net.host(node)
        for name, port, frame in (("client", cluster.client_port(node), API_VERSIONS),
                                  ("controller", cluster.controller_base + node - 1, CONTROLLER_FRAME)):
            outcome = refused_without_certificate(host, port, no_certificate, frame)
            if outcome != "refused":
                violations.add(f"--tls: node {node}'s {name} port {host}:{port}, a TLS client without a "
                               f"certificate: {outcome}")
        try:
            answer = metadata_request(host, cluster.client_port(node))
        except (OSError, struct.error, ValueError, UnicodeDecodeError):
            answer = None
        if answer is not None:
            violations.add(f"--tls: node {node}'s client port answered Metadata in clear: {answer}")
        if cluster.metadata(node) is None:
            violations.add(f"--tls: node {node} gives no Metadata answer over TLS with the client certificate")


def create_topic(cluster, name, min_isr, violations):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2, **security(cluster)})
    topic = NewTopic(name, PARTITIONS, 3, config={"min.insync.replicas": str(min_isr)})
    admin.create_topics([topic], request_timeout=30)[name].result(timeout=60)

    def led_everywhere():
        for node in NODES:
            answer = cluster.metadata(node)
            if answer is None:
                return False
            states = [answer["partitions"].get((name, p)) for p in range(PARTITIONS)]
            if any(s is None or s["leader"] not in NODES for s in states):
                return False
        return True
    if not wait_until(led_everywhere, 60):
        raise Abort(f"topic {name} has no leader on every node 60 s after creation")

    def full_isr():
        answer = cluster.metadata(1)
        return answer and all(sorted(answer["partitions"][(name, p)]["isr"]) == list(NODES) for p in range(PARTITIONS))
    if not wait_until(full_isr, 30):
        answer = cluster.metadata(1) or {"partitions": {}}
        isrs = {p: answer["partitions"].get((name, p), {}).get("isr") for p in range(PARTITIONS)}
        violations.add(f"{name}: ISRs do not hold all three replicas 30 s after creation: {isrs}")


def check(workload, cluster, violations, lossy):
    """Reads the workload's topic back with a consumer (Fetch) and checks it. Returns (high
    watermarks, counts) or (None, None) when the topic could not be read."""
    try:
        logs = read_back(cluster.bootstrap, workload.topic, PARTITIONS, security=security(cluster))
    except RuntimeError as error:
        violations.add(str(error))
        return None, None
    counts, examples = check_history(workload, logs, identities([cluster.data_dir(n) for n in NODES], workload.topic))
    report_resent(workload, "as a consumer reads it", counts, examples)
    if not lossy:
        for kind in KINDS:
            if counts[kind]:
                violations.add(f"{workload.topic} as a consumer reads it: {counts[kind]} {kind.replace('_', ' ')} "
                               f"record(s), e.g. " + "; ".join(examples[kind]))
    return {p: logs[p][0] for p in logs}, counts


def report_resent(workload, where, counts, examples):
    if counts["resent_after_bump"]:
        log(f"{workload.topic} {where}: {counts['resent_after_bump']} record(s) written twice because librdkafka "
            f"bumped its epoch and re-sent them as new data (confluentinc/librdkafka#4953; Apache Kafka answers "
            f"the same requests the same way), e.g. " + "; ".join(examples["resent_after_bump"]))


def check_on_disk(workload, cluster, node, marks, violations, lossy, fetched):
    """The same history check against node `node`'s segment files below the high watermarks
    (all nodes stopped): tells records the cluster lost from records Fetch did not serve."""
    try:
        logs = {p: segment_records(os.path.join(cluster.data_dir(node), f"{workload.topic}-{p}"), mark)
                for p, mark in marks.items()}
    except ValueError as error:
        violations.add(str(error))
        return None
    counts, examples = check_history(workload, logs, BatchIdentities(cluster.data_dir(node), workload.topic))
    report_resent(workload, f"in node {node}'s segment files", counts, examples)
    if not lossy:
        for kind in KINDS:
            if counts[kind]:
                violations.add(f"{workload.topic} in node {node}'s segment files: {counts[kind]} "
                               f"{kind.replace('_', ' ')} record(s), e.g. " + "; ".join(examples[kind]))
        identify = BatchIdentities(cluster.data_dir(node), workload.topic)
        for first, second in examples["duplicated_at"]:
            violations.add(f"{workload.topic}: the batches of a duplicate in node {node}'s segment files (producer "
                           f"id, epoch, base sequence): " + "; ".join(f"@{o}: {identify(p, o)}" for p, o in (first, second)))
        if fetched and fetched["lost"] > counts["lost"]:
            violations.add(f"{workload.topic}: {fetched['lost'] - counts['lost']} acknowledged record(s) are in the "
                           f"segment files below the high watermark but a consumer reading every partition from "
                           f"offset 0 never received them (Fetch skipped them)")
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--long", action="store_true", help=">= 100 leader kills and 100 partitions")
    parser.add_argument("--tls", action="store_true",
                        help="mutual TLS on every listener: clients, replication, controller quorum")
    args = parser.parse_args()
    counts = {
        "SIGKILL": env_int("KILLS", 100 if args.long else 20),
        "SIGTERM": env_int("TERMS", 20 if args.long else 5),
        "SIGSTOP": env_int("STOPS", 10 if args.long else 1),
        "2xSIGKILL": env_int("DOUBLES", 10 if args.long else 1),
        "partition": env_int("PARTITIONS", 100 if args.long else 2),
    }
    acks1_kills = env_int("ACKS1_KILLS", 10 if args.long else 3)
    rate = env_int("RATE", 1000)
    java = env_int("JAVA", 1)
    min_isr = env_int("MIN_ISR", 2)
    seed = env_int("SEED", random.randrange(1 << 30))
    netns_mode = os.environ.get("OXBOW_REPLICATION_NETNS", "auto")
    use_netns = Network.available() if netns_mode == "auto" else netns_mode == "1"
    skipped = []
    if not use_netns and counts["partition"]:
        skipped.append(f"network-partition faults need root and `ip netns` (OXBOW_REPLICATION_NETNS={netns_mode})")
        counts["partition"] = 0
    if os.environ.get("OXBOW_REPLICATION_REQUIRE_ISR", "1") == "0":
        skipped.append("ISR restoration after faults not checked (OXBOW_REPLICATION_REQUIRE_ISR=0)")

    work = tempfile.mkdtemp(prefix="oxbow-replication-")
    network = Network(use_netns)
    violations = Violations()
    rng = random.Random(seed)
    tls = MutualTls(os.path.join(work, "tls"), {n: network.host(n) for n in NODES}) if args.tls else None
    cluster = Cluster(args.binary, work, network, tls=tls)
    java_config = tls.java_properties if tls else None
    nemesis = Nemesis(cluster, network, violations, rng)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    where = f"network namespaces on {network.subnet}.0/24" if use_netns else "loopback"
    if tls:
        where += ", mutual TLS on the client, inter-broker and controller listeners"
    log(f"replication history: seed {seed}, work dir {work}, {where}, {rate} msg/s from 2 librdkafka and "
        f"{java} Java producer(s), min.insync.replicas={min_isr}; faults {counts}; acks=1 phase: {acks1_kills} "
        f"SIGKILL")
    began = now()
    results = {"seed": seed, "tls": bool(tls)}
    workload = acks1 = None
    try:
        network.setup()
        for node in NODES:
            cluster.start(node)
        if not wait_until(lambda: all(cluster.ready(n) for n in NODES), START_TIMEOUT):
            raise Abort(f"nodes not ready within {START_TIMEOUT:.0f} s")
        if tls:
            problems = len(violations.items)
            check_mutual_tls_only(cluster, violations)
            if len(violations.items) == problems:
                log("ok --tls: every node's client and controller port refuse a client without a certificate; "
                    "no Kafka answer in clear")
        create_topic(cluster, TOPIC, min_isr, violations)
        log(f"ok three nodes ready; {TOPIC}: {PARTITIONS} partitions, RF=3, min.insync.replicas={min_isr}")

        workload = Workload(cluster.bootstrap, TOPIC, f"h{seed}", 2, rate, acks_all=True, java=java,
                            security=security(cluster), java_config=java_config)
        workload.start()
        if not workload.java_ready():
            violations.add(f"the Java producer is not ready: {'; '.join(workload.java_problems())}")
        if not wait_until(lambda: workload.acks_since(0), 30):
            silent = ", ".join(f"{client} on partition {p}" for client, p in workload.silent(0))
            violations.add(f"no acks=all write acknowledged by {silent} within 30 s of starting "
                           f"(acked {workload.acked_count()}, client errors {dict(workload.client_errors)}, "
                           f"failed {dict(workload.failed)}, java {workload.java_report()}; one produce "
                           f"without retries to {TOPIC}-0 gets {workload.probe()}); the nemesis does not run")
        else:
            schedule = [kind for kind in FAULT_KINDS for _ in range(counts[kind])]
            rng.shuffle(schedule)
            try:
                for i, kind in enumerate(schedule):
                    fault = nemesis.run(kind, workload)
                    windows = ", ".join(f"{TOPIC}-{p} {w:.2f} s" for p, w in sorted(fault.windows.items()))
                    log(f"fault {i + 1}/{len(schedule)} at {fault.wall}: {kind} of node(s) {fault.victims} "
                        f"(leader of {TOPIC} partitions {fault.partitions}; active controller {fault.controller}): "
                        f"{'; '.join(fault.notes)}; unavailable: {windows or '-'}")
            except Abort as abort:
                log(f"nemesis stopped: {abort}")
        workload.stop()
        java_report = workload.java_report()
        results["java"] = java_report
        log(f"{TOPIC}: producers stopped: librdkafka sent {workload.sent}, acked "
            f"{workload.acked_count() - java_report['acked']}, failed {dict(workload.failed)}, undelivered "
            f"{workload.undelivered}, client errors {dict(workload.client_errors)}; java sent {java_report['sent']}, "
            f"acked {java_report['acked']}, failed {java_report['failed']}, undelivered "
            f"{java_report['undelivered']}, client log lines {java_report['log_lines']}")
        for java_producer in workload.java_producers:
            if java_producer.failed_examples:
                log(f"{TOPIC}: java producer {java_producer.index} failed deliveries, e.g. "
                    + "; ".join(java_producer.failed_examples))
            if java_producer.log:
                log(f"{TOPIC}: java producer {java_producer.index}: last of its {java_producer.log_lines} log "
                    f"line(s): " + " | ".join(list(java_producer.log)[-5:]))
        for problem in workload.java_problems():
            violations.add(problem)
        for error in workload.fatal:
            violations.add(f"fatal idempotent-producer error: {error}")
        for error in workload.harness_errors:
            violations.add(f"harness error (not the broker's fault): {error}")
        if workload.acked_without_offset:
            log(f"{TOPIC}: {workload.acked_without_offset} acknowledgement(s) came without an offset "
                f"(DUPLICATE_SEQUENCE_NUMBER answers); checked for presence only")

        marks = {}
        all_up = wait_until(lambda: all(cluster.ready(n) for n in NODES), START_TIMEOUT)
        if all_up:
            marks[TOPIC], tally = check(workload, cluster, violations, lossy=False)
            if tally:
                results["history"] = {k: tally[k] for k in ("acked", "consumed", *KINDS, "resent_after_bump", "java_acked",
                                                            *(f"java_{k}" for k in KINDS))}
                log(f"{TOPIC}: acked {tally['acked']} (java acked {tally['java_acked']}), read back "
                    f"{tally['consumed']} below the high watermarks {marks[TOPIC]}: "
                    + ", ".join(f"{k.replace('_', ' ')} {tally[k]}" + (f" (java {tally[f'java_{k}']})" if k != "foreign" else "")
                           for k in KINDS))

        # acks=1: a few leader kills; what leaders acknowledged and then lost is counted.
        if acks1_kills and all_up:
            create_topic(cluster, ACKS1_TOPIC, 1, violations)
            acks1 = Workload(cluster.bootstrap, ACKS1_TOPIC, f"a{seed}", 1, rate, acks_all=False,
                             security=security(cluster))
            acks1.start()
            if wait_until(lambda: acks1.acks_since(0), 30):
                try:
                    for i in range(acks1_kills):
                        fault = nemesis.run("SIGKILL", acks1)
                        log(f"acks=1 fault {i + 1}/{acks1_kills} at {fault.wall}: SIGKILL of node {fault.victims} "
                            f"(leader of {ACKS1_TOPIC} partitions {fault.partitions}): {'; '.join(fault.notes)}")
                except Abort as abort:
                    log(f"acks=1 nemesis stopped: {abort}")
            else:
                violations.add(f"{ACKS1_TOPIC}: no acks=1 write acknowledged on every partition within 30 s")
            acks1.stop()
            for error in acks1.harness_errors:
                violations.add(f"harness error (not the broker's fault): {error}")
            marks[ACKS1_TOPIC], tally = check(acks1, cluster, violations, lossy=True)
            if tally:
                results["acks1"] = {k: tally[k] for k in ("acked", "consumed", *KINDS)}
                log(f"acks=1 ({acks1_kills} leader SIGKILLs; reported, not asserted): acked {tally['acked']}, "
                    f"lost {tally['lost']} ({100.0 * tally['lost'] / max(1, tally['acked']):.3f} %), "
                    + ", ".join(f"{k.replace('_', ' ')} {tally[k]}" for k in KINDS if k != "lost"))

        # Byte-identical replicas, read after every node stopped cleanly.
        for problem in cluster.terminate(NODES):
            violations.add(f"final stop: {problem}")
        directories = {n: cluster.data_dir(n) for n in NODES}
        for w, lossy in ((workload, False), (acks1, True)):
            if w is None or marks.get(w.topic) is None:
                continue
            name = "acks1" if lossy else "history"
            tally = check_on_disk(w, cluster, NODES[0], marks[w.topic], violations, lossy, results.get(name))
            if tally:
                results[f"{name}_on_disk"] = {k: tally[k] for k in ("acked", "consumed", *KINDS, "resent_after_bump")}
                log(f"{w.topic} in node {NODES[0]}'s segment files: {tally['consumed']} records below the high "
                    f"watermarks: " + ", ".join(f"{k.replace('_', ' ')} {tally[k]}" for k in KINDS))
        for topic, topic_marks in marks.items():
            if topic_marks is None:
                continue
            ok, problems = compare_replicas(directories, topic, topic_marks)
            for line in ok:
                log(f"ok {line}")
            for problem in problems:
                violations.add(problem)
    except Abort as abort:
        violations.add(f"aborted: {abort}")
    finally:
        for w in (workload, acks1):
            if w is not None:
                w.halt()
        cluster.shutdown_all()
        network.teardown()

    for kind in FAULT_KINDS:
        faults = [f for f in nemesis.faults if f.kind == kind and f.topic == TOPIC]
        if faults:
            samples = [w for f in faults for w in f.windows.values()]
            results[kind] = {"faults": len(faults), "windows": [round(w, 3) for w in samples]}
            log(f"unavailability on {kind} of the leader ({len(faults)} faults): {describe(samples)}")
            for client in CLIENTS:
                own = [w for f in faults for w in f.client_windows.get(client, {}).values()]
                if own:
                    results[kind][f"{client}_windows"] = [round(w, 3) for w in own]
                    log(f"  ... {client} producers' own acks: {describe(own)}")
            if kind in ("SIGKILL", "SIGTERM", "SIGSTOP", "partition"):
                for label, chosen in (("the active controller", True), ("not the controller", False)):
                    part = [w for f in faults if (f.controller in f.victims) == chosen for w in f.windows.values()]
                    if part:
                        log(f"  ... victim {label}: {describe(part)}")
    log(f"replication-result {json.dumps(results)}")
    log(f"took {now() - began:.0f} s")
    if violations.items:
        for item in violations.items:
            log(f"FAIL {item}")
        cluster.logs_tail()
        log(f"work dir kept: {work}")
        sys.exit(1)
    if os.environ.get("OXBOW_REPLICATION_KEEP") != "1":
        shutil.rmtree(work, ignore_errors=True)
    if skipped:
        for reason in skipped:
            skip(reason)
        sys.exit(SKIP_EXIT)
    log("ok replication history" + (" (mutual TLS)" if tls else "") + ": every acknowledged record read back "
        "once, at its offset, in order; replicas byte-identical")


if __name__ == "__main__":
    main()
