#!/usr/bin/env python3
"""Watches a cluster's replication state while the operator scales it (e2e/operator/scale-at-size).

usage: scale_watch.py balance ADDRESS
           per broker, how many replicas and preferred leaderships it holds (all topics, from
           ADDRESS's own Metadata); exit 1 unless each broker's replicas are within 1 of the
           mean of its rack's brokers and its preferred leaderships within 1 of the mean.
       scale_watch.py watch ADDRESS NAMESPACE STATEFULSET LEAVING MIN_ISR STOP_FILE
           until STOP_FILE exists, twice a second: the StatefulSet's replicas (kubectl), then
           ADDRESS's Metadata. Writes STOP_FILE.watch (JSON) and exits 1 if any sample had a
           partition without a leader, a partition with fewer than MIN_ISR in sync (of those
           whose replication factor allows it), or a StatefulSet below its size while a
           LEAVING broker (comma-separated ids) still held a replica. The StatefulSet is read
           first, so a shrink it shows happened before the Metadata that follows. When ADDRESS
           stops answering (its pod restarted), another of the StatefulSet's pods is asked."""
import json
import os
import subprocess
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_client import metadata  # noqa: E402


def counts(view):
    replicas, leaders = Counter(), Counter()
    for broker in view["brokers"]:
        replicas[broker] += 0
        leaders[broker] += 0
    for topic in view["topics"].values():
        for p in topic["partitions"]:
            replicas.update(p["replicas"])
            if p["replicas"]:
                leaders[p["replicas"][0]] += 1
    return replicas, leaders


def balance(address):
    """Replicas: within 1 of the mean of the brokers in the same rack. With one replica of
    each partition per rack (racks = zones), a rack of one broker holds a replica of every
    partition, so only brokers that share a rack can even out; a cluster without racks is
    one group. Preferred leaders: within 1 of the mean over every broker."""
    view = metadata(address)
    replicas, leaders = counts(view)
    racks = {}
    for broker in replicas:
        racks.setdefault((view["brokers"].get(broker) or {}).get("rack"), []).append(broker)
    ok = True
    for rack, members in sorted(racks.items(), key=lambda r: str(r[0])):
        counter = {b: replicas[b] for b in sorted(members)}
        mean = sum(counter.values()) / len(counter)
        within = all(abs(n - mean) <= 1 for n in counter.values())
        ok &= within
        print("replicas per broker in rack %s: %s (mean %.1f, %s)"
              % (rack, counter, mean, "within 1" if within else "NOT within 1"))
    mean = sum(leaders.values()) / len(leaders)
    within = all(abs(n - mean) <= 1 for n in leaders.values())
    ok &= within
    print("preferred leaders per broker: %s (mean %.1f, %s)"
          % ({b: leaders[b] for b in sorted(leaders)}, mean, "within 1" if within else "NOT within 1"))
    sys.exit(0 if ok else 1)


def statefulset_replicas(namespace, name):
    out = subprocess.run(["kubectl", "-n", namespace, "get", "statefulset", name,
                          "-o", "jsonpath={.spec.replicas}"], capture_output=True, text=True)
    return int(out.stdout) if out.returncode == 0 and out.stdout.strip() else None


def broker_ips(namespace, statefulset):
    out = subprocess.run(["kubectl", "-n", namespace, "get", "pods", "-l",
                          "app.kubernetes.io/instance=%s" % statefulset, "-o",
                          "jsonpath={range .items[*]}{.status.podIP}{\"\\n\"}{end}"],
                         capture_output=True, text=True)
    return [ip for ip in out.stdout.split() if ip] if out.returncode == 0 else []


def watch(address, namespace, statefulset, leaving, min_isr, stop_file):
    leaving = {int(b) for b in leaving.split(",") if b}
    min_isr = int(min_isr)
    first_size = None
    samples = errors = 0
    offline, under_min_isr, early_shrink = [], [], []
    fewest_in_sync = None
    while not os.path.exists(stop_file):
        size = statefulset_replicas(namespace, statefulset)
        try:
            view = metadata(address)
        except (OSError, SystemExit) as e:
            # Restarted by a roll (a new pod IP): ask another broker from now on.
            errors += 1
            print("metadata from %s: %s" % (address, e), file=sys.stderr)
            others = [ip for ip in broker_ips(namespace, statefulset) if ip != address.rsplit(":", 1)[0]]
            if others:
                address = "%s:%s" % (others[0], address.rsplit(":", 1)[1])
            time.sleep(0.5)
            continue
        samples += 1
        first_size = first_size if first_size is not None else size
        now = round(time.time(), 1)
        held = 0
        for name, topic in view["topics"].items():
            for p in topic["partitions"]:
                where = "%s-%d" % (name, p["partition"])
                if p["leader"] < 0:
                    offline.append((now, where))
                # A factor below MIN_ISR never had MIN_ISR in sync; it is not judged.
                if len(p["replicas"]) >= min_isr:
                    seen = len(p["isr"])
                    fewest_in_sync = seen if fewest_in_sync is None else min(fewest_in_sync, seen)
                    if seen < min_isr:
                        under_min_isr.append((now, where, p["isr"]))
                held += sum(1 for b in p["replicas"] if b in leaving)
        if size is not None and first_size is not None and size < first_size and held:
            early_shrink.append((now, size, held))
        time.sleep(0.5)
    summary = {"samples": samples, "metadata_errors": errors, "offline": offline[:20],
               "under_min_isr": under_min_isr[:20], "fewest_in_sync": fewest_in_sync,
               "shrunk_while_holding": early_shrink[:20]}
    with open(stop_file + ".watch", "w") as out:
        json.dump(summary, out)
    sys.exit(1 if offline or under_min_isr or early_shrink or not samples else 0)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "balance":
        balance(*args)
    elif command == "watch":
        watch(*args)
    else:
        raise SystemExit(__doc__)
