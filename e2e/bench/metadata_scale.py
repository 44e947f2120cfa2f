#!/usr/bin/env python3
"""Metadata at scale (a benchmark, not a test): TOPICS x PARTITIONS partitions (default
1,000 x 10 = 10,000, RF=3) on 5 brokers (3 voters + 2 broker-only nodes), created with
confluent-kafka's AdminClient in batches. Reports: creation time, metadata log and snapshot
sizes on a voter, snapshot build time (from the voter's log), Metadata-for-all-topics
response time (median of 5), the active controller's RSS, and how long a new broker takes
from start to ready (caught up and unfenced).

    ~/.cache/oxbow/clients/venv/bin/python e2e/bench/metadata_scale.py target/release/oxbow
"""
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402
from oxbow_e2e import http_get, wait_for  # noqa: E402

TOPICS = int(os.environ.get("TOPICS", "1000"))
PARTITIONS = int(os.environ.get("PARTITIONS", "10"))
# More `--override key=value` for every node, e.g. metadata.log.snapshot.interval.entries=500
# to see snapshots being built at this scale.
EXTRA = os.environ.get("OXBOW_EXTRA_OVERRIDES", "").split()
BASE, CONTROLLER_BASE, METRICS_BASE = 23092, 23192, 23644


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-metadata-scale-")
    # Nodes 1-5 now, node 6 joins at the end; 1-3 are the voters. Node N's ports are BASE + N.
    cluster = Cluster(binary, work, Network(False), cluster_id="metadata-scale", nodes=range(1, 7),
                      voters=(1, 2, 3), bases=(BASE + 1, CONTROLLER_BASE + 1, METRICS_BASE + 1),
                      extra=EXTRA)

    try:
        for node in range(1, 6):
            cluster.start(node)
        wait_for(lambda: all(http_get(METRICS_BASE + n, "/readyz", timeout=5)[0] == 200 for n in range(1, 6)),
                 300, "five ready brokers")
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{BASE + 4}"})
        started = time.time()
        for first in range(0, TOPICS, 100):
            topics = [NewTopic(f"scale-{i}", PARTITIONS, 3) for i in range(first, min(first + 100, TOPICS))]
            for name, future in admin.create_topics(topics, request_timeout=120).items():
                future.result(timeout=180)
        created = time.time() - started
        view = json.loads(http_get(METRICS_BASE + 1, "/metadata", timeout=5)[1])
        active = view["controller_id"]
        metadata_dir = f"{work}/node-{active}/__oxbow_metadata"
        sizes = {name: os.path.getsize(os.path.join(metadata_dir, name)) for name in os.listdir(metadata_dir)}
        snapshot_ms = [int(m) for m in re.findall(r"elapsed_ms=(\d+)", open(f"{work}/node-{active}.log").read())]
        timings = []
        for _ in range(5):
            t = time.time()
            metadata = admin.list_topics(timeout=60)
            timings.append(time.time() - t)
        partitions = sum(len(t.partitions) for t in metadata.topics.values())
        rss_kb = int(open(f"/proc/{cluster.procs[active].pid}/status").read().split("VmRSS:")[1].split()[0])
        # A new broker joining: from process start to ready (caught up and unfenced).
        t = time.time()
        cluster.start(6)
        wait_for(lambda: http_get(METRICS_BASE + 6, "/readyz", timeout=5)[0] == 200, 300, "the new broker")
        joined = time.time() - t
        print(f"{partitions} partitions ({TOPICS} topics x {PARTITIONS}, RF=3) on 5 brokers (3 voters)")
        print(f"  created in {created:.1f} s ({TOPICS / created:.0f} topics/s)")
        print(f"  metadata dir of the active controller (node {active}): "
              + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sorted(sizes.items())))
        print(f"  snapshots built: {len(snapshot_ms)}, build+write time ms: {snapshot_ms}")
        print(f"  Metadata for all topics: median {statistics.median(timings) * 1000:.0f} ms, "
              f"worst {max(timings) * 1000:.0f} ms")
        print(f"  active controller RSS: {rss_kb / 1024:.0f} MiB")
        print(f"  a new broker from start to ready: {joined:.2f} s")
    finally:
        cluster.shutdown_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
