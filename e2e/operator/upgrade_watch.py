#!/usr/bin/env python3
"""What a Cluster and its broker pods went through during a rolling upgrade, from the API
server's watches (every write is an event, so no state in between is missed, unlike a poll).
Used by e2e/suites/78-operator-upgrade.sh.

usage: upgrade_watch.py record NAMESPACE CLUSTER DIR STOP_FILE
           `kubectl get -w -o json` of the Cluster and of its broker pods
           (app.kubernetes.io/instance=CLUSTER) until STOP_FILE exists; appends each object
           as one line {"t": host time, "object": ...} to DIR/cluster.jsonl and DIR/pods.jsonl.
           A watch that ends early is started again (its first event is the current state).
       upgrade_watch.py report DIR FROM TO
           checks the recorded roll from release FROM to TO and prints one JSON line:
             versions: each change of the brokers' versions in status.brokers[] (one broker
               at a time, each FROM -> (none while its pod is replaced) -> TO, never back);
             order: the brokers in the order they reached TO;
             ready_reasons, degraded, features: every value the Ready condition's reason,
               the Degraded and the FeaturesFinalized conditions' status took;
             most_down: the most broker pods not Ready (or terminating) at once;
             per_broker_s: for each broker, from its old pod's deletion to its new pod's
               Ready; total_s: from the first deletion to the last new pod Ready.
           Exits 1 with the first violation on stderr."""
import json
import os
import subprocess
import sys
import threading
import time


def stream(argv, path, stop_file):
    """Runs the watch, appends every object it prints; restarts it if it ends early."""
    with open(path, "a") as out:
        while not os.path.exists(stop_file):
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            decoder, buf = json.JSONDecoder(), ""
            stopper = threading.Thread(target=lambda: stop_when(stop_file, proc), daemon=True)
            stopper.start()
            for chunk in iter(lambda: proc.stdout.readline(), ""):
                buf += chunk
                while True:
                    stripped = buf.lstrip()
                    if not stripped:
                        buf = ""
                        break
                    try:
                        obj, end = decoder.raw_decode(stripped)
                    except json.JSONDecodeError:
                        break   # an object not complete yet
                    buf = stripped[end:]
                    out.write(json.dumps({"t": time.time(), "object": obj}) + "\n")
                    out.flush()
            proc.wait()
            time.sleep(0.5)   # before a watch that ended is started again


def stop_when(stop_file, proc):
    while proc.poll() is None:
        if os.path.exists(stop_file):
            proc.terminate()
            return
        time.sleep(0.2)


def record(namespace, cluster, directory, stop_file):
    os.makedirs(directory, exist_ok=True)
    watches = [
        (["kubectl", "-n", namespace, "get", "cluster", cluster, "-w", "-o", "json"],
         os.path.join(directory, "cluster.jsonl")),
        (["kubectl", "-n", namespace, "get", "pods", "-l", "app.kubernetes.io/instance=" + cluster,
          "-w", "-o", "json"], os.path.join(directory, "pods.jsonl")),
    ]
    threads = [threading.Thread(target=stream, args=(argv, path, stop_file)) for argv, path in watches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def condition(status, kind):
    for c in status.get("conditions") or []:
        if c["type"] == kind:
            return c
    return {}


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def report(directory, old, new):
    clusters = load(os.path.join(directory, "cluster.jsonl"))
    pods = load(os.path.join(directory, "pods.jsonl"))
    if not clusters or not pods:
        fail("nothing recorded (%d Cluster events, %d pod events)" % (len(clusters), len(pods)))

    # --- the Cluster's status, write by write --------------------------------------------
    versions, order = [], []
    ready_reasons, degraded, features = [], [], []
    last = None
    for event in clusters:
        status = event["object"].get("status") or {}
        brokers = sorted(status.get("brokers") or [], key=lambda b: b["id"])
        vector = tuple((b["id"], b.get("version")) for b in brokers)
        if last is not None and vector != last:
            before, after = dict(last), dict(vector)
            changed = [i for i in after if before.get(i) != after[i]]
            if len(changed) != 1:
                fail("status.brokers changed %d brokers' versions in one write: %s -> %s" % (len(changed), last, vector))
            i = changed[0]
            allowed = {(old, None), (None, new), (old, new)}
            if (before.get(i), after[i]) not in allowed:
                fail("broker %d went from %r to %r" % (i, before.get(i), after[i]))
            in_transit = [j for j, v in after.items() if v not in (old, new)]
            if len(in_transit) > 1:
                fail("brokers %s are between releases at once: %s" % (in_transit, vector))
            if after[i] == new:
                order.append(i)
        if vector != last:
            versions.append({"t": event["t"], "versions": {str(i): v for i, v in vector}})
        last = vector
        for kind, seen in (("Ready", ready_reasons), ("Degraded", degraded), ("FeaturesFinalized", features)):
            c = condition(status, kind)
            value = c.get("reason") if kind == "Ready" else c.get("status")
            if value is not None and (not seen or seen[-1] != value):
                seen.append(value)
    if any(v != new for _, v in last):
        fail("the recording ends with brokers on %s" % (last,))
    if sorted(order) != sorted(i for i, _ in last) or len(order) != len(set(order)):
        fail("brokers reached %s in the order %s" % (new, order))

    # --- the pods, event by event ----------------------------------------------------------
    current = {}        # pod name -> (uid of its newest pod, whether that pod is up)
    replaced = set()    # uids of pods a newer pod of the same name followed
    deleted_at, ready_at = {}, {}
    first_uid = {}
    most_down = 0
    for event in pods:
        pod = event["object"]
        meta = pod["metadata"]
        name, uid = meta["name"], meta["uid"]
        first_uid.setdefault(name, uid)
        if uid in replaced:
            continue   # a late event of a pod already replaced
        if name in current and current[name][0] != uid:
            replaced.add(current[name][0])
        terminating = bool(meta.get("deletionTimestamp"))
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in (pod.get("status") or {}).get("conditions") or [])
        image = next((c["image"] for c in pod["spec"]["containers"] if c["name"] == "broker"), "")
        if terminating and uid == first_uid[name]:
            deleted_at.setdefault(name, event["t"])
        if ready and not terminating and uid != first_uid[name] and image.endswith(":" + new):
            ready_at.setdefault(name, event["t"])
        # A deleted pod's last event is its terminating self: its name is down until the
        # StatefulSet's new pod of that name is Ready.
        current[name] = (uid, ready and not terminating)
        most_down = max(most_down, sum(1 for _, up in current.values() if not up))
    per_broker = {}
    for name in sorted(first_uid):
        if name not in deleted_at or name not in ready_at:
            fail("%s: its old pod was not deleted or its new one never Ready on %s (deleted %s, ready %s)"
                 % (name, new, name in deleted_at, name in ready_at))
        per_broker[name] = round(ready_at[name] - deleted_at[name], 1)
    total = round(max(ready_at.values()) - min(deleted_at.values()), 1)
    print(json.dumps({"versions": len(versions), "order": order, "ready_reasons": ready_reasons,
                      "degraded": degraded, "features": features, "most_down": most_down,
                      "per_broker_s": per_broker, "total_s": total, "history": versions}))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "record":
        record(*args)
    elif command == "report":
        report(*args)
    else:
        raise SystemExit(__doc__)
