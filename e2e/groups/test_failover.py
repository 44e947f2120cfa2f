"""SIGKILL one member of a classic group (confluent-kafka, separate processes): after
its session timeout its partitions move to the others, and with committed offsets the
only messages delivered twice are those of the killed member's last uncommitted batch."""

import collections
import os
import signal
import subprocess
import sys
import tempfile

from common import group_broker, create_topic, produce, wait_for

TOPIC = "jobs"
PARTITIONS = 6
HERE = os.path.dirname(os.path.abspath(__file__))


def lines(path):
    try:
        with open(path) as f:
            return [l.rstrip("\n") for l in f if l.endswith("\n")]
    except OSError:
        return []


def values(path):
    return [l for l in lines(path) if not l.startswith("#")]


def assigned(path):
    last = [l for l in lines(path) if l.startswith("#assigned")]
    return last[-1].split(" ", 1)[1] if last and " " in last[-1] else ""


def main():
    out = tempfile.mkdtemp(prefix="oxbow-failover-")
    with group_broker("group.initial.rebalance.delay.ms=0") as broker:
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        files = [os.path.join(out, f"w{i}.txt") for i in range(3)]
        workers = [
            subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), broker.bootstrap, "fo", TOPIC, f])
            for f in files
        ]
        try:
            wait_for(lambda: all(assigned(f) for f in files)
                     and sorted(int(p) for f in files for p in assigned(f).split(",")) == list(range(PARTITIONS)),
                     90, "three workers sharing the partitions")
            first = [f"a-{i}" for i in range(1200)]
            produce(broker.bootstrap, TOPIC, first, PARTITIONS)
            wait_for(lambda: len(values(files[0])) > 0 and sum(len(values(f)) for f in files) >= 600, 60, "consumption to start")
            workers[0].send_signal(signal.SIGKILL)
            workers[0].wait()
            killed = lines(files[0])
            committed_upto = max((i for i, l in enumerate(killed) if l == "#committed"), default=-1)
            uncommitted = {l for l in killed[committed_upto + 1:] if not l.startswith("#")}
            second = [f"b-{i}" for i in range(1200)]
            produce(broker.bootstrap, TOPIC, second, PARTITIONS)
            everything = set(first) | set(second)
            wait_for(lambda: set(values(files[0])) | set(values(files[1])) | set(values(files[2])) >= everything,
                     120, "the survivors to take over the killed member's partitions")
            # The survivors own all partitions now.
            owned = sorted(int(p) for f in files[1:] for p in assigned(f).split(",") if p)
            assert owned == list(range(PARTITIONS)), owned
            delivered = values(files[0]) + values(files[1]) + values(files[2])
            dupes = {v for v, n in collections.Counter(delivered).items() if n > 1}
            assert dupes <= uncommitted, f"{len(dupes - uncommitted)} committed messages re-delivered"
            members = broker.metric("oxbow_group_members", group="fo")
            assert members == 2, members
            print(f"SIGKILLed member's partitions moved after the session timeout; "
                  f"{len(dupes)} re-deliveries, all from its last uncommitted batch ({len(uncommitted)})")
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
    print("failover: OK")


if __name__ == "__main__":
    sys.exit(main())
