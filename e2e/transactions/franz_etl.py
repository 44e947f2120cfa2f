"""franz-go's GroupTransactSession (e2e/peers/franz-go/etl) on three `oxbow` nodes, with the
group rebalancing every few seconds and nodes SIGKILLed under it.

Three sessions with distinct transactional ids copy an input topic to an output topic in
20-record transactions that carry the group's offsets, on transaction version 2. Each leaves
and joins the group every 3-8 s, so franz-go often aborts a transaction right after the
previous commit, at the epoch that commit handed out, while the coordinator may still be
writing the commit's markers: the coordinator must answer CONCURRENT_TRANSACTIONS (retry),
not PRODUCER_FENCED (KAFKA-18464). Meanwhile the nodes are SIGKILLed in turn (--kills,
every --interval s) and restarted on their data, and between kills a node is SIGSTOPped
for 400 ms every 2 s, which holds a commit's markers in flight. The program fails on any fencing or lost
or duplicated record; this script fails if it does.

Usage: franz_etl.py BINARY [--kills N] [--interval S] [--records N]
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Apart from the other cluster suites' ports (transactions.py uses the defaults).
BASES = (29592, 29692, 29792)


def wait_ready(cluster, node, within=90.0):
    deadline = time.monotonic() + within
    while not cluster.ready(node):
        if time.monotonic() > deadline:
            raise AssertionError(f"node {node} not ready {within:.0f} s after its restart")
        time.sleep(0.2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--interval", type=float, default=8.0)
    parser.add_argument("--records", type=int, default=30000)
    args = parser.parse_args()
    subprocess.run([os.path.join(ROOT, "e2e/peers/franz-go/run"), "--build-only"], check=True)
    work = tempfile.mkdtemp(prefix="oxbow-franz-etl.")
    cluster = Cluster(os.path.abspath(args.binary), work, Network(False), cluster_id="franz-etl", bases=BASES,
                      extra=["transaction.state.log.num.partitions=3", "offsets.topic.num.partitions=3"])
    with cluster.running():
        started = time.monotonic()
        etl = subprocess.Popen([os.path.join(ROOT, "e2e/peers/franz-go/run"), "--etl",
                                "--bootstrap", cluster.bootstrap, "--records", str(args.records)])
        kills, stalls = [], 0
        victim = 1
        while etl.poll() is None and len(kills) < args.kills:
            # Between kills, a node is stalled (SIGSTOP) for 400 ms every 2 s, well inside
            # the session timeout: markers to its partitions wait, so a commit's markers are
            # still in flight when franz-go ends its next transaction (the window in which a
            # coordinator must answer CONCURRENT_TRANSACTIONS, not PRODUCER_FENCED).
            deadline = time.monotonic() + args.interval
            while time.monotonic() < deadline and etl.poll() is None:
                time.sleep(1.6)
                stalled = cluster.nodes[stalls % len(cluster.nodes)]
                cluster.signal(stalled, signal.SIGSTOP)
                time.sleep(0.4)
                cluster.signal(stalled, signal.SIGCONT)
                stalls += 1
            if etl.poll() is not None:
                break
            cluster.kill(victim)
            killed_at = time.monotonic() - started
            time.sleep(1.0)
            cluster.start(victim)
            wait_ready(cluster, victim)
            kills.append(f"node {victim} at {killed_at:.0f} s")
            victim = victim % 3 + 1
        try:
            code = etl.wait(timeout=600)
        except subprocess.TimeoutExpired:
            etl.kill()
            raise AssertionError("the franz-go ETL did not finish within 10 minutes")
        took = time.monotonic() - started
        if code != 0:
            raise AssertionError(f"the franz-go ETL failed (exit {code}) after {took:.0f} s; kills: {kills}")
        if len(kills) < args.kills:
            raise AssertionError(f"the ETL finished after {len(kills)} of {args.kills} kills "
                                 f"({took:.0f} s): raise --records so every kill lands under load")
        print(f"ok   franz-go GroupTransactSession: 3 sessions, rebalancing every 3-8 s, through "
              f"{len(kills)} SIGKILLs ({', '.join(kills)}) and {stalls} 400-ms stalls, {took:.0f} s: "
              f"every record exactly once", flush=True)


if __name__ == "__main__":
    main()
