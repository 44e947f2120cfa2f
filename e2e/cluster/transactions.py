"""Transactions on three `oxbow` nodes under faults, checked from the outside.

Three transactional producers write transactions of 9 records, 3 to each of the 3
partitions of an RF=3, min.insync.replicas=2 topic (one transaction in four aborted on
purpose): two librdkafka ones (transaction version 1: AddPartitionsToTxn, one epoch per
session) and one on the Java client, Kafka 4.1.2 (e2e/peers/kafka-streams/TxnWriter.java, a
child process), which uses transaction version 2 as Oxbow finalizes it: no
AddPartitionsToTxn (the partition leaders add the partitions through the coordinator, maybe
on another node, on Produce v12) and an epoch bump at every EndTxn. Meanwhile a
consume-transform-produce worker copies an input topic to an output topic in small
transactions that carry the group's offsets, paced to span the faults. And a nemesis, one
fault at a time, alternates two kinds of faults:

- SIGKILL of the transaction coordinator of a producer's transactional.id (the leader of its
  `__transaction_state` partition; each producer's in turn) or of a leader of the data topic,
  restarted on its data;
- (root with `ip netns`) a network partition: each node runs in its own network namespace
  and the victim is cut off from the other brokers and the quorum, not from its clients,
  for well past broker.session.timeout.ms (it is fenced and its leaderships move while it
  still runs and clients still reach it), then healed. The victim is in turn the copier's
  group coordinator (the leader of its `__consumer_offsets` partition), a producer's
  transaction coordinator (the Java writer's first), and a leader of the data topic.
  Without namespaces the partitions are reported as skipped (exit 77 after the checks) and
  only the kills run.

After each fault, the next waits until every node is ready and unfenced and every partition
(the internal topics' too) has a live leader and all its replicas in sync. Then, read at
read_committed:

- every transaction whose commit returned is there whole (all 9 records), every aborted one
  is absent, one whose commit failed with an unknown outcome is all there or all absent;
  no record twice; the figures per client;
- the Java writer used transaction version 2: its producer epoch, as its coordinator
  describes it (kafka-transactions describe), is at least the number of transactions it
  committed or aborted (with version 1 only a new session bumps it);
- the output topic holds every input record exactly once, and the group's committed
  offsets are the input's end offsets.

The Java writer handles errors as the KafkaProducer documentation says (fenced, out of order,
not authorized: fatal, a new producer, the outcome unknown; another error: abortTransaction;
a commit timing out: retried once, else unknown and a new producer) and prints one line per
outcome, read here; its stderr is `java-writer.log` in the work directory, shown on a failure.

librdkafka's send_offsets_to_transaction can block long past its timeout when the group
coordinator's broker handle was decommissioned (the node left a Metadata answer while
fenced, as after a partition: confluentinc/librdkafka#5511, #5456). The copier gives such a
call up after ABANDON, keeps that producer as a zombie and starts over with a new instance
of the same transactional.id, which fences it: an unknown outcome, checked like the others.

Usage: transactions.py BINARY [--kills N] [--partitions N]

Knobs (environment): OXBOW_TXN_SEED (7, the victims' order), OXBOW_TXN_NETNS (auto | 0 | 1:
network namespaces, needed by --partitions), OXBOW_TXN_DEBUG (librdkafka debug contexts for
the copier's clients, e.g. eos,cgrp,protocol; to stderr). A client thread that stalls is
reported with the client call it is in; so is the Java writer when it goes STALL without an
outcome. Times in the log are UTC, as the node logs print them; on a failure the node logs'
tails follow and the work directory is kept."""
import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_cluster import NODES, Cluster, Network  # noqa: E402
from oxbow_e2e import SKIP_EXIT, skip  # noqa: E402

from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
JAVA_RUN = os.path.join(ROOT, "e2e", "peers", "kafka-streams", "run")
KAFKA_TRANSACTIONS = os.path.join(ROOT, "e2e", "peers", "kafka", "bin", "kafka-transactions")
TOPIC, SOURCE, SINK, GROUP = "txn-history", "ctp-source", "ctp-sink", "ctp-group"
JAVA_ID = "java-writer"  # its __transaction_state partition (2) is neither librdkafka writer's
MAX_EPOCH = 32766  # past it a producer id is rotated and the epoch starts again from 0
PARTITIONS = 3
STATE_PARTITIONS = 3
INPUT = 3000
OFFSETS_PARTITIONS = 3
SESSION_TIMEOUT = 3.0   # broker.session.timeout.ms, Oxbow's default, in seconds
READY_TIMEOUT = 90.0    # a restarted node is ready; then the cluster is whole again
FAILOVER_TIMEOUT = 30.0  # a cut-off node is fenced and its leaderships move away
CUT_HOLD = 4 * SESSION_TIMEOUT  # how long a node stays cut off, at least
# What one fault takes, about (the pause before it, the fault, the recovery), in seconds:
# the copier's pace is set from them so that its copy spans the faults.
KILL_SECONDS, PARTITION_SECONDS = 8.0, 18.0
ABANDON = 75.0  # a copier call still blocked this long after its 60 s timeout began is abandoned
STALL = 150.0  # a client call that lasts this long has stalled (they all time out after 60 s)
DEBUG = os.environ.get("OXBOW_TXN_DEBUG", "")  # librdkafka debug contexts of the copier's clients


def utc():
    wall = time.time()
    return time.strftime("%H:%M:%S", time.gmtime(wall)) + f".{int(wall % 1 * 1000):03d}Z"


def log(message):
    print(f"[{utc()}] {message}", flush=True)


def fail(message):
    print(f"FAIL {message}", flush=True)
    raise SystemExit(1)


def java_hash_partition(key, partitions):
    """Kafka's partition of a coordinator key: abs(String.hashCode) % partitions."""
    h = 0
    for unit in key:
        h = (h * 31 + ord(unit)) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return 0 if h == -(1 << 31) else abs(h) % partitions


def leader_of(cluster, topic, partition):
    for node in cluster.nodes:
        view = cluster.metadata(node)
        if view and (topic, partition) in view["partitions"]:
            leader = view["partitions"][(topic, partition)]["leader"]
            if leader in cluster.nodes:
                return leader
    return None


def views(cluster, nodes=NODES):
    """{node: its own Metadata answer} of the nodes that answer."""
    return {n: v for n, v in ((n, cluster.metadata(n)) for n in nodes) if v is not None}


def unsettled(cluster):
    """What keeps the cluster from being whole, one line per node (empty when whole): every
    node ready and, in every node's own Metadata answer, every node unfenced and every
    partition (the internal topics' too) led by a node with all its replicas in sync."""
    problems = []
    for node in NODES:
        if not cluster.ready(node):
            problems.append(f"node {node} not ready")
            continue
        view = cluster.metadata(node)
        if view is None:
            problems.append(f"node {node} gives no Metadata answer")
            continue
        wrong = [f"{t}-{p} (leader {s['leader']}, isr {sorted(s['isr'])}, replicas {sorted(s['replicas'])})"
                 for (t, p), s in sorted(view["partitions"].items())
                 if s["leader"] not in NODES or not set(s["replicas"]) <= set(s["isr"])]
        if view["brokers"] != set(NODES) or wrong:
            problems.append(f"node {node} sees brokers {sorted(view['brokers'])}; " + (", ".join(wrong) or "-"))
    return problems


def await_settled(cluster, after):
    """Waits until the cluster is whole again (see `unsettled`); fails after READY_TIMEOUT."""
    started = time.monotonic()
    while True:
        problems = unsettled(cluster)
        if not problems:
            return time.monotonic() - started
        if time.monotonic() - started > READY_TIMEOUT:
            fail(f"{READY_TIMEOUT:.0f} s after {after} the cluster is not whole again: " + "; ".join(problems))
        time.sleep(0.3)


def active_controller(cluster):
    return next((c for c in map(cluster.controller, NODES) if c is not None), None)


def cut_off(cluster, network, victim, target, what):
    """Cuts `victim` off from the other nodes (brokers and quorum; clients still reach it)
    until they have fenced it and a survivor leads `target`, holds the cut for CUT_HOLD in
    all (and 2 s after that at least), heals. Returns a line for the log."""
    others = [n for n in NODES if n != victim]
    started = time.monotonic()
    network.cut(victim, others)

    def moved():
        seen = views(cluster, others)
        return len(seen) == len(others) and all(
            victim not in v["brokers"] and v["partitions"].get(target, {}).get("leader") in others
            for v in seen.values())

    while not moved():
        if time.monotonic() - started > FAILOVER_TIMEOUT:
            now = {n: (sorted(v["brokers"]), v["partitions"].get(target)) for n, v in views(cluster).items()}
            fail(f"node {victim} cut off ({what}): {FAILOVER_TIMEOUT:.0f} s later the other nodes have not "
                 f"fenced it and moved {target[0]}-{target[1]} away; (brokers, {target[0]}-{target[1]}) "
                 f"per node: {now}")
        time.sleep(0.1)
    moved_after = time.monotonic() - started
    leader = next(iter(views(cluster, others).values()), {"partitions": {}})["partitions"].get(target, {}).get("leader")
    time.sleep(max(CUT_HOLD - moved_after, 2.0))
    held = time.monotonic() - started
    network.heal()
    return (f"fenced and {target[0]}-{target[1]} led by node {leader} after {moved_after:.1f} s; "
            f"healed after {held:.1f} s")


class Stuck(Exception):
    """A client call that outlived its own timeout by far (abandoned)."""


class Client(threading.Thread):
    """A client thread that notes which client call it is in, for the report of a stall."""

    def __init__(self):
        super().__init__(daemon=True)
        self.call = ("starting", utc(), time.monotonic())

    def step(self, call):
        self.call = (call, utc(), time.monotonic())

    def stuck(self):
        call, wall, since = self.call
        return f"in {call} since {wall} ({time.monotonic() - since:.0f} s)"


class Writer(Client):
    """Transactions of 3 records per partition; every fourth aborted on purpose."""

    def __init__(self, bootstrap, transactional_id):
        super().__init__()
        self.bootstrap, self.transactional_id = bootstrap, transactional_id
        self.committed, self.aborted, self.unknown = [], [], []
        self.stopping = threading.Event()
        self.errors = []

    def producer(self):
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.transactional_id,
                             "linger.ms": 2, "transaction.timeout.ms": 20000, "message.timeout.ms": 20000})
        self.step("init_transactions")
        producer.init_transactions(60)
        return producer

    def run(self):
        try:
            producer = self.producer()
            k = 0
            while not self.stopping.is_set():
                k += 1
                name = f"{self.transactional_id}-t{k}"
                try:
                    self.step(f"transaction {name}")
                    producer.begin_transaction()
                    for p in range(PARTITIONS):
                        for i in range(3):
                            producer.produce(TOPIC, value=f"{name}-p{p}-{i}".encode(), partition=p)
                    producer.flush(30)
                    if k % 4 == 0:
                        producer.abort_transaction(30)
                        self.aborted.append(name)
                    else:
                        producer.commit_transaction(30)
                        self.committed.append(name)
                except KafkaException as error:
                    kafka_error = error.args[0]
                    if kafka_error.txn_requires_abort():
                        try:
                            self.step(f"abort_transaction of {name} after {kafka_error.name()}")
                            producer.abort_transaction(60)
                            self.aborted.append(name)
                        except KafkaException:
                            self.unknown.append(name)
                            producer = self.producer()
                    elif kafka_error.retriable():
                        # The commit's outcome is not known to the client.
                        self.unknown.append(name)
                        producer = self.producer()
                    else:
                        self.unknown.append(name)
                        producer = self.producer()
        except Exception as error:  # reported by the test
            self.errors.append(repr(error))


class Copier(Client):
    """Consume-transform-produce from SOURCE to SINK with the offsets in the transaction,
    one transaction of up to 10 records every `pace` seconds at most."""

    def __init__(self, bootstrap, pace):
        super().__init__()
        self.bootstrap, self.pace = bootstrap, pace
        self.transactions = self.aborts = 0
        self.done = threading.Event()
        self.finished = None  # time.monotonic() when it caught up
        self.zombies = []  # producers abandoned in a call that outlived its timeout, kept from rd_kafka_destroy
        self.errors = []

    def clients(self):
        debug = {"debug": DEBUG} if DEBUG else {}
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed", **debug})
        consumer.subscribe([SOURCE])
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "ctp-copier",
                             "linger.ms": 2, "transaction.timeout.ms": 20000, **debug})
        self.step("init_transactions")
        producer.init_transactions(60)
        return consumer, producer

    def bounded(self, call, *args):
        """call(*args, 60) in a helper thread. librdkafka's send_offsets_to_transaction can
        block far past its timeout once the group coordinator's broker handle has been
        decommissioned (it left a Metadata answer while fenced): confluentinc/librdkafka#5511,
        #5456. Past ABANDON the call is given up as an unknown outcome (Stuck)."""
        outcome = {}

        def target():
            try:
                outcome["value"] = call(*args, 60)
            except BaseException as error:
                outcome["error"] = error
        helper = threading.Thread(target=target, daemon=True)
        helper.start()
        helper.join(ABANDON)
        if helper.is_alive():
            raise Stuck()
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    def rewind(self, consumer):
        self.step("committed (rewind)")
        for tp in consumer.committed(consumer.assignment(), 60):
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))

    def caught_up(self, consumer):
        assignment = consumer.assignment()
        if len(assignment) != PARTITIONS:
            return False
        self.step("committed (caught up?)")
        committed = consumer.committed(assignment, 30)
        ends = [consumer.get_watermark_offsets(TopicPartition(SOURCE, tp.partition), 30)[1] for tp in committed]
        return [tp.offset for tp in committed] == ends

    def run(self):
        try:
            consumer, producer = self.clients()
            deadline = time.monotonic() + 600 + self.pace * INPUT / 10
            while time.monotonic() < deadline:
                # Small transactions at a steady pace, so the copy spans the faults.
                self.step("consume")
                batch = [m for m in consumer.consume(10, 1.0) if not m.error()]
                time.sleep(self.pace)
                if not batch:
                    try:
                        if self.caught_up(consumer):
                            self.finished = time.monotonic()
                            self.done.set()
                            break
                    except KafkaException:
                        pass
                    continue
                try:
                    self.step("begin_transaction and produce")
                    producer.begin_transaction()
                    for message in batch:
                        producer.produce(SINK, value=message.value().replace(b"in-", b"out-"),
                                         partition=message.partition())
                    self.step("send_offsets_to_transaction")
                    self.bounded(producer.send_offsets_to_transaction, consumer.position(consumer.assignment()),
                                 consumer.consumer_group_metadata())
                    self.step("commit_transaction")
                    self.bounded(producer.commit_transaction)
                    self.transactions += 1
                except Stuck:
                    # A zombie: the new producer's init_transactions fences it, aborting its
                    # transaction; it must not write once it wakes up. Start over.
                    self.aborts += 1
                    self.zombies.append(producer)
                    log(f"copier: {self.call[0]} still blocked {time.monotonic() - self.call[2]:.0f} s after "
                        f"its call (timeout 60 s; confluentinc/librdkafka#5511); producer abandoned as a zombie "
                        f"and fenced by a new one")
                    self.step("consumer close after a stuck call")
                    consumer.close()
                    consumer, producer = self.clients()
                except KafkaException as error:
                    self.aborts += 1
                    if error.args[0].txn_requires_abort():
                        try:
                            self.step(f"abort_transaction after {error.args[0].name()}")
                            producer.abort_transaction(60)
                            self.rewind(consumer)
                            continue
                        except KafkaException:
                            pass
                    # Fatal, or an outcome not known: start over from the committed offsets.
                    self.step(f"consumer close after {error.args[0].name()}")
                    consumer.close()
                    consumer, producer = self.clients()
            consumer.close()
        except Exception as error:  # reported by the test
            self.errors.append(repr(error))


class JavaWriter(Client):
    """The third writer: the same transactions from the Java client (Kafka 4.1.2,
    e2e/peers/kafka-streams/TxnWriter.java) in a child process, which uses transaction
    version 2 with Oxbow: no AddPartitionsToTxn (the partition leaders add the partitions,
    through the coordinator, on Produce v12) and an epoch bump at every EndTxn. This thread
    follows its stdout: `call WHAT` (the client call it is in, for a stall's report),
    `session N` (its Nth producer's initTransactions returned) and one line per transaction,
    `committed|aborted|unknown NAME`. Its stderr (the client's warnings, why an outcome was
    not the planned one) goes to `log_path`. Closing its stdin stops it."""

    def __init__(self, bootstrap, log_path):
        super().__init__()
        self.transactional_id, self.log_path = JAVA_ID, log_path
        self.command = [JAVA_RUN, "--class", "TxnWriter", bootstrap, TOPIC, JAVA_ID]
        self.committed, self.aborted, self.unknown = [], [], []
        self.sessions = 0
        self.quiet_since = time.monotonic()  # the last outcome line (or the start)
        self.stalls = []  # every wait of more than STALL for an outcome line
        self.process = None

    def start(self):
        with open(self.log_path, "ab") as stderr:
            # Its own session: a ^C to the suite reaches it as the end of its stdin instead.
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=stderr, start_new_session=True)
        self.quiet_since = time.monotonic()
        super().start()

    def run(self):
        for raw in self.process.stdout:
            kind, _, rest = raw.decode(errors="replace").strip().partition(" ")
            if kind == "call":
                self.step(rest)
            elif kind == "session":
                self.sessions = int(rest)
            elif kind in ("committed", "aborted", "unknown"):
                self.note_stall()
                getattr(self, kind).append(rest)
                self.quiet_since = time.monotonic()
        # The end: an exit long after the last outcome is a stall too.
        self.note_stall()

    def note_stall(self):
        quiet = time.monotonic() - self.quiet_since
        if quiet > STALL:
            self.stalls.append(f"no outcome for {quiet:.0f} s until {utc()}, {self.stuck()}")

    def stop(self):
        """Tells it to stop (the end of its stdin): it ends the transaction under way. What
        went wrong before: an exit of its own."""
        if self.process.poll() is not None:
            return f"exited with {self.process.returncode} before it was told to stop"
        self.process.stdin.close()
        return None

    def finish(self, within):
        """Waits for its exit after `stop`; what went wrong, if anything (it is killed then)."""
        try:
            code = self.process.wait(within)
        except subprocess.TimeoutExpired:
            report = f"still running {within:.0f} s after it was told to stop: {self.stuck()}"
            self.kill()
            return report
        self.join(10)
        if code != 0:
            return f"exited with {code}"
        return None

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines=40):
        if os.path.exists(self.log_path):
            with open(self.log_path, "rb") as f:
                tail = f.read().decode(errors="replace").splitlines()[-lines:]
            print(f"--- {os.path.basename(self.log_path)} (tail) ---\n" + "\n".join(tail), flush=True)


@contextlib.contextmanager
def java_writer(cluster):
    """The Java writer, its stderr in the work directory; on a failure its log's tail is
    shown (before the nodes'), and it never outlives the test."""
    writer = JavaWriter(cluster.bootstrap, os.path.join(cluster.work, "java-writer.log"))
    try:
        yield writer
    except BaseException:
        writer.log_tail()
        raise
    finally:
        writer.kill()


def producer_epoch(bootstrap, transactional_id):
    """(producer id, epoch) of `transactional_id` as its coordinator describes it
    (DescribeTransactions, through Kafka's kafka-transactions: confluent-kafka has no call
    for it)."""
    done = subprocess.run([KAFKA_TRANSACTIONS, "--bootstrap-server", bootstrap, "describe",
                           "--transactional-id", transactional_id],
                          capture_output=True, text=True, timeout=120)
    rows = [line.split() for line in done.stdout.splitlines()]
    header = next((i for i, row in enumerate(rows) if "ProducerEpoch" in row), None)
    if done.returncode != 0 or header is None or header + 1 >= len(rows):
        fail(f"kafka-transactions describe --transactional-id {transactional_id} (exit {done.returncode}): "
             f"{(done.stdout + done.stderr).strip()[-1500:]}")
    row = rows[header + 1]
    return int(row[rows[header].index("ProducerId")]), int(row[rows[header].index("ProducerEpoch")])


def figures(committed, aborted, unknown, per_txn):
    return (f"{len(committed)} committed transactions whole ({len(committed) * 9} records), "
            f"{len(aborted)} aborted ones absent, {len(unknown)} of unknown outcome all-or-nothing "
            f"({sum(1 for n in unknown if n in per_txn)} visible)")


def check_epoch_bumps(cluster, java):
    """The Java writer used transaction version 2: with version 1 only a new session (and
    a coordinator's abort of a timed-out transaction) bumps the producer epoch; with version
    2 every EndTxn does too, so the epoch its coordinator describes is at least the number of
    transactions it committed or aborted."""
    ended = len(java.committed) + len(java.aborted)
    if ended <= java.sessions:
        fail(f"the Java writer ended only {ended} transactions in {java.sessions} sessions: too few to tell its "
             f"transaction version; see {java.log_path}")
    producer_id, epoch = producer_epoch(cluster.bootstrap, JAVA_ID)
    if ended + java.sessions > MAX_EPOCH:
        log(f"ok the Java writer ended {ended} transactions, past the epochs of one producer id (now producer "
            f"id {producer_id}, epoch {epoch}): its epochs were not checked")
        return
    if epoch < ended:
        fail(f"the Java writer's producer epoch is {epoch} (producer id {producer_id}) after {java.sessions} "
             f"sessions and {ended} transactions committed or aborted: transaction version 2 (an epoch bump "
             f"at every EndTxn) was not used")
    log(f"ok the Java writer used transaction version 2: producer {producer_id}'s epoch is {epoch} after "
        f"{java.sessions} sessions and {ended} transactions committed or aborted")


def read_committed(bootstrap, topic, idle=5.0, timeout=300.0):
    """Every value in `topic` at read_committed: read until none came for `idle` seconds; a
    read cut short by `timeout` fails (it would look like missing transactions)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    # Assigned, not subscribed: no group join to wait for before the first record.
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    values, last, deadline = [], time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline and time.monotonic() - last < idle:
        message = consumer.poll(0.3)
        if message is not None and not message.error():
            values.append(message.value().decode())
            last = time.monotonic()
    cut_short = time.monotonic() - last < idle
    consumer.close()
    if cut_short:
        fail(f"{topic} not read to its end at read_committed within {timeout:.0f} s ({len(values)} records)")
    return values


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--kills", type=int, default=6, help="SIGKILLs of coordinators and leaders")
    parser.add_argument("--partitions", type=int, default=3,
                        help="network partitions (a node cut off from the others), alternating with the kills")
    args = parser.parse_args()
    netns_mode = os.environ.get("OXBOW_TXN_NETNS", "auto")
    use_netns = Network.available() if netns_mode == "auto" else netns_mode == "1"
    skipped = []
    if args.partitions and not use_netns:
        skipped.append(f"transactions under network partitions: they need root and `ip netns` "
                       f"(OXBOW_TXN_NETNS={netns_mode}); only the SIGKILLs ran")
        args.partitions = 0
    work = tempfile.mkdtemp(prefix="oxbow-txn-cluster-")
    network = Network(use_netns)
    cluster = Cluster(args.binary, work, network, cluster_id="txn-history", extra=[
        f"transaction.state.log.num.partitions={STATE_PARTITIONS}",
        "transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2",
        f"offsets.topic.num.partitions={OFFSETS_PARTITIONS}", "offsets.topic.replication.factor=3",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
    ])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rng = random.Random(int(os.environ.get("OXBOW_TXN_SEED", "7")))
    where = f"network namespaces on {network.subnet}.0/24" if use_netns else "loopback"
    log(f"work dir {work}, {where}; faults: {args.kills} SIGKILLs, {args.partitions} network partitions")
    # The Java writer is compiled before the cluster starts (a javac error fails here).
    subprocess.run([JAVA_RUN, "--compile-only"], check=True)
    try:
        network.setup()
        with cluster.running(), java_writer(cluster) as java:
            run(cluster, network, args, rng, java)
    finally:
        network.teardown()
    for reason in skipped:
        skip(reason)
    if skipped:
        sys.exit(SKIP_EXIT)


def run(cluster, network, args, rng, java):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topics = [NewTopic(t, num_partitions=PARTITIONS, replication_factor=3,
                       config={"min.insync.replicas": "2"}) for t in (TOPIC, SOURCE, SINK)]
    for future in admin.create_topics(topics).values():
        future.result(60)
    plain = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(INPUT):
        plain.produce(SOURCE, value=f"in-{i}".encode(), partition=i % PARTITIONS)
    if plain.flush(60):
        fail("the input was not all acknowledged")
    log(f"ok three nodes; {TOPIC}, {SOURCE}, {SINK}: {PARTITIONS} partitions, RF=3, min.insync.replicas=2; "
        f"{INPUT} input records")
    writers = [Writer(cluster.bootstrap, f"writer-{n}") for n in range(2)]
    # The copy (INPUT / 10 transactions) spans most of the faults, the group coordinator's too.
    nemesis = args.kills * KILL_SECONDS + args.partitions * PARTITION_SECONDS
    copier = Copier(cluster.bootstrap, max(0.05, 0.8 * nemesis / (INPUT / 10)))
    began = time.monotonic()
    for thread in (*writers, java, copier):
        thread.start()
    await_settled(cluster, "the start")
    # The faults' transaction coordinators: each writer's in turn, the Java writer's (on
    # transaction version 2) among them.
    transactional = (*writers, java)

    def coordinator(writer):
        state = java_hash_partition(writer.transactional_id, STATE_PARTITIONS)
        return ("__transaction_state", state), f"transaction coordinator of {writer.transactional_id}"

    # Kills and network partitions alternate, one fault at a time.
    schedule = []
    for i in range(max(args.kills, args.partitions)):
        if i < args.kills:
            schedule.append(("SIGKILL", i))
        if i < args.partitions:
            schedule.append(("partition", i))
    done = {"SIGKILL": 0, "partition": 0}
    for n, (kind, i) in enumerate(schedule):
        time.sleep(4)
        if kind == "SIGKILL" and i % 2 == 0:
            target, what = coordinator(transactional[i // 2 % len(transactional)])
        elif kind == "SIGKILL":
            target, what = (TOPIC, rng.randrange(PARTITIONS)), "partition leader"
        elif i % 3 == 0:
            target = ("__consumer_offsets", java_hash_partition(GROUP, OFFSETS_PARTITIONS))
            what = f"group coordinator of {GROUP}"
        elif i % 3 == 1:
            # The Java writer's first: by default it is the only coordinator cut off.
            target, what = coordinator(transactional[(i // 3 + 2) % len(transactional)])
        else:
            target, what = (TOPIC, rng.randrange(PARTITIONS)), "partition leader"
        victim = leader_of(cluster, *target)
        if victim is None:
            log(f"fault {n + 1}/{len(schedule)}: no leader of {target[0]}-{target[1]} known; skipping a {kind}")
            continue
        what = f"{what}, leader of {target[0]}-{target[1]}; active controller {active_controller(cluster)}"
        copying = "copier still copying" if not copier.done.is_set() else "copier done"
        if kind == "SIGKILL":
            cluster.kill(victim)
            log(f"fault {n + 1}/{len(schedule)}: SIGKILL node {victim} ({what}; {copying})")
            time.sleep(3)
            cluster.start(victim)
            outcome = "restarted"
        else:
            log(f"fault {n + 1}/{len(schedule)}: cut node {victim} off from the other nodes ({what}; {copying})")
            outcome = cut_off(cluster, network, victim, target, what)
        done[kind] += 1
        took = await_settled(cluster, f"the {kind} of node {victim} ({what})")
        log(f"  {outcome}; whole again {took:.1f} s later")
    time.sleep(3)
    stopped = time.monotonic()
    for writer in writers:
        writer.stopping.set()
    early = java.stop()
    if early:
        fail(f"the Java writer {early}; see {java.log_path}")
    for writer in writers:
        writer.join(120)
    stalled = [f"{w.transactional_id} {w.stuck()}" for w in writers if w.is_alive()]
    if stalled:
        fail(f"writers still running 120 s after they were told to stop: {'; '.join(stalled)}")
    late = java.finish(max(10.0, 120 - (time.monotonic() - stopped)))
    if late:
        fail(f"the Java writer {JAVA_ID} {late}")
    if java.stalls:
        fail(f"the Java writer {JAVA_ID} stalled: {'; '.join(java.stalls[:3])}")
    # Every client call has a timeout of 60 s at most: one that lasts far longer is a stall.
    deadline = time.monotonic() + 600 + copier.pace * INPUT / 10
    while copier.is_alive() and time.monotonic() < deadline:
        copier.join(1)
        if copier.is_alive() and time.monotonic() - copier.call[2] > STALL:
            fail(f"the copier stalled ({copier.transactions} transactions, {copier.aborts} failed): it is "
                 f"{copier.stuck()}")
    errors = [e for t in (*writers, copier) for e in t.errors]
    if errors:
        fail(f"client threads failed: {errors[:3]}")
    if not copier.done.is_set():
        fail(f"the copier did not catch up with its input ({copier.transactions} transactions, {copier.aborts} "
             f"failed); it is {copier.stuck()}")
    faults = f"{done['SIGKILL']} SIGKILLs, {done['partition']} network partitions in {time.monotonic() - began:.0f} s"
    values = read_committed(cluster.bootstrap, TOPIC)
    if len(values) != len(set(values)):
        fail(f"{len(values) - len(set(values))} records read twice at read_committed")
    per_txn = {}
    for value in values:
        name = value.rsplit("-p", 1)[0]
        per_txn[name] = per_txn.get(name, 0) + 1
    committed = [n for w in (*writers, java) for n in w.committed]
    aborted = [n for w in (*writers, java) for n in w.aborted]
    unknown = [n for w in (*writers, java) for n in w.unknown]
    partial = {n: c for n, c in per_txn.items() if c != 3 * PARTITIONS}
    if partial:
        fail(f"{len(partial)} transactions seen in part, e.g. {list(partial.items())[:5]}")
    missing = [n for n in committed if n not in per_txn]
    if missing:
        fail(f"{len(missing)} committed transactions missing, e.g. {missing[:5]}")
    visible_aborts = [n for n in aborted if n in per_txn]
    if visible_aborts:
        fail(f"{len(visible_aborts)} aborted transactions visible, e.g. {visible_aborts[:5]}")
    known = set(committed) | set(unknown)  # a set: the Java writer alone ends thousands
    strays = [n for n in per_txn if n not in known]
    if strays:
        fail(f"transactions visible that were neither committed nor of unknown outcome: {strays[:5]}")
    librdkafka = figures([n for w in writers for n in w.committed], [n for w in writers for n in w.aborted],
                         [n for w in writers for n in w.unknown], per_txn)
    log(f"ok librdkafka (transaction version 1, {len(writers)} writers): {librdkafka}; java (transaction "
        f"version 2): {figures(java.committed, java.aborted, java.unknown, per_txn)}; no record twice; {faults}")
    check_epoch_bumps(cluster, java)
    output = read_committed(cluster.bootstrap, SINK)
    expected = sorted(f"out-{i}" for i in range(INPUT))
    if sorted(output) != expected:
        dupes = len(output) - len(set(output))
        fail(f"the copy holds {len(output)} records ({dupes} twice), expected {INPUT}")
    log(f"ok consume-transform-produce: {INPUT} records copied exactly once in {copier.transactions} "
        f"transactions ({copier.aborts} failed and redone, {len(copier.zombies)} of them by a producer abandoned "
        f"in a stuck call and fenced) over {copier.finished - began:.0f} s; the group's "
        f"offsets are the input's ends")


if __name__ == "__main__":
    main()
