"""Three combined broker+controller `oxbow` nodes (ids 1..3) for the cluster fault tests
(e2e/cluster/replication.py): started with the plain `--override` flags `oxbow dev` prints,
each on its own data directory; SIGKILL / SIGTERM / SIGSTOP and restart on the same data; a
node's own Metadata answer (a raw Kafka Metadata v7 request to that node alone, so no
client cache is involved); and, when the machine allows it, one network namespace per node
so a node can be cut off from the others while its clients still reach it.
"""
import contextlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
import urllib.request

from kafka_wire import metadata_request

NODES = (1, 2, 3)
# Below the ephemeral port range (32768-) and apart from the other suites' ports.
CLIENT_BASE, CONTROLLER_BASE, METRICS_BASE = 29192, 29292, 29392
STOP_TIMEOUT = 60.0  # a SIGTERMed node exits


class Network:
    """Where the nodes live. With namespaces, node N is 10.231.K.N in namespace `oxrP-nN`
    (veth into bridge `oxrPbr`, which holds 10.231.K.254 for this process and its clients);
    a partition is a pair of blackhole routes per cut link, so clients still reach the node.
    Everything is named after this process's pid and removed by teardown(); setup() first
    removes what an earlier run that died without its teardown left (its pid is gone)."""

    def __init__(self, use_netns):
        self.netns = use_netns
        pid = os.getpid()
        self.prefix = f"oxr{pid}"  # at most 10 characters: link names stay within 15
        self.subnet = f"10.231.{20 + pid % 200}"
        self.bridge = f"{self.prefix}br"
        self.cuts = []  # (namespace node, destination node)

    def host(self, node):
        return f"{self.subnet}.{node}" if self.netns else "127.0.0.1"

    def namespace(self, node):
        return f"{self.prefix}-n{node}"

    def wrap(self, node, command):
        return ["ip", "netns", "exec", self.namespace(node), *command] if self.netns else command

    @staticmethod
    def ip(*args, check=True):
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
        if check and done.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
        return done.returncode == 0

    @staticmethod
    def available():
        """Root with a working `ip netns`: probed by making and removing a namespace."""
        if os.geteuid() != 0 or not shutil.which("ip"):
            return False
        probe = f"oxrprobe{os.getpid()}"
        if not Network.ip("netns", "add", probe, check=False):
            return False
        Network.ip("netns", "del", probe, check=False)
        return True

    @staticmethod
    def sweep():
        def dead(pid):
            return not os.path.exists(f"/proc/{pid}")
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
        for name in re.findall(r"^(oxr(\d+)-n\d)\b", listed, re.M):
            if dead(name[1]):
                Network.ip("netns", "del", name[0], check=False)
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=30).stdout
        for name in re.findall(r"^\d+: (oxr(\d+)(?:br|h\d))[@:]", links, re.M):
            if dead(name[1]):
                Network.ip("link", "del", name[0], check=False)

    def setup(self):
        if not self.netns:
            return
        self.sweep()
        self.ip("link", "add", self.bridge, "type", "bridge")
        self.ip("addr", "add", f"{self.subnet}.254/24", "dev", self.bridge)
        self.ip("link", "set", self.bridge, "up")
        for node in NODES:
            ns, host_end, ns_end = self.namespace(node), f"{self.prefix}h{node}", f"{self.prefix}v{node}"
            self.ip("netns", "add", ns)
            self.ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
            self.ip("link", "set", ns_end, "netns", ns)
            self.ip("link", "set", host_end, "master", self.bridge, "up")
            self.ip("-n", ns, "addr", "add", f"{self.subnet}.{node}/24", "dev", ns_end)
            self.ip("-n", ns, "link", "set", ns_end, "up")
            self.ip("-n", ns, "link", "set", "lo", "up")

    def cut(self, node, others):
        """Drops every packet between `node` and `others`, both ways; clients unaffected."""
        for other in others:
            for a, b in ((node, other), (other, node)):
                self.ip("-n", self.namespace(a), "route", "add", "blackhole", f"{self.subnet}.{b}/32")
                self.cuts.append((a, b))

    def heal(self):
        while self.cuts:
            a, b = self.cuts.pop()
            self.ip("-n", self.namespace(a), "route", "del", "blackhole", f"{self.subnet}.{b}/32", check=False)

    def teardown(self):
        if not self.netns:
            return
        self.heal()
        for node in NODES:
            self.ip("netns", "del", self.namespace(node), check=False)
            self.ip("link", "del", f"{self.prefix}h{node}", check=False)
        self.ip("link", "del", self.bridge, check=False)


class Cluster:
    """Nodes 1..3 (or `nodes`), data in `work/node-N`, output in `work/node-N.log` (appended
    across restarts, each start headed by its command line). `voters` (default: every node)
    are combined broker+controller nodes, the rest broker-only; `bases` moves the client,
    controller and metrics ports; `extra` adds `--override` settings to every node and
    `node_extra` ({node: [...]}) to one node, after the others (a later override wins).
    With `tls` (a certs.MutualTls) the client and inter-broker listener is SSL and the
    controller listener too, client certificates required on both; the harness's own
    Metadata requests then use the client certificate. The metrics listener stays HTTP."""

    def __init__(self, binary, work, network, cluster_id="replication-history", nodes=NODES, voters=None,
                 bases=(CLIENT_BASE, CONTROLLER_BASE, METRICS_BASE), extra=(), node_extra=None, tls=None):
        self.binary, self.work, self.net, self.cluster_id = binary, work, network, cluster_id
        self.tls = tls
        self.nodes = tuple(nodes)
        self.voter_ids = tuple(voters if voters is not None else nodes)
        self.client_base, self.controller_base, self.metrics_base = bases
        self.extra = list(extra)
        self.node_extra = dict(node_extra or {})
        # Environment variables of one node's next start ({node: {name: value}}).
        self.node_env = {}
        # The binary of one node's next start, when not `binary` (another release).
        self.node_binary = {}
        self.procs = {}
        self.stopped = set()  # SIGSTOPped
        self.voters = ",".join(f"{n}@{network.host(n)}:{self.controller_base + n - 1}" for n in self.voter_ids)
        self.bootstrap = ",".join(f"{network.host(n)}:{self.client_base + n - 1}" for n in self.nodes)

    def client_port(self, node):
        return self.client_base + node - 1

    def metrics_port(self, node):
        return self.metrics_base + node - 1

    def data_dir(self, node):
        return os.path.join(self.work, f"node-{node}")

    def command(self, node):
        host = self.net.host(node)
        listeners = f"{'SSL' if self.tls else 'PLAINTEXT'}://{host}:{self.client_port(node)}"
        if node in self.voter_ids:
            listeners += f",CONTROLLER://{host}:{self.controller_base + node - 1}"
        overrides = [
            f"node.id={node}",
            "process.roles=" + ("broker,controller" if node in self.voter_ids else "broker"),
            f"listeners={listeners}",
            f"controller.quorum.voters={self.voters}",
            f"log.dirs={self.data_dir(node)}",
            f"metrics.listener={host}:{self.metrics_port(node)}",
            f"cluster.id={self.cluster_id}",
            *(self.tls.broker_overrides(node) if self.tls else ()),
            *self.extra,
            *self.node_extra.get(node, ()),
        ]
        binary = self.node_binary.get(node, self.binary)
        return self.net.wrap(node, [binary, *[a for o in overrides for a in ("--override", o)]])

    def start(self, node):
        with open(os.path.join(self.work, f"node-{node}.log"), "ab") as out:
            out.write(f"=== start {time.strftime('%H:%M:%S')} {' '.join(self.command(node))}\n".encode())
            out.flush()
            self.procs[node] = subprocess.Popen(self.command(node), stdout=out, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True,
                                                env={**os.environ, **self.node_env.get(node, {})})

    def alive(self, node):
        proc = self.procs.get(node)
        return proc is not None and proc.poll() is None

    def signal(self, node, sig):
        self.procs[node].send_signal(sig)
        if sig == signal.SIGSTOP:
            self.stopped.add(node)
        elif sig == signal.SIGCONT:
            self.stopped.discard(node)

    def kill(self, node):
        if self.alive(node):
            self.procs[node].send_signal(signal.SIGCONT)
            self.procs[node].send_signal(signal.SIGKILL)
            self.procs[node].wait()
        self.stopped.discard(node)

    def terminate(self, nodes):
        """SIGTERM to every node at once; each should exit 0 within STOP_TIMEOUT. Returns
        what went wrong (a node killed after the timeout, a non-zero exit), one line each."""
        problems = []
        for node in nodes:
            if self.alive(node):
                self.signal(node, signal.SIGTERM)
        for node in nodes:
            proc = self.procs.get(node)
            if proc is None:
                continue
            try:
                code = proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill(node)
                problems.append(f"node {node} still running {STOP_TIMEOUT:.0f} s after SIGTERM (killed)")
                continue
            if code != 0:
                problems.append(f"node {node} exited with {code} after SIGTERM")
        return problems

    def ready(self, node):
        if not self.alive(node) or node in self.stopped:
            return False
        try:
            url = f"http://{self.net.host(node)}:{self.metrics_port(node)}/readyz"
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status == 200
        except Exception:
            return False

    def controller(self, node):
        """The active controller as node `node` sees it (its /metadata JSON), or None."""
        if not self.alive(node) or node in self.stopped:
            return None
        try:
            url = f"http://{self.net.host(node)}:{self.metrics_port(node)}/metadata"
            with urllib.request.urlopen(url, timeout=2) as r:
                return json.loads(r.read()).get("controller_id")
        except Exception:
            return None

    def metadata(self, node):
        """Node `node`'s own answer to a Kafka Metadata v7 request (all topics), or None:
        {"brokers": {id, ...} (unfenced), "partitions": {(topic, p): {leader, epoch, replicas, isr}}}."""
        if not self.alive(node) or node in self.stopped:
            return None
        try:
            answer = metadata_request(self.net.host(node), self.client_port(node),
                                      self.tls.context if self.tls else None)
        except (OSError, struct.error, ValueError):
            return None
        # A just-fenced broker stays listed a few seconds for clients' sake
        # (broker/src/api/metadata/listed_brokers.rs); the node's /metadata says who is
        # fenced, so "brokers" still means the unfenced ones here.
        fenced = self.fenced(node)
        if fenced is None:
            return None
        answer["brokers"] = {b for b in answer["brokers"] if b not in fenced}
        return answer

    def fenced(self, node):
        """The brokers node `node` knows to be fenced (its /metadata JSON), or None."""
        try:
            url = f"http://{self.net.host(node)}:{self.metrics_port(node)}/metadata"
            with urllib.request.urlopen(url, timeout=2) as r:
                return set(json.loads(r.read()).get("fenced", []))
        except Exception:
            return None

    def logs_tail(self, lines=30):
        for node in self.nodes:
            path = os.path.join(self.work, f"node-{node}.log")
            if os.path.exists(path):
                with open(path, "rb") as f:
                    tail = f.read().decode(errors="replace").splitlines()[-lines:]
                print(f"--- node-{node}.log (tail) ---\n" + "\n".join(tail), flush=True)

    @contextlib.contextmanager
    def running(self, ready_within=90.0):
        """Starts every node and waits until each is ready; stops them all afterwards. When
        the body fails, prints the nodes' log tails and keeps `work` to look at; otherwise
        removes it."""
        failed = False
        try:
            for node in self.nodes:
                self.start(node)
            deadline = time.monotonic() + ready_within
            while not all(self.ready(n) for n in self.nodes):
                if time.monotonic() > deadline:
                    raise AssertionError(f"not every node ready within {ready_within:.0f} s")
                time.sleep(0.3)
            yield self
        except BaseException:
            failed = True
            self.logs_tail(40)
            print(f"node logs kept in {self.work}", flush=True)
            raise
        finally:
            self.shutdown_all()
            if not failed:
                shutil.rmtree(self.work, ignore_errors=True)

    def shutdown_all(self):
        for node in list(self.procs):
            self.kill(node)
