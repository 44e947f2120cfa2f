"""A CPU-starved voter costs no fencing: three combined nodes under an idempotent acks=all
producer, each node in turn SIGSTOPped for 300 ms and continued, --stalls times (the active
controller among them), as a busy, shared machine stalls a process.

Checked: no broker is ever fenced (every live node's own Metadata answer lists all three
brokers, polled every 100 ms, and no node logs "Broker fencing changed" with fenced=true);
every record the producer sent was acknowledged (no delivery error); elections are counted
and printed. The warning lines the stalls caused are counted: a stall shorter than the
unreachable threshold is not reported as an unreachable voter (at most one in ten, for
scheduling jitter), and a heartbeat outage is one line, not one per missed heartbeat.

Usage: stall.py BINARY [--stalls N] [--pause-ms MS]
"""
import argparse
import os
import re
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

BASES = (29892, 29992, 30092)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--stalls", type=int, default=30)
    parser.add_argument("--pause-ms", type=int, default=300)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="oxbow-stall.")
    cluster = Cluster(os.path.abspath(args.binary), work, Network(False), cluster_id="stall", bases=BASES)
    with cluster.running():
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("stall", 3, 3, config={"min.insync.replicas": "2"})])["stall"].result(30)
        errors, acked = [], [0]
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                             "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000})

        def delivered(err, _msg):
            if err is not None:
                errors.append(str(err))
            else:
                acked[0] += 1

        stop = threading.Event()
        fenced_seen = []

        def watch():
            while not stop.is_set():
                for node in cluster.nodes:
                    answer = cluster.metadata(node)
                    if answer is not None and set(answer["brokers"]) != set(cluster.nodes):
                        fenced_seen.append((round(time.monotonic(), 1), node, sorted(answer["brokers"])))
                time.sleep(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        sent = 0
        for stall in range(args.stalls):
            victim = cluster.nodes[stall % len(cluster.nodes)]
            for _ in range(50):
                producer.produce("stall", value=f"r{sent}".encode(), on_delivery=delivered)
                sent += 1
            producer.poll(0)
            cluster.signal(victim, signal.SIGSTOP)
            time.sleep(args.pause_ms / 1000)
            cluster.signal(victim, signal.SIGCONT)
            deadline = time.monotonic() + 0.7
            while time.monotonic() < deadline:
                producer.poll(0.05)
        remaining = producer.flush(60)
        stop.set()
        watcher.join(5)

        logs = ""
        for node in cluster.nodes:
            with open(os.path.join(work, f"node-{node}.log"), errors="replace") as f:
                logs += f.read()
        fenced_lines = re.findall(r"Broker fencing changed.*fenced=true", logs)
        unreachable = len(re.findall(r"Voter unreachable", logs))
        heartbeat = len(re.findall(r"Heartbeat to the controller failed", logs))
        elections = len(re.findall(r"Metadata quorum has no leader", logs))
        print(f"stalls: {args.stalls} x {args.pause_ms} ms SIGSTOP; {acked[0]} of {sent} records acknowledged; "
              f"warnings: {unreachable} 'Voter unreachable', {heartbeat} 'Heartbeat to the controller failed'; "
              f"{elections} leaderless moments seen by some node", flush=True)
        problems = []
        if fenced_seen:
            problems.append(f"a broker was fenced: {fenced_seen[:5]}")
        if fenced_lines:
            problems.append(f"a node logged fencing: {fenced_lines[:3]}")
        if errors or remaining or acked[0] != sent:
            problems.append(f"produce failed: {len(errors)} errors ({errors[:3]}), {remaining} unflushed")
        # A 300-ms stall is shorter than the unreachable threshold (events.rs UNREACHABLE_AFTER):
        # not an outage, so (scheduling jitter aside) no warning; a heartbeat run failing is
        # at most one line per stall. Before the threshold, each stall of a follower gave a
        # 'Voter unreachable' line (20 in 30 stalls).
        if unreachable > args.stalls // 10 or heartbeat > args.stalls:
            problems.append(f"warnings for stalls that are no outage: {unreachable} 'Voter unreachable', "
                            f"{heartbeat} 'Heartbeat to the controller failed' in {args.stalls} stalls")
        if problems:
            raise AssertionError("; ".join(problems))
        print("ok   a voter SIGSTOPped for 300 ms, over and over: no broker fenced, every record acknowledged",
              flush=True)


if __name__ == "__main__":
    main()
