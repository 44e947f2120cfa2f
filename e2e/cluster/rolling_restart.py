#!/usr/bin/env python3
"""A rolling restart of a 3-broker Oxbow cluster under acks=all load, as an operator does
it: SIGTERM one broker (controlled shutdown), wait until it has exited, start it again
with the same command, wait until it is ready and back in every ISR, then the next.

Meanwhile an idempotent acks=all producer (librdkafka) writes at a steady rate to an
RF=3, min.insync.replicas=2 topic, a consumer group reads it, and the partitions' leaders
are watched through Metadata. Asserts: no produce failed, no partition was ever seen
without a leader, the group saw every record, and the brokers' metrics reported the
under-replicated partitions while a broker was away and none once it was back.

    rolling_restart.py CLUSTER_DIR CLIENT_PORT
"""
import os
import signal
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_e2e import fail, http_get, wait_for  # noqa: E402

TOPIC = "rolling"
PARTITIONS = 6
RATE = 500  # records/s


def metrics_port(node_dir):
    return int(open(os.path.join(node_dir, "metrics.port")).read().strip())


def metric(node_dir, name):
    status, body = http_get(metrics_port(node_dir), "/metrics")
    if status != 200:
        return None
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def ready(node_dir):
    return http_get(metrics_port(node_dir), "/readyz")[0] == 200


class Load:
    """The producer, the consumer group and the leader watch, each on its own thread."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.acked, self.failed, self.seen = set(), [], set()
        self.offline = []
        self.threads = [threading.Thread(target=f, daemon=True)
                        for f in (self.produce, self.consume, self.watch)]

    def start(self):
        for t in self.threads:
            t.start()

    def produce(self):
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})

        def delivered(err, message):
            if err is None:
                self.acked.add(message.value().decode())
            else:
                self.failed.append(str(err))

        i = 0
        started = time.time()
        while not self.stop.is_set():
            producer.produce(TOPIC, value=str(i).encode(), on_delivery=delivered)
            i += 1
            producer.poll(0)
            ahead = i / RATE - (time.time() - started)
            if ahead > 0:
                time.sleep(ahead)
        if producer.flush(60) != 0:
            self.failed.append("records left undelivered after 60 s")

    def consume(self):
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "rolling-readers",
                             "auto.offset.reset": "earliest", "enable.auto.commit": True})
        consumer.subscribe([TOPIC])
        while not (self.stop.is_set() and self.drained):
            for message in consumer.consume(500, 0.5):
                if not message.error():
                    self.seen.add(message.value().decode())
        consumer.close()

    drained = False

    def watch(self):
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while not self.stop.is_set():
            try:
                topic = admin.list_topics(TOPIC, timeout=2).topics[TOPIC]
                for p in topic.partitions.values():
                    if p.leader < 0:
                        self.offline.append((time.time(), p.id))
            except Exception:
                pass
            time.sleep(0.05)


def main():
    cluster_dir, port = sys.argv[1], int(sys.argv[2])
    bootstrap = ",".join(f"127.0.0.1:{port + i}" for i in range(3))
    nodes = [os.path.join(cluster_dir, f"node-{n}") for n in (1, 2, 3)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result()

    def isr_full():
        topic = admin.list_topics(TOPIC, timeout=5).topics[TOPIC]
        return all(len(p.isrs) == 3 and p.leader >= 0 for p in topic.partitions.values())

    wait_for(isr_full, 90, "every replica in sync")
    load = Load(bootstrap)
    load.start()
    time.sleep(3)
    under_replicated_seen = False
    for node_dir in nodes:
        pid = int(open(os.path.join(node_dir, "oxbow.pid")).read())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = [c.decode() for c in f.read().split(b"\0") if c]
        started = time.time()
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().split()[2] == "Z", 30, f"{node_dir} to exit")
        stopped = time.time() - started
        others = [n for n in nodes if n != node_dir]
        under = [metric(n, "oxbow_replication_under_replicated_partitions") or 0 for n in others]
        under_replicated_seen |= sum(under) > 0
        log = open(os.path.join(node_dir, "oxbow.log"), "a")
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        open(os.path.join(node_dir, "oxbow.pid"), "w").write(str(process.pid))
        wait_for(lambda: ready(node_dir), 60, f"{node_dir} ready")
        wait_for(isr_full, 60, "every replica back in sync")
        print(f"ok {os.path.basename(node_dir)}: stopped in {stopped:.2f} s (controlled shutdown), "
              f"under-replicated partitions reported meanwhile {under}, back in every ISR "
              f"{time.time() - started:.1f} s after SIGTERM", flush=True)
        time.sleep(2)
    time.sleep(2)
    load.stop.set()
    load.threads[0].join(90)
    wait_for(lambda: load.acked <= load.seen, 60, "the group to read everything acknowledged")
    load.drained = True
    for t in load.threads[1:]:
        t.join(30)
    if load.failed:
        fail(f"{len(load.failed)} produce(s) failed during the rolling restart: {load.failed[:3]}")
    if load.offline:
        fail(f"partitions without a leader during the rolling restart: {load.offline[:5]}")
    if not under_replicated_seen:
        fail("no broker reported under-replicated partitions while one broker was away")
    after = [metric(n, "oxbow_replication_under_replicated_partitions") for n in nodes]
    if any(v != 0 for v in after):
        fail(f"under-replicated partitions reported after the roll: {after}")
    print(f"ok rolling restart of 3 brokers under acks=all load: {len(load.acked)} records acknowledged, "
          f"0 failed, no partition offline, the group read all of them", flush=True)


if __name__ == "__main__":
    main()
