"""A produce history and its checks, for the cluster fault tests (e2e/cluster/replication.py).

- `Workload`: librdkafka producers (idempotent acks=all, or plain acks=1) writing unique
  values `TAG:producer:seq:xxx…` round-robin over a topic's partitions at a steady rate,
  keeping every delivery report (partition, offset, time) in flat arrays — a long run has
  millions.
- `read_back`: every partition from the start to its high watermark.
- `check_history`: every acknowledged record exactly once, at the offset it was acknowledged
  with; no value twice anywhere; each producer's values in sequence order per partition.
- `compare_replicas`: the RecordBatch bytes below the high watermark in each node's segment
  files, byte for byte.
"""
import bisect
import collections
import os
import struct
import threading
import time
from array import array

PARTITIONS = 3
VALUE_BYTES = 100
SEQ_BITS = 40  # a value's key: producer << SEQ_BITS | seq


def now():
    return time.monotonic()


class Acks:
    """One producer's delivery reports. Only that producer's thread appends (librdkafka
    calls delivery callbacks from poll()), so the four arrays stay aligned without a lock."""

    def __init__(self):
        self.partition, self.offset = array("b"), array("q")
        self.key, self.time = array("q"), array("d")

    def __len__(self):
        return len(self.offset)


class Workload:
    def __init__(self, bootstrap, topic, tag, producers, rate, acks_all, partitions=PARTITIONS):
        self.bootstrap, self.topic, self.tag = bootstrap, topic, tag
        self.producers, self.rate, self.acks_all = producers, rate, acks_all
        self.partitions = partitions
        self.acks = [Acks() for _ in range(producers)]
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
            "log_level": 2,
            "error_cb": self.on_error,
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
        """The (producer, seq) key of one of this workload's values, or None."""
        parts = value.split(b":", 3)
        if len(parts) < 4 or parts[0] != self.tag.encode():
            return None
        return int(parts[1]) << SEQ_BITS | int(parts[2])

    def name(self, key):
        return f"{self.tag}:{key >> SEQ_BITS}:{key & ((1 << SEQ_BITS) - 1)}"

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
        per_second = self.rate / self.producers
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
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(self.producers)]
        for thread in self.threads:
            thread.start()

    def stop(self):
        """Stops producing and waits for the delivery reports of what was sent (briefly,
        when nothing was ever acknowledged)."""
        if not self.acked_count():
            self.flush_timeout = 5
        self.stopping.set()
        for thread in self.threads:
            thread.join(self.flush_timeout + 60)

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

    def acks_since(self, since, partitions=None):
        return all(self.last_ack[p] > since for p in (range(self.partitions) if partitions is None else partitions))

    def acked_count(self):
        return sum(len(a) for a in self.acks)

    def acked(self):
        """Every acknowledged record: (partition, offset, key, time)."""
        for acks in self.acks:
            yield from zip(acks.partition, acks.offset, acks.key, acks.time)

    def ack_times(self):
        """Per partition, the sorted times of its acknowledgements."""
        times = {p: [] for p in range(self.partitions)}
        for acks in self.acks:
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


def read_back(bootstrap, topic, partitions=PARTITIONS, deadline_s=300):
    """Every record of every partition from the start to its high watermark, as
    {p: (high_watermark, offsets, values)}; raises RuntimeError with what is missing."""
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-checker",
                         "enable.auto.commit": False, "isolation.level": "read_uncommitted",
                         "fetch.wait.max.ms": 100, "log_level": 2})
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


def check_history(workload, logs):
    """Counts, and up to three examples, of each kind of wrong against what was read back:
    lost (acked, not in the log), moved (acked at one offset, found at another), beyond_hw
    (acked at an offset at or above the high watermark), duplicated (a value twice),
    out_of_order (a producer's values out of sequence in a partition), foreign (a value this
    workload never wrote). Returns (counts, examples)."""
    topic = workload.topic
    counts = collections.Counter(acked=workload.acked_count())
    examples = collections.defaultdict(list)

    def note(kind, text):
        counts[kind] += 1
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
            if key in where:
                note("duplicated", f"{workload.name(key)} at {topic}-{where[key][0]}@{where[key][1]} "
                                   f"and {topic}-{p}@{offset}")
            else:
                where[key] = (p, offset)
            producer, seq = key >> SEQ_BITS, key & ((1 << SEQ_BITS) - 1)
            if seq <= last_seq.get(producer, -1):
                note("out_of_order", f"{topic}-{p}@{offset}: producer {producer} seq {seq} after "
                                     f"{last_seq[producer]}")
            last_seq[producer] = max(seq, last_seq.get(producer, -1))
    for p, offset, key, _ in workload.acked():
        high_watermark, offsets, _ = logs[p]
        if offset < 0:  # acknowledged without an offset: it must be somewhere, once
            if key not in where:
                note("lost", f"{workload.name(key)} acked (without an offset) on {topic}-{p}; not in the log")
            continue
        i = bisect.bisect_left(offsets, offset)
        found = keys[p][i] if i < len(offsets) and offsets[i] == offset else None
        if found == key:
            continue
        there = workload.name(found) if found is not None and found >= 0 else found
        text = f"{workload.name(key)} acked at {topic}-{p}@{offset}; the log has {there} there"
        if offset >= high_watermark:
            note("beyond_hw", f"{text} (high watermark {high_watermark})")
        elif key in where:
            note("moved", f"{text}; the value is at {topic}-{where[key][0]}@{where[key][1]}")
        else:
            note("lost", text)
    return counts, examples


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
