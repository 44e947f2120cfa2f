"""Free loopback ports for the processes the e2e suites start (brokers, Kafka, the testbed's
control plane), shared by the Python helpers and, through `e2e/lib/free-port`, the shell ones.

Why not "bind to port 0, read it, release it": such a port is in the kernel's ephemeral range
(32768-60999), so between the release and the server's own bind, any outgoing connection on
the machine (a client, Kafka's JVM, the API server) can take it as its local end; CI runs lost
suites to "Address already in use" that way. Ports handed out here are below that range, from
a block nothing else uses (the Rust testkit takes 11000-18999, e2e/bench/scale 19092-19699,
fixed suite ports are 21092-25192, 25492-25494 (the upgrade fixture's controllers) and
28192-30394), and they come from a counter kept in a
file under a lock, so two callers (two shell commands of one suite, say) never get the same
port before either binds it.
"""

import fcntl
import socket

FIRST = 26000
COUNT = 2000
STATE = "/tmp/oxbow-e2e-ports.next"  # one counter for every caller, whatever its TMPDIR


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count):
    """`count` distinct ports that nothing listens on now and no earlier call handed out
    recently (the counter wraps after COUNT ports)."""
    with open(STATE, "a+") as state:
        fcntl.flock(state, fcntl.LOCK_EX)
        state.seek(0)
        text = state.read().strip()
        following = int(text) if text.isdigit() else 0
        found = []
        for _ in range(COUNT):
            port = FIRST + following % COUNT
            following += 1
            if _bindable(port):
                found.append(port)
                if len(found) == count:
                    break
        state.seek(0)
        state.truncate()
        state.write(str(following % COUNT))
    if len(found) < count:
        raise RuntimeError(f"only {len(found)} free loopback ports in {FIRST}-{FIRST + COUNT - 1}")
    return found


def free_port():
    return free_ports(1)[0]
