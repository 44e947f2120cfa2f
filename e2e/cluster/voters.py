#!/usr/bin/env python3
"""The metadata quorum's voters changed at run time (KIP-853) with Kafka's own tool, under
load, with real processes: 1 -> 3 -> 5 -> 3 voters.

Node 1 forms a dynamic quorum alone (`controller.quorum.voters` names it, and every node
names it in `controller.quorum.bootstrap.servers`). Nodes 2-5 are combined broker and
controller nodes that join as observers; node 6 is a broker that only knows node 1's
controller address. Throughout: an idempotent acks=all producer with a consumer group on
an RF=3 topic (min.insync.replicas=2), and a probe that creates a topic every 200 ms and
times each one (how long the metadata quorum could not take a change).

1. `kafka-metadata-quorum add-controller` (node N's own properties file: node id, roles,
   listeners, log.dirs whose meta.properties holds the directory id) for nodes 2 and 3,
   then 4 and 5: `describe --status` shows each voter set, with directory ids.
2. Refused, with Kafka's error: adding a voter twice (DUPLICATE_VOTER), removing a node
   that is no voter and removing one with another directory id (VOTER_NOT_FOUND).
3. `remove-controller` for the active controller, then the highest other voter (directory
   ids from meta.properties): three voters, a new leader; the removed nodes go on as
   observers.
4. An added voter is SIGKILLed and restarted: it comes back as a voter. Node 1, the only
   bootstrap server, is SIGKILLed: node 6 still follows the metadata through the voters it
   learned, and node 1 restarts into the changed quorum.
5. Every acknowledged record is read back; zero failed produce requests; the probe's worst
   time is printed and held to METADATA_BOUND_S.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "e2e", "lib"))
sys.path.insert(0, os.path.join(ROOT, "e2e", "cluster"))
from oxbow_e2e import fail, wait_for  # noqa: E402
from load import Load  # noqa: E402
from oxbow_cluster import Cluster, Network  # noqa: E402

KAFKA_BIN = os.path.join(ROOT, "e2e", "peers", "kafka", "bin")
PORT = int(os.environ.get("OXBOW_VOTERS_PORT", "30192"))
CLIENT_BASE, CONTROLLER_BASE, METRICS_BASE = PORT, PORT + 100, PORT + 200
NODES = (1, 2, 3, 4, 5, 6)
CONTROLLERS = (1, 2, 3, 4, 5)
TOPIC = "voters-load"
RATE = 300  # records/s
# Longest a metadata change may take while voters come and go (the stated bound; the
# measured worst is printed). A removed leader steps down once the new configuration
# commits and the others elect one within their election timeout (0.4-0.7 s) plus
# openraft's leader lease.
METADATA_BOUND_S = 10.0


class Nodes(Cluster):
    """Cluster's process handling, with dynamic-quorum command lines."""

    def command(self, node):
        host = "127.0.0.1"
        listeners = f"PLAINTEXT://{host}:{self.client_port(node)}"
        if node in CONTROLLERS:
            listeners += f",CONTROLLER://{host}:{self.controller_base + node - 1}"
        overrides = [
            f"node.id={node}",
            "process.roles=" + ("broker,controller" if node in CONTROLLERS else "broker"),
            f"listeners={listeners}",
            f"controller.quorum.bootstrap.servers={host}:{self.controller_base}",
            f"log.dirs={self.data_dir(node)}",
            f"metrics.listener={host}:{self.metrics_port(node)}",
            f"cluster.id={self.cluster_id}",
            "offsets.topic.replication.factor=3",
            "group.initial.rebalance.delay.ms=0",
        ]
        if node == 1:
            overrides.append(f"controller.quorum.voters=1@{host}:{self.controller_base}")
        return [self.binary, *[a for o in overrides for a in ("--override", o)]]

    def properties(self, node):
        """Node `node`'s configuration as a Kafka properties file (what add-controller reads)."""
        path = os.path.join(self.work, f"node-{node}.properties")
        with open(path, "w") as f:
            f.write(f"node.id={node}\nprocess.roles=broker,controller\n"
                    f"listeners=PLAINTEXT://127.0.0.1:{self.client_port(node)},"
                    f"CONTROLLER://127.0.0.1:{self.controller_base + node - 1}\n"
                    "controller.listener.names=CONTROLLER\n"
                    f"log.dirs={self.data_dir(node)}\n")
        return path

    def directory_id(self, node):
        with open(os.path.join(self.data_dir(node), "meta.properties")) as f:
            for line in f:
                if line.startswith("directory.id="):
                    return line.split("=", 1)[1].strip()
        fail(f"node {node}'s meta.properties has no directory.id")


def run(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def quorum_tool(cluster, *args, config=None):
    command = [f"{KAFKA_BIN}/kafka-metadata-quorum", "--bootstrap-server", cluster.bootstrap]
    if config:
        command += ["--command-config", config]
    return run(command + list(args))


def status(cluster):
    """(leader id, [voter ids], CurrentVoters text) from `describe --status`, or None."""
    done = quorum_tool(cluster, "describe", "--status")
    if done.returncode != 0:
        return None
    fields = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    voters_text = fields.get("CurrentVoters", "").strip()
    ids = sorted(int(i) for i in re.findall(r'"id":\s*(\d+)', voters_text))
    try:
        return int(fields.get("LeaderId", "-1")), ids, voters_text
    except ValueError:
        return None


def wait_voters(cluster, expected, what):
    try:
        return wait_for(lambda: (s := status(cluster)) and s[1] == sorted(expected) and s, 60,
                        f"{what}: voters {sorted(expected)}", interval=0.5)
    except AssertionError:
        fail(f"{what}: the voters never became {sorted(expected)} (last: {status(cluster)})")


class Probes:
    """Creates a topic every 200 ms while the load runs and times each CreateTopics: how long
    the metadata quorum could not take a change, per phase of the test."""

    def __init__(self):
        self.times, self.failures = [], []
        self.in_flight = None  # the phase of the probe in flight, if any

    def run(self, load):
        admin = AdminClient({"bootstrap.servers": load.bootstrap})
        i = 0
        while not load.stop.is_set():
            i += 1
            started = time.time()
            phase = self.in_flight = load.phase
            try:
                admin.create_topics([NewTopic(f"probe-{i}", 1, 1)], operation_timeout=30,
                                    request_timeout=30)[f"probe-{i}"].result(timeout=40)
                self.times.append((phase, time.time() - started))
            except Exception as error:  # noqa: BLE001 - a failed probe is what we count
                self.failures.append((phase, str(error)))
            self.in_flight = None
            time.sleep(0.2)

    def enter(self, load, phase):
        """Starts `phase` once no probe of an earlier phase is in flight: a probe sent
        before a SIGKILL of the broker it went to fails in the kill's phase, not the one
        before it."""
        load.phase = phase
        wait_for(lambda: self.in_flight in (None, phase), 60, f"the probe before {phase}", interval=0.02)


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-voters-")
    cluster = Nodes(binary, work, Network(False), cluster_id="voters-dynamic", nodes=NODES,
                    voters=CONTROLLERS, bases=(CLIENT_BASE, CONTROLLER_BASE, METRICS_BASE))
    with cluster.running():
        change_voters(cluster)


def change_voters(cluster):
    load = None
    try:
        leader, voters, text = wait_voters(cluster, [1], "a new dynamic quorum")
        print(f"formed: leader {leader}, voters {voters}", flush=True)
        replication = quorum_tool(cluster, "describe", "--replication")
        print(replication.stdout, end="", flush=True)
        if replication.returncode != 0 or "Observer" not in replication.stdout:
            fail(f"describe --replication shows no observers: {replication.stdout} {replication.stderr[-400:]}")

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 6, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(30)
        probes = Probes()
        load = Load(cluster.bootstrap, TOPIC, "voters-readers", RATE, keys=97, side=[probes.run])
        load.start()
        time.sleep(3)

        timings = {}
        for phase, nodes, expected in (("1->3", (2, 3), [1, 2, 3]), ("3->5", (4, 5), [1, 2, 3, 4, 5])):
            probes.enter(load, phase)
            started = time.time()
            for node in nodes:
                added = quorum_tool(cluster, "add-controller", config=cluster.properties(node))
                print(added.stdout.strip(), flush=True)
                if added.returncode != 0:
                    fail(f"add-controller {node}: {added.stdout} {added.stderr[-800:]}")
            leader, voters, text = wait_voters(cluster, expected, phase)
            timings[phase] = time.time() - started
            print(f"{phase}: voters {voters}, leader {leader}, {timings[phase]:.1f} s: {text}", flush=True)
            time.sleep(2)
        if text.count('"directoryId": null') != 0:
            fail(f"every voter's directory id should be known: {text}")

        probes.enter(load, "refusals")
        again = quorum_tool(cluster, "add-controller", config=cluster.properties(3))
        if again.returncode == 0 or "DuplicateVoterException" not in again.stdout + again.stderr:
            fail(f"adding voter 3 twice: {again.returncode} {again.stdout} {again.stderr[-600:]}")
        # A directory id may begin with '-' (base64url): given as --opt=value, so the tool's
        # parser never takes it for an option.
        unknown = quorum_tool(cluster, "remove-controller", "--controller-id", "9",
                              f"--controller-directory-id={cluster.directory_id(4)}")
        if unknown.returncode == 0 or "VoterNotFoundException" not in unknown.stdout + unknown.stderr:
            fail(f"removing node 9: {unknown.returncode} {unknown.stdout} {unknown.stderr[-600:]}")
        wrong_dir = quorum_tool(cluster, "remove-controller", "--controller-id", "4",
                                f"--controller-directory-id={cluster.directory_id(5)}")
        if wrong_dir.returncode == 0 or "VoterNotFoundException" not in wrong_dir.stdout + wrong_dir.stderr:
            fail(f"removing node 4 by node 5's directory: {wrong_dir.stdout} {wrong_dir.stderr[-600:]}")
        if status(cluster)[1] != [1, 2, 3, 4, 5]:
            fail(f"a refused change changed the voters: {status(cluster)}")
        print("refused: a duplicate voter, an unknown voter, a wrong directory id", flush=True)

        # The active controller goes first: it steps down once the configuration without it
        # commits, and the others elect a leader.
        probes.enter(load, "5->3")
        started = time.time()
        leader_before = status(cluster)[0]
        leaving = [leader_before, max(n for n in CONTROLLERS if n != leader_before)]
        remaining = sorted(set(CONTROLLERS) - set(leaving))
        for node in leaving:
            removed = quorum_tool(cluster, "remove-controller", "--controller-id", str(node),
                                  f"--controller-directory-id={cluster.directory_id(node)}")
            print(removed.stdout.strip(), flush=True)
            if removed.returncode != 0:
                fail(f"remove-controller {node}: {removed.stdout} {removed.stderr[-800:]}")
        leader, voters, text = wait_voters(cluster, remaining, "5->3")
        timings["5->3"] = time.time() - started
        print(f"5->3: removed {leaving}, voters {voters}, leader {leader_before} -> {leader}, "
              f"{timings['5->3']:.1f} s", flush=True)
        if leader in leaving:
            fail(f"removed node {leader} still leads")
        replication = quorum_tool(cluster, "describe", "--replication").stdout
        observers = {int(line.split()[0]) for line in replication.splitlines()
                     if line.strip().endswith("Observer")}
        if not set(leaving) <= observers:
            fail(f"removed voters {leaving} should go on as observers: {replication}")

        probes.enter(load, "restart an added voter")
        added = max(n for n in remaining if n != 1)
        cluster.kill(added)
        time.sleep(1)
        cluster.start(added)
        wait_for(lambda: cluster.ready(added), 60, f"voter {added} back", interval=0.3)
        wait_voters(cluster, remaining, f"after restarting voter {added}")

        probes.enter(load, "kill node 1")
        cluster.kill(1)
        topic = "after-node-1"
        survivor = AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.client_port(remaining[-1])}"})
        survivor.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        wait_for(lambda: (m := cluster.metadata(6)) and any(t == topic for t, _ in m["partitions"]), 30,
                 "broker 6 (bootstrap: node 1 only) following the metadata with node 1 down", interval=0.3)
        print("node 1 down: broker 6 still follows the metadata through the voters it learned", flush=True)
        cluster.start(1)
        wait_for(lambda: cluster.ready(1), 60, "node 1 back in the grown quorum", interval=0.3)
        wait_voters(cluster, remaining, "after restarting node 1")

        probes.enter(load, "end")
        time.sleep(3)
        load.finish()
        missing = load.acked - load.seen
        checker = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "voters-checker",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
        checker.subscribe([TOPIC])
        read_back, deadline = set(), time.time() + 60
        while not load.acked <= read_back and time.time() < deadline:
            for message in checker.consume(1000, 1):
                if not message.error():
                    read_back.add(message.value().decode())
        checker.close()
        lost = load.acked - read_back
        worst = {}
        for phase, seconds in probes.times:
            worst[phase] = max(worst.get(phase, 0), seconds)
        print(f"acked {len(load.acked)}, failed produce {len(load.failed)}, lost {len(lost)}, "
              f"group saw all: {not missing}", flush=True)
        print("voter changes: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()), flush=True)
        print("worst metadata change (CreateTopics) per phase: "
              + ", ".join(f"{k} {v:.2f} s" for k, v in worst.items()), flush=True)
        print(f"probes {len(probes.times)}, failed {len(probes.failures)}: {probes.failures[:3]}", flush=True)
        if lost:
            fail(f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}")
        if load.failed:
            fail(f"{len(load.failed)} produce requests failed: {load.failed[:3]}")
        changing = [s for p, s in probes.times if p in ("1->3", "3->5", "5->3", "refusals")]
        if not changing or max(changing) > METADATA_BOUND_S:
            fail(f"a metadata change took {max(changing or [0]):.1f} s while voters changed (bound {METADATA_BOUND_S} s)")
        if [f for f in probes.failures if f[0] in ("1->3", "3->5", "5->3", "refusals")]:
            fail(f"metadata changes failed while voters changed: {probes.failures}")
        print("OK voters 1 -> 3 -> 5 -> 3 under load", flush=True)
    finally:
        if load:
            load.stop.set()


if __name__ == "__main__":
    main()
