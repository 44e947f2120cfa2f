"""A produce history and its checks, for the cluster fault tests (e2e/cluster/replication.py).

- `Workload`: librdkafka producers (idempotent acks=all, or plain acks=1) writing unique
  values `TAG:producer:seq:xxx…` round-robin over a topic's partitions at a steady rate,
  keeping every delivery report (partition, offset, time) in flat arrays — a long run has
  millions. With `java=N`, also N Java-client producers (e2e/peers/java-client/
  HistoryProducer.java, the client's default idempotence: acks=all) writing
  `TAG-java:producer:seq:xxx…` at the same per-producer rate, their acks read from the
  process's stdout into the same arrays, so every check below covers both clients.
- `read_back`: every partition from the start to its high watermark.
- `security`: both take the clients' connection settings (e.g. certs.MutualTls: librdkafka
  settings as a dict, the Java producers' as a properties file); none means PLAINTEXT.
- `check_history`: every acknowledged record exactly once, at the offset it was acknowledged
  with; no value twice anywhere; each producer's values in sequence order per partition.
  One kind of second copy is told apart, from the batch headers in the segment files and the
  client's own log, and counted as `resent_after_bump` instead of failing: librdkafka's
  idempotent producer, answered OUT_OF_ORDER_SEQUENCE_NUMBER on one partition (a request
  that reached a new leader just before it knew it led, the next one just after: Apache
  Kafka answers the same), bumps its epoch and restarts the sequences of every partition,
  re-sending a possibly-persisted batch of another partition as new data under the new
  epoch (confluentinc/librdkafka#4953). A broker cannot tell such a copy from new records;
  a second copy under the same producer epoch, or under an epoch the client did not bump
  for that reason, or from the Java client, stays a failure.
- `compare_replicas`: the RecordBatch bytes below the high watermark in each node's segment
  files, byte for byte.
"""
import bisect
import collections
import fcntl
import logging
import os
import re
import struct
import subprocess
import sys
import threading
import time
from array import array

PARTITIONS = 3
VALUE_BYTES = 100
SEQ_BITS = 40  # a value's key: producer << SEQ_BITS | seq
JAVA_PRODUCER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers", "java-client",
                             "history-producer")
F_SETPIPE_SZ = 1031
JAVA_READY_TIMEOUT = 120.0  # the JVM is up and its producer exists (javac first, if the source changed)


def now():
    return time.monotonic()


class Acks:
    """One producer's delivery reports. Only that producer's thread appends (librdkafka
    calls delivery callbacks from poll(); a Java producer's acks are read by one thread from
    its stdout), so the four arrays stay aligned without a lock."""

    def __init__(self):
        self.partition, self.offset = array("b"), array("q")
        self.key, self.time = array("q"), array("d")

    def __len__(self):
        return len(self.offset)


class JavaProducer:
    """One Java-client producer process (HistoryProducer.java) and what it reported: acks on
    stdout (into `acks`, keys numbered after the librdkafka producers'), failed deliveries,
    fatal errors and its summary on stderr; anything else on stderr is the client's log."""

    def __init__(self, workload, index):
        self.workload, self.index = workload, index
        self.acks = Acks()
        self.last_ack = {p: 0.0 for p in range(workload.partitions)}
        self.failed = collections.Counter()  # exception class -> count
        self.failed_examples = []
        self.summary = None                  # {"sent", "acked", "failed", "undelivered"}
        self.ready = None                    # the "ready ..." line: its effective settings
        self.log = collections.deque(maxlen=20)
        self.log_lines = 0
        self.exit_status = None
        self.exited_early = False            # exited before it was asked to stop
        self.proc = None
        self.readers = []

    def start(self):
        w = self.workload
        config = ["--config", w.java_config] if w.java_config else []
        self.proc = subprocess.Popen(
            [JAVA_PRODUCER, "--bootstrap", w.bootstrap, "--topic", w.topic, "--tag", w.java_tag,
             "--producer", str(self.index), "--rate", f"{w.rate / (w.producers + w.java):.3f}",
             "--partitions", str(w.partitions), "--value-bytes", str(VALUE_BYTES), *config],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # The JVM's callbacks print from the client's I/O thread: a full pipe would stall the
        # producer itself, so give the readers a large one (Linux F_SETPIPE_SZ) to lag into.
        for pipe in (self.proc.stdout, self.proc.stderr):
            try:
                fcntl.fcntl(pipe.fileno(), F_SETPIPE_SZ, 1 << 20)
            except OSError:
                pass
        self.readers = [threading.Thread(target=self.guard, args=(self.read_acks,), daemon=True),
                        threading.Thread(target=self.guard, args=(self.read_errors,), daemon=True)]
        for reader in self.readers:
            reader.start()

    def guard(self, reader):
        try:
            reader()
        except Exception as error:
            self.workload.harness_errors.append(f"java producer {self.index}: {reader.__name__}: {error!r}")

    def read_acks(self):
        w, acks = self.workload, self.acks
        for line in self.proc.stdout:
            at = now()
            partition, offset, value = line.rstrip(b"\n").split(b" ", 2)
            partition, offset = int(partition), int(offset)
            if offset < 0:
                w.acked_without_offset += 1
                offset = -1
            acks.partition.append(partition)
            acks.offset.append(offset)
            acks.key.append(w.key_of(value))
            acks.time.append(at)
            self.last_ack[partition] = at
        self.exit_status = self.proc.wait()
        if not w.stopping.is_set():
            self.exited_early = True

    def read_errors(self):
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            word, _, rest = line.partition(" ")
            if word == "failed":
                # failed PARTITION SEQ ExceptionClass: message
                name = rest.split(" ", 2)[2].split(":", 1)[0] if rest.count(" ") >= 2 else rest
                self.failed[name] += 1
                if len(self.failed_examples) < 3:
                    self.failed_examples.append(rest)
            elif word == "fatal":
                self.workload.fatal.append(f"java producer {self.index}: {rest}")
            elif word == "summary":
                fields = rest.split()
                self.summary = {k: int(v) for k, v in zip(fields[::2], fields[1::2])}
            elif word == "ready":
                self.ready = rest
            else:
                self.log_lines += 1
                self.log.append(line)

    def stop(self, flush_timeout):
        """Asks the process to stop and flush for up to `flush_timeout` s; waits for it."""
        if self.proc is None:
            return
        try:
            self.proc.stdin.write(f"stop {flush_timeout}\n".encode())
            self.proc.stdin.close()
        except OSError:  # it already exited: reported by problems()
            pass
        try:
            self.proc.wait(flush_timeout + 60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for reader in self.readers:
            reader.join(30)

    def halt(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def problems(self):
        """What went wrong with the process itself (not with the broker's answers)."""
        out = []
        where = f"java producer {self.index}"
        tail = "; its last log lines: " + " | ".join(list(self.log)[-3:]) if self.log else ""
        if self.ready is None:
            out.append(f"{where} never started (exit status {self.proc.poll() if self.proc else None}){tail}")
        elif self.ready != "idempotence=true acks=-1":
            out.append(f"{where} does not run with idempotence and acks=all: {self.ready}")
        if self.exited_early:
            out.append(f"{where} exited with status {self.exit_status} before it was stopped{tail}")
        elif self.exit_status != 0:
            out.append(f"{where} exited with status {self.exit_status}{tail}")
        if self.summary is None:
            out.append(f"{where} printed no summary")
        elif self.summary.get("acked") != len(self.acks):
            out.append(f"{where} reports {self.summary.get('acked')} acks, {len(self.acks)} were read")
        return out


BUMPED = re.compile(r"bumped epoch to PID\{Id:(\d+),Epoch:(\d+)\}")
BUMP_REASON = re.compile(r"epoch bump .*: ([^:]+)$")
# What the out-of-order answer followed: the earlier request's error and librdkafka's actions.
SKIP_CAUSE = re.compile(r"skipped sequence numbers .*caused by previous failed request \((\w+), actions ([\w,]*), base seq")
# The reason librdkafka gives for the bump of confluentinc/librdkafka#4953.
SKIPPED_SEQUENCES = "skipped sequence numbers"


class ClientLog(logging.Handler):
    """librdkafka's log lines (its `eos` debug context on): records each producer epoch bump
    as (producer id, epoch) -> the reasons given for it and what the out-of-order answers
    behind it followed, and passes lines at or above `echo_level` to stderr as librdkafka's
    own logging would."""

    def __init__(self, echo_level):
        super().__init__(logging.DEBUG)
        self.echo_level = echo_level
        self.mutex = threading.Lock()  # not `lock`: logging.Handler keeps its own there
        self.pending = collections.defaultdict(set)  # client name -> reasons and causes since its last bump
        self.bumps = {}                              # (producer id, epoch) -> those

    def emit(self, record):
        try:
            line = record.getMessage()
        except Exception:  # a malformed record must not vanish inside librdkafka's poll
            return
        if record.levelno >= self.echo_level:
            print(line, file=sys.stderr, flush=True)
        # confluent-kafka logs ("%s [%s] %s", facility, client instance name, text).
        args = record.args if isinstance(record.args, tuple) else ()
        client = args[1] if len(args) >= 2 else record.name
        reason = BUMP_REASON.search(line)
        cause = SKIP_CAUSE.search(line)
        bumped = BUMPED.search(line)
        with self.mutex:
            if reason:
                self.pending[client].add(reason.group(1).strip())
            if cause:
                self.pending[client].add(("after", cause.group(1), frozenset(cause.group(2).split(","))))
            if bumped:
                key = (int(bumped.group(1)), int(bumped.group(2)))
                self.bumps[key] = frozenset(self.pending.pop(client, ()))

    def bumped_for_skipped_sequences(self, producer_id, epoch):
        """Whether the client bumped to this epoch because a partition's requests were
        answered out of order after an earlier one the broker said it had not appended (an
        error with librdkafka's MsgNotPersisted action): the sequence of #4953, in which the
        broker answered every request truthfully."""
        with self.mutex:
            seen = self.bumps.get((producer_id, epoch), ())
        return SKIPPED_SEQUENCES in seen and any(
            isinstance(item, tuple) and item[1] != "OUT_OF_ORDER_SEQUENCE_NUMBER" and "MsgNotPersisted" in item[2]
            for item in seen)


class Workload:
    """`security`: librdkafka settings added to every client's (security.protocol, ssl.*);
    `java_config`: a properties file of the same for the Java producers."""

    def __init__(self, bootstrap, topic, tag, producers, rate, acks_all, partitions=PARTITIONS, java=0,
                 security=None, java_config=None):
        self.bootstrap, self.topic, self.tag = bootstrap, topic, tag
        self.security, self.java_config = dict(security or {}), java_config
        self.producers, self.rate, self.acks_all = producers, rate, acks_all
        self.partitions = partitions
        self.java_tag, self.java = f"{tag}-java", java
        self.acks = [Acks() for _ in range(producers)]
        self.java_producers = [JavaProducer(self, i) for i in range(java)]
        self.failed = collections.Counter()         # delivery error name -> count
        self.client_errors = collections.Counter()  # error_cb (non-fatal) name -> count
        self.fatal = []
        self.last_ack = {p: 0.0 for p in range(partitions)}
        self.sent = 0
        self.undelivered = 0
        self.acked_without_offset = 0
        self.harness_errors = []
        self.flush_timeout = 120
        self.stopping = threading.Event()
        self.threads = []
        # (ack time, produce-to-ack seconds) of librdkafka deliveries, for latency reports.
        self.latencies = collections.deque(maxlen=2_000_000)
        # librdkafka's log goes through Python logging (served by the producers' poll()):
        # epoch bumps are recorded; critical lines reach stderr as before, more with
        # OXBOW_RDKAFKA_ECHO=debug|info|warning|error.
        echo = os.environ.get("OXBOW_RDKAFKA_ECHO", "critical").upper()
        self.client_log = ClientLog(getattr(logging, echo, logging.CRITICAL))
        self.logger = logging.getLogger(f"rdkafka.{topic}.{tag}")
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False
        self.logger.addHandler(self.client_log)

    def config(self):
        config = {
            "bootstrap.servers": self.bootstrap,
            "linger.ms": 5,
            "message.timeout.ms": 300000,
            # The broker-side acks=all wait, and the client-side limit on one request: a
            # SIGSTOPped leader's in-flight requests fail after 10 s instead of 60 s, so the
            # idempotent producer can move on to the new leader.
            "request.timeout.ms": 5000,
            "socket.timeout.ms": 10000,
            "retry.backoff.ms": 50,
            "retry.backoff.max.ms": 500,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "socket.connection.setup.timeout.ms": 5000,
            "topic.metadata.refresh.interval.ms": 10000,
            "debug": "eos",
            "logger": self.logger,
            "error_cb": self.on_error,
            **self.security,
        }
        if self.acks_all:
            config.update({"enable.idempotence": True, "acks": "all"})
        else:
            config.update({"enable.idempotence": False, "acks": "1"})
        return config

    def on_error(self, error):
        if error.fatal():
            self.fatal.append(str(error))
        else:
            self.client_errors[error.name()] += 1

    def value(self, producer, seq):
        head = f"{self.tag}:{producer}:{seq:09d}:".encode()
        return head + b"x" * (VALUE_BYTES - len(head))

    def key_of(self, value):
        """The (producer, seq) key of one of this workload's values, or None. Java producer
        i is producer `producers + i`."""
        parts = value.split(b":", 3)
        if len(parts) < 4:
            return None
        if parts[0] == self.tag.encode():
            producer = int(parts[1])
        elif parts[0] == self.java_tag.encode():
            producer = self.producers + int(parts[1])
        else:
            return None
        return producer << SEQ_BITS | int(parts[2])

    def is_java(self, key):
        return key is not None and key >= 0 and key >> SEQ_BITS >= self.producers

    def name(self, key):
        producer, seq = key >> SEQ_BITS, key & ((1 << SEQ_BITS) - 1)
        if producer >= self.producers:
            return f"{self.java_tag}:{producer - self.producers}:{seq}"
        return f"{self.tag}:{producer}:{seq}"

    def run(self, index):
        acks = self.acks[index]

        def delivered(error, message):
            try:
                if error is not None:
                    self.failed[error.name()] += 1
                    return
                at = now()
                # librdkafka reports success without an offset when the broker answers a
                # retried batch with DUPLICATE_SEQUENCE_NUMBER: kept as offset -1.
                offset = message.offset()
                if offset is None or offset < 0:
                    self.acked_without_offset += 1
                    offset = -1
                acks.partition.append(message.partition())
                acks.offset.append(offset)
                acks.key.append(self.key_of(message.value()))
                acks.time.append(at)
                self.last_ack[message.partition()] = at
                if message.latency() is not None:
                    self.latencies.append((at, message.latency()))
            except Exception as error:  # an exception must not vanish inside librdkafka's poll
                if len(self.harness_errors) < 5:
                    self.harness_errors.append(f"delivery callback: {error!r}")

        try:
            self.produce(index, delivered)
        except Exception as error:
            self.harness_errors.append(f"producer thread {index}: {error!r}")

    def produce(self, index, delivered):
        from confluent_kafka import Producer
        producer = Producer(self.config())
        per_second = self.rate / (self.producers + self.java)
        seq, started, fatal_seen = 0, now(), 0
        while not self.stopping.is_set():
            due = int((now() - started) * per_second)
            while seq < due:
                try:
                    producer.produce(self.topic, self.value(index, seq), partition=seq % self.partitions,
                                     on_delivery=delivered)
                except BufferError:
                    break
                seq += 1
                self.sent += 1
            producer.poll(0.005)
            if len(self.fatal) > fatal_seen:
                # A fatal idempotence error ends this producer; a fresh one keeps the load up.
                fatal_seen = len(self.fatal)
                self.undelivered += producer.flush(5)
                producer = Producer(self.config())
        self.undelivered += producer.flush(self.flush_timeout)

    def start(self):
        for java in self.java_producers:
            java.start()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(self.producers)]
        for thread in self.threads:
            thread.start()

    def java_ready(self, timeout=JAVA_READY_TIMEOUT):
        """Waits until every Java producer said it is ready (or exited); True if all are."""
        deadline = now() + timeout
        while now() < deadline:
            if all(j.ready is not None or j.proc.poll() is not None for j in self.java_producers):
                break
            time.sleep(0.1)
        return all(j.ready is not None for j in self.java_producers)

    def stop(self):
        """Stops producing and waits for the delivery reports of what was sent (briefly,
        when nothing was ever acknowledged)."""
        if not self.acked_count():
            self.flush_timeout = 5
        self.stopping.set()
        stoppers = [threading.Thread(target=j.stop, args=(self.flush_timeout,)) for j in self.java_producers]
        for thread in stoppers:
            thread.start()
        for thread in self.threads + stoppers:
            thread.join(self.flush_timeout + 60)

    def halt(self):
        """Stops everything now, flushing nothing (the harness is leaving)."""
        self.stopping.set()
        for java in self.java_producers:
            java.halt()

    def probe(self):
        """The broker's answer to one produce of this workload's kind, without retries."""
        from confluent_kafka import Producer
        answers = []
        config = {k: v for k, v in self.config().items() if k != "enable.idempotence"}
        producer = Producer({**config, "retries": 0, "message.timeout.ms": 10000})
        producer.produce(self.topic, b"probe", partition=0, on_delivery=lambda e, m: answers.append(e))
        producer.flush(15)
        if not answers:
            return "no answer"
        return answers[0].name() if answers[0] else "acknowledged"

    def silent(self, since, partitions=None):
        """The (client, partition) pairs without an ack after `since`: each client, the
        librdkafka producers together and every Java producer, must ack on every partition."""
        chosen = range(self.partitions) if partitions is None else partitions
        out = [("librdkafka", p) for p in chosen if self.last_ack[p] <= since]
        for java in self.java_producers:
            out += [(f"java {java.index}", p) for p in chosen if java.last_ack[p] <= since]
        return out

    def acks_since(self, since, partitions=None):
        return not self.silent(since, partitions)

    def all_acks(self):
        return self.acks + [j.acks for j in self.java_producers]

    def acked_count(self):
        return sum(len(a) for a in self.all_acks())

    def java_acked_count(self):
        return sum(len(j.acks) for j in self.java_producers)

    def java_report(self):
        """The Java producers' own counts, for the summary line."""
        failed = collections.Counter()
        for j in self.java_producers:
            failed.update(j.failed)
        summaries = [j.summary or {} for j in self.java_producers]
        return {"sent": sum(s.get("sent", 0) for s in summaries), "acked": self.java_acked_count(),
                "failed": dict(failed), "undelivered": sum(s.get("undelivered", 0) for s in summaries),
                "log_lines": sum(j.log_lines for j in self.java_producers)}

    def java_problems(self):
        return [problem for j in self.java_producers for problem in j.problems()]

    def acked(self):
        """Every acknowledged record: (partition, offset, key, time)."""
        for acks in self.all_acks():
            yield from zip(acks.partition, acks.offset, acks.key, acks.time)

    def ack_times(self, client=None):
        """Per partition, the sorted times of its acknowledgements: every producer's, or
        only `client`'s ("librdkafka" or "java")."""
        times = {p: [] for p in range(self.partitions)}
        chosen = {None: self.all_acks(), "librdkafka": self.acks,
                  "java": [j.acks for j in self.java_producers]}[client]
        for acks in chosen:
            for p, t in zip(acks.partition, acks.time):
                times[p].append(t)
        for p in times:
            times[p].sort()
        return times


def outage(times, started, ended):
    """The unavailability of one partition during a fault: the longest gap between two
    consecutive acknowledgements that ends after the fault started and begins before it
    ended (the last ack before the outage to the first one after it). None without an ack
    on both sides."""
    first = bisect.bisect_right(times, started)
    if first == 0 or first >= len(times):
        return None
    last = bisect.bisect_right(times, ended)
    gaps = [times[i] - times[i - 1] for i in range(first, min(last + 1, len(times)))]
    return max(gaps) if gaps else None


def read_back(bootstrap, topic, partitions=PARTITIONS, deadline_s=300, security=None):
    """Every record of every partition from the start to its high watermark, as
    {p: (high_watermark, offsets, values)}; raises RuntimeError with what is missing.
    `security`: librdkafka connection settings (none: PLAINTEXT)."""
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-checker",
                         "enable.auto.commit": False, "isolation.level": "read_uncommitted",
                         "fetch.wait.max.ms": 100, "log_level": 2, **(security or {})})
    try:
        marks = {}
        for p in range(partitions):
            error = None
            for _ in range(30):
                try:
                    marks[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    break
                except Exception as e:  # the leader is moving: ask again
                    error = e
                    time.sleep(0.5)
            else:
                raise RuntimeError(f"no high watermark for {topic}-{p}: {error}")
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        offsets = {p: array("q") for p in range(partitions)}
        values = {p: [] for p in range(partitions)}
        deadline = now() + deadline_s + sum(marks.values()) / 5000

        def short():
            return [p for p in range(partitions) if marks[p] > 0 and (not offsets[p] or offsets[p][-1] < marks[p] - 1)]

        while short():
            if now() > deadline:
                state = {p: (len(offsets[p]), marks[p]) for p in range(partitions)}
                raise RuntimeError(f"{topic}: not read up to the high watermarks in time: (read, hw) {state}")
            for message in consumer.consume(5000, timeout=1):
                if message.error() or message.offset() >= marks[message.partition()]:
                    continue
                offsets[message.partition()].append(message.offset())
                values[message.partition()].append(message.value())
        return {p: (marks[p], offsets[p], values[p]) for p in range(partitions)}
    finally:
        consumer.close()


KINDS = ("lost", "moved", "beyond_hw", "duplicated", "out_of_order", "foreign")


def check_history(workload, logs, identify=None):
    """Counts, and up to three examples, of each kind of wrong against what was read back:
    lost (acked, not in the log), moved (acked at one offset, found at another), beyond_hw
    (acked at an offset at or above the high watermark), duplicated (a value twice),
    out_of_order (a producer's values out of sequence in a partition), foreign (a value this
    workload never wrote). Each kind is also counted as `java_<kind>` for the Java
    producers' records, and `java_acked`. With `identify(partition, offset)` -> (producer
    id, producer epoch, base sequence) of the batch holding a record, a second copy that
    librdkafka re-sent under an epoch it bumped for skipped sequence numbers is counted as
    `resent_after_bump` (see the module's docstring), not as duplicated or out of order.
    Returns (counts, examples)."""
    topic = workload.topic
    counts = collections.Counter(acked=workload.acked_count(), java_acked=workload.java_acked_count())
    examples = collections.defaultdict(list)

    def note(kind, text, key=None):
        counts[kind] += 1
        if workload.is_java(key):
            counts[f"java_{kind}"] += 1
        if len(examples[kind]) < 3:
            examples[kind].append(text)

    where = {}          # key -> (partition, offset) of its first copy
    keys = {}           # partition -> keys in offset order
    for p, (_, offsets, values) in logs.items():
        keys[p] = array("q")
        last_seq = {}
        for offset, value in zip(offsets, values):
            counts["consumed"] += 1
            key = workload.key_of(value)
            if key is None:
                note("foreign", f"{topic}-{p}@{offset}: {value[:40]!r}")
                keys[p].append(-1)
                continue
            keys[p].append(key)
            resent = key in where and resent_after_bump(workload, identify, key, where[key], (p, offset))
            if resent:
                counts["resent_after_bump"] += 1
                if len(examples["resent_after_bump"]) < 3:
                    examples["resent_after_bump"].append(f"{workload.name(key)}: {resent}")
                continue
            if key in where:
                note("duplicated", f"{workload.name(key)} at {topic}-{where[key][0]}@{where[key][1]} "
                                   f"and {topic}-{p}@{offset}", key)
                if len(examples["duplicated_at"]) < 3:
                    examples["duplicated_at"].append((where[key], (p, offset)))
            else:
                where[key] = (p, offset)
            producer, seq = key >> SEQ_BITS, key & ((1 << SEQ_BITS) - 1)
            if seq <= last_seq.get(producer, -1):
                note("out_of_order", f"{topic}-{p}@{offset}: {workload.name(key)} after "
                                     f"seq {last_seq[producer]}", key)
            last_seq[producer] = max(seq, last_seq.get(producer, -1))
    for p, offset, key, _ in workload.acked():
        high_watermark, offsets, _ = logs[p]
        if offset < 0:  # acknowledged without an offset: it must be somewhere, once
            if key not in where:
                note("lost", f"{workload.name(key)} acked (without an offset) on {topic}-{p}; not in the log", key)
            continue
        i = bisect.bisect_left(offsets, offset)
        found = keys[p][i] if i < len(offsets) and offsets[i] == offset else None
        if found == key:
            continue
        there = workload.name(found) if found is not None and found >= 0 else found
        text = f"{workload.name(key)} acked at {topic}-{p}@{offset}; the log has {there} there"
        if offset >= high_watermark:
            note("beyond_hw", f"{text} (high watermark {high_watermark})", key)
        elif key in where:
            note("moved", f"{text}; the value is at {topic}-{where[key][0]}@{where[key][1]}", key)
        else:
            note("lost", text, key)
    return counts, examples


def resent_after_bump(workload, identify, key, first, second):
    """Why the copy of `key` at `second` is librdkafka's re-send under a bumped epoch (text),
    or None: both copies' batches are the same producer id, the second's epoch is later and
    starts its sequences again, and the client logged bumping to exactly that epoch for
    skipped sequence numbers. Never for the Java client's records."""
    if identify is None or workload.is_java(key):
        return None
    one, two = identify(*first), identify(*second)
    if one is None or two is None:
        return None
    (pid, epoch, _), (pid2, epoch2, sequence2) = one, two
    if pid != pid2 or epoch2 <= epoch or sequence2 < 0:
        return None
    if not workload.client_log.bumped_for_skipped_sequences(pid2, epoch2):
        return None
    return (f"at {workload.topic}-{first[0]}@{first[1]} (producer {pid} epoch {epoch}) and again at "
            f"{workload.topic}-{second[0]}@{second[1]} (epoch {epoch2}, sequence {sequence2}): the client bumped "
            f"to epoch {epoch2} for {SKIPPED_SEQUENCES} and re-sent it as new data")


class BatchIdentities:
    """`identify(partition, offset)` for check_history from one node's segment files: the
    (producer id, producer epoch, base sequence) of the batch holding the offset, or None.
    Each partition directory is read once, when first asked."""

    def __init__(self, data_dir, topic):
        self.data_dir, self.topic = data_dir, topic
        self.batches = {}

    def __call__(self, partition, offset):
        if partition not in self.batches:
            found = []
            for base, batch in segment_batches(os.path.join(self.data_dir, f"{self.topic}-{partition}"), 1 << 62):
                last_delta, = struct.unpack_from(">i", batch, 23)
                found.append((base, base + last_delta, struct.unpack_from(">qhi", batch, 43)))
            self.batches[partition] = found
        batches = self.batches[partition]
        i = bisect.bisect_right([b[0] for b in batches], offset) - 1
        if i >= 0 and batches[i][0] <= offset <= batches[i][1]:
            return batches[i][2]
        return None


def identities(data_dirs, topic):
    """check_history's `identify` from several nodes' segment files: the first that holds
    the record answers (replicas move, and a node may lag)."""
    nodes = [BatchIdentities(d, topic) for d in data_dirs]

    def identify(partition, offset):
        for node in nodes:
            found = node(partition, offset)
            if found is not None:
                return found
        return None
    return identify


# RecordBatch v2 header fields, to name where two replicas' bytes part.
BATCH_FIELDS = ((8, "base offset"), (12, "batch length"), (16, "partition leader epoch"), (17, "magic"),
                (21, "crc"), (23, "attributes"), (27, "last offset delta"), (35, "base timestamp"),
                (43, "max timestamp"), (51, "producer id"), (53, "producer epoch"), (57, "base sequence"),
                (61, "record count"))


def field_at(position):
    for end, name in BATCH_FIELDS:
        if position < end:
            return name
    return "records"


def segment_batches(directory, high_watermark):
    """The RecordBatch byte strings of a partition directory whose last offset is below the
    high watermark, in offset order: base offset i64 BE at 0, batch length i32 BE at 8 (the
    batch spans 12 + length bytes), last offset delta i32 BE at 23. Reading stops at a
    zero or torn length (the end of the written part of a segment)."""
    batches = []
    if not os.path.isdir(directory):
        return batches
    for name in sorted(f for f in os.listdir(directory) if f.endswith(".log")):
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        at = 0
        while at + 27 <= len(data):
            base, length = struct.unpack_from(">qi", data, at)
            if length <= 0 or at + 12 + length > len(data):
                break
            if base + struct.unpack_from(">i", data, at + 23)[0] < high_watermark:
                batches.append((base, data[at:at + 12 + length]))
            at += 12 + length
    return batches


def varint(data, at):
    """A zigzag varint of a record (Kafka's), and the position after it."""
    shift = result = 0
    while True:
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at
        shift += 7


def segment_records(directory, high_watermark):
    """The records of a partition directory below the high watermark, read from the segment
    files themselves (uncompressed data batches; control batches skipped), in the shape
    read_back answers: (high_watermark, offsets, values). Raises ValueError on a compressed
    batch (this workload never compresses)."""
    offsets, values = array("q"), []
    for base, batch in segment_batches(directory, high_watermark):
        attributes, = struct.unpack_from(">h", batch, 21)
        if attributes & 0x07:
            raise ValueError(f"{directory}: compressed batch at offset {base}")
        if attributes & 0x20:
            continue
        count, = struct.unpack_from(">i", batch, 57)
        at = 61
        for _ in range(count):
            length, at = varint(batch, at)
            end = at + length
            at += 1  # record attributes
            _, at = varint(batch, at)  # timestamp delta
            delta, at = varint(batch, at)
            key_length, at = varint(batch, at)
            at += max(0, key_length)
            value_length, at = varint(batch, at)
            offsets.append(base + delta)
            values.append(batch[at:at + value_length] if value_length >= 0 else b"")
            at = end
    return high_watermark, offsets, values


def compare_replicas(directories, topic, marks):
    """`directories`: {node: log dir}. For each partition, whether every node holds the same
    batches below the high watermark. Returns (ok lines, problem lines)."""
    ok, problems = [], []
    nodes = sorted(directories)
    for p, mark in sorted(marks.items()):
        replicas = {n: segment_batches(os.path.join(directories[n], f"{topic}-{p}"), mark) for n in nodes}
        reference = replicas[nodes[0]]
        differing = []
        for node in nodes[1:]:
            other = replicas[node]
            if other == reference:
                continue
            for i, (mine, theirs) in enumerate(zip(reference, other)):
                if mine != theirs:
                    a, b = mine[1], theirs[1]
                    byte = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
                    where = (f"batch {i}: base offset {mine[0]} on node {nodes[0]}, {theirs[0]} on node {node}; "
                             f"first different byte {byte} ({field_at(byte)})")
                    break
            else:
                where = (f"node {nodes[0]} has {len(reference)} batches below the high watermark, "
                         f"node {node} {len(other)}")
            differing.append(f"node {node} differs from node {nodes[0]} at {where}")
        sizes = {n: (len(b), sum(len(x) for _, x in b)) for n, b in replicas.items()}
        if differing:
            problems.append(f"{topic}-{p}: replicas below the high watermark {mark} are not identical: "
                            f"{'; '.join(differing)}; (batches, bytes) per node {sizes}")
        else:
            ok.append(f"{topic}-{p}: {len(reference)} batches, {sizes[nodes[0]][1]} bytes below the high "
                      f"watermark {mark}, identical on nodes {','.join(map(str, nodes))}")
    return ok, problems
