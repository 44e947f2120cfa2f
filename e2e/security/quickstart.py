"""The README's secured quick start (issue 33, point 7): `oxbow dev --brokers 1 --secure`.

- it writes a CA, the brokers' key store, the admin password and client configs, and
  prints how to connect;
- kcat with the written `kcat.conf` lists, produces and consumes; Kafka's Java tools
  with the written `client.properties` list the topic;
- nothing is served without credentials: a plaintext request on the client port gets no
  answer, kcat without the config is refused, the replication and controller ports refuse
  a TLS client without a certificate;
- Ctrl-C stops it cleanly.

Usage: quickstart.py BROKER_BINARY
"""

import os
import shutil
import shlex
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from oxbow_e2e import free_port  # noqa: E402
from common import KAFKA_BIN, fail, log, work_dir  # noqa: E402



def run(*args, stdin=None):
    # From another directory than `oxbow dev`'s: the written configs must not depend on it.
    return subprocess.run(list(args), input=stdin, capture_output=True, text=True, timeout=120, cwd="/")


def refused_without_certificate(port, ca):
    context = ssl.create_default_context(cafile=ca)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"\x00\x00\x00\x01\x01")
                tls.recv(16)
        return False
    except (ssl.SSLError, OSError):
        return True


def alive(pid):
    """Whether `pid` still runs (a zombie does not): it may be reaped between two looks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def restart_by_hand(directory, output):
    """SIGKILLs node 1 (its pid from its data directory's lock) and starts it again with the
    command line `oxbow dev` printed for it, from the same directory; returns that process."""
    printed = next((line for line in output if line.startswith("oxbow dev: node 1: ")), None)
    if printed is None:
        fail("oxbow dev did not print node 1's command line", output=output)
    lock = os.path.join(directory, "node-1", ".lock")
    with open(lock) as f:
        pid = int(f.read().strip())
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 30
    while alive(pid):
        if time.time() > deadline:
            fail(f"node 1 (pid {pid}) survived SIGKILL", output=output)
        time.sleep(0.1)
    argv = shlex.split(printed[len("oxbow dev: node 1: "):])
    by_hand = subprocess.Popen(argv, cwd=os.path.dirname(directory), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while True:
        try:
            with open(lock) as f:
                if f.read().strip() == str(by_hand.pid):
                    break
        except OSError:
            pass
        if time.time() > deadline or by_hand.poll() is not None:
            fail("node 1 started by hand did not take its data directory", output=output)
        time.sleep(0.2)
    log(f"ok node 1 SIGKILLed and started again by hand (pid {by_hand.pid}) with the printed command")
    return by_hand


def main():
    binary = sys.argv[1]
    work = work_dir("oxbow-quickstart-")
    directory = os.path.join(work, "oxbow-dev")
    base, controller, metrics = free_port(), free_port(), free_port()
    # As the README runs it: a relative --dir, in the directory the user is in. The client
    # configs it writes must work from anywhere else (they name their files absolutely).
    command = [binary, "dev", "--brokers", "1", "--secure", "--dir", "oxbow-dev", "--base-port", str(base),
               "--controller-base-port", str(controller), "--metrics-base-port", str(metrics)]
    dev = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work)
    output = []
    threading.Thread(target=lambda: [output.append(line) for line in dev.stdout], daemon=True).start()
    try:
        deadline = time.time() + 120
        while not any("oxbow dev: secured:" in line for line in output):
            if time.time() > deadline or dev.poll() is not None:
                fail("oxbow dev --secure did not report a secured cluster", output=output)
            time.sleep(0.5)
        kcat_conf = os.path.join(directory, "kcat.conf")
        properties = os.path.join(directory, "client.properties")
        for path in (kcat_conf, properties, os.path.join(directory, "admin.password"),
                     os.path.join(directory, "tls", "ca.crt")):
            if not os.path.exists(path):
                fail(f"{path} was not written", output=output)
        if oct(os.stat(os.path.join(directory, "admin.password")).st_mode & 0o777) != "0o600":
            fail("admin.password is readable by others", output=output)
        printed = "".join(output)
        if f"kcat -F {kcat_conf} -L" not in printed or f"--command-config {properties}" not in printed:
            fail("the printed instructions do not name the written configs", output=output)
        log("ok oxbow dev --secure wrote the CA, key store, admin password (0600), kcat.conf and "
            "client.properties, and printed how to use them")

        listed = run("kcat", "-F", kcat_conf, "-L")
        if listed.returncode != 0 or "1 brokers" not in listed.stdout:
            fail(f"kcat -F kcat.conf -L: {listed.stdout[-300:]} {listed.stderr[-300:]}", output=output)
        records = "".join(f"quick-{i}\n" for i in range(20))
        produced = run("kcat", "-F", kcat_conf, "-P", "-t", "quickstart", stdin=records)
        consumed = run("kcat", "-F", kcat_conf, "-C", "-t", "quickstart", "-o", "beginning", "-e", "-q")
        if produced.returncode != 0 or consumed.stdout.split() != records.split():
            fail(f"kcat produce/consume: {produced.stderr[-300:]} / {consumed.stdout[-300:]} "
                 f"{consumed.stderr[-300:]}", output=output)
        topics = run(os.path.join(KAFKA_BIN, "kafka-topics"), "--bootstrap-server", f"127.0.0.1:{base}",
                     "--command-config", properties, "--list")
        if "quickstart" not in topics.stdout.split():
            fail(f"kafka-topics with client.properties: {topics.stdout[-300:]} {topics.stderr[-300:]}", output=output)
        log("ok kcat -F kcat.conf listed, produced 20 records and read them back; kafka-topics "
            "--command-config client.properties listed the topic")

        with socket.create_connection(("127.0.0.1", base), timeout=10) as raw:
            body = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
            raw.sendall(struct.pack(">i", len(body)) + body)
            raw.settimeout(5)
            try:
                answer = raw.recv(64)
            except (socket.timeout, ConnectionResetError):
                answer = b""
        if answer[4:8] == struct.pack(">i", 1):
            fail("the client port answered a plaintext ApiVersions", output=output)
        anonymous = run("kcat", "-b", f"127.0.0.1:{base}", "-X", "security.protocol=SSL", "-X",
                        f"ssl.ca.location={os.path.join(directory, 'tls', 'ca.crt')}", "-L", "-m", "10")
        if anonymous.returncode == 0:
            fail(f"kcat without SASL credentials was served: {anonymous.stdout[-300:]}", output=output)
        ca = os.path.join(directory, "tls", "ca.crt")
        for name, port in (("replication", controller + 100), ("controller", controller)):
            if not refused_without_certificate(port, ca):
                fail(f"the {name} port served a TLS client without a certificate", output=output)
        log("ok refused: a plaintext request on the client port, kcat over TLS without SASL credentials, a TLS "
            "client without a certificate on the replication and controller ports")

        # A node killed and started again by hand with the command `dev` printed: Ctrl-C
        # stops it too, not only the processes `dev` started.
        adopted = restart_by_hand(directory, output)
        dev.send_signal(signal.SIGINT)
        if dev.wait(60) != 0:
            fail(f"oxbow dev exited with {dev.returncode} on Ctrl-C", output=output)
        try:
            adopted.wait(10)
        except subprocess.TimeoutExpired:
            adopted.kill()
            fail("the node restarted by hand still runs after oxbow dev's Ctrl-C", output=output)
        if not any("started by hand; stopping it" in line for line in output):
            fail("oxbow dev did not say it stopped the node restarted by hand", output=output)
        log("ok Ctrl-C stopped the secured cluster cleanly, the node restarted by hand too")
        shutil.rmtree(work, ignore_errors=True)
    finally:
        if dev.poll() is None:
            dev.kill()


if __name__ == "__main__":
    main()
