"""One run of a client tool against a broker: oxbow-loadgen, kafka-producer-perf-test,
kafka-consumer-perf-test, kafka-e2e-latency and kafka-topics, and the parsing of their output."""

import json
import re
import time

from . import constants
from .constants import KAFKA_BIN
from .processes import log, run, run_measured


def failure_text(err):
    """What to log of a failed client's stderr: a panic's message (a backtrace follows it, and
    its tail says nothing), otherwise the end."""
    lines = err.strip().splitlines()
    for index, line in enumerate(lines):
        if "panicked at" in line:
            return "\n".join(lines[index:index + 3])
    return err.strip()[-500:]


def loadgen(broker, row, mode, plan, extra=(), label=""):
    cmd = [str(constants.LOADGEN), "--bootstrap", broker.bootstrap, "--topic", row.topic,
           "--partitions", str(row.partitions), "--label", label or row.name, mode, *extra]
    code, out, err, client_cpu, broker_cpu = run_measured(cmd, plan.timeout, broker)
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if code != 0 or not lines:
        log(f"  loadgen {mode} failed ({code}): {failure_text(err)}")
        return None
    report = json.loads(lines[-1])
    report["client_cpu_s"], report["broker_cpu_s"] = client_cpu, broker_cpu
    return report


def producer_settings(row):
    settings = ["--size", str(row.size), "--acks", row.acks, "--compression", row.compression]
    payload = getattr(row, "payload", None)
    return settings + (["--payload", payload] if payload else [])


def create_topic(broker, topic, row):
    """Creates `topic` with the row's partitions; a replicated one with min.insync.replicas=2,
    which the load generator cannot set, so with Kafka's own admin tool. True when it exists."""
    if row.replicas == 1:
        cmd = [str(constants.LOADGEN), "--bootstrap", broker.bootstrap, "--topic", topic,
               "--partitions", str(row.partitions), "create"]
    else:
        cmd = [str(KAFKA_BIN / "kafka-topics"), "--bootstrap-server", broker.bootstrap, "--create",
               "--if-not-exists", "--topic", topic, "--partitions", str(row.partitions),
               "--replication-factor", str(row.replicas), "--config", "min.insync.replicas=2"]
    code, out, err = run(cmd, 60)
    if code != 0:
        log(f"  {broker.name}: creating {topic} failed ({code}): {(out + err).strip()[-500:]}")
    return code == 0


def perf_produce(broker, row, plan):
    topic = row.topic + "-perf"
    if not create_topic(broker, topic, row):
        return None
    cmd = [str(KAFKA_BIN / "kafka-producer-perf-test"), "--topic", topic,
           "--num-records", str(plan.perf_messages[row.size]), "--record-size", str(row.size),
           "--throughput", "-1", "--producer-props", f"bootstrap.servers={broker.bootstrap}",
           f"acks={row.acks}", f"compression.type={row.compression}"]
    code, out, err = run(cmd, plan.timeout)
    # "N records sent, X records/sec (Y MB/sec), A ms avg latency, ... P ms 99th, ..."
    last = [l for l in out.splitlines() if "records sent" in l]
    match = last and re.search(r"([\d.]+) records/sec \(([\d.]+) MB/sec\).*?([\d.]+) ms 99th",
                               last[-1])
    if code != 0 or not match:
        log(f"  kafka-producer-perf-test failed ({code}): {(out + err).strip()[-500:]}")
        return None
    return {"msgs_per_s": float(match[1]), "mb_per_s": float(match[2]),
            "p99_ms": float(match[3])}


def perf_consume(broker, row, plan):
    cmd = [str(KAFKA_BIN / "kafka-consumer-perf-test"), "--bootstrap-server", broker.bootstrap,
           "--topic", row.topic + "-perf", "--messages", str(plan.perf_messages[row.size]),
           "--timeout", "30000", "--group", f"bench-perf-{time.time_ns()}"]
    code, out, err = run(cmd, plan.timeout)
    # CSV: start, end, MB, MB.sec, nMsg, nMsg.sec, rebalance.ms, fetch.ms, fetch.MB.sec, fetch.nMsg.sec
    lines = [l for l in out.splitlines() if re.match(r"^\d{4}-", l)]
    if code != 0 or not lines:
        log(f"  kafka-consumer-perf-test failed ({code}): {(out + err).strip()[-500:]}")
        return None
    fields = [f.strip() for f in lines[-1].split(",")]
    return {"mb_per_s": float(fields[8]), "msgs_per_s": float(fields[9]),
            "messages": int(fields[4])}


def payload_file(workdir, kind, size):
    """A kafka-producer-perf-test --payload-file of `kind` from the load generator (the same
    messages, random as printable ASCII), written once per run."""
    path = workdir / f"payload-{kind}-{size}.txt"
    if not path.exists():
        # Enough distinct messages that a batch rarely holds one twice (the tool picks at
        # random), which would flatter compression.
        code, _, err = run([str(constants.LOADGEN), "payload-file", "--payload", kind,
                            "--size", str(size), "--count", "20000", str(path)], 60)
        if code != 0:
            raise RuntimeError(f"oxbow-loadgen payload-file failed: {err.strip()[-300:]}")
    return path


def perf_produce_at_rate(broker, row, plan):
    """kafka-producer-perf-test --throughput RATE for as long as the load generator's run:
    ack latency (send to acknowledgement) of the Java producer at the row's fixed rate, batching
    as the load generator does, so the two differ in the client and not in its settings (with
    the default batch.size=16384 the Java producer did not hold 100,000 msg/s on 2 cores: it
    reached 45-50k/s on a full core, and its latency was its own queue)."""
    topic = row.topic + "-perf"
    if not create_topic(broker, topic, row):
        return None
    if row.payload == "letters":  # that tool's own payload: one message of random A-Z
        payload = ["--record-size", str(row.size)]
    else:
        payload = ["--payload-file", str(payload_file(broker.workdir, row.payload, row.size))]
    cmd = [str(KAFKA_BIN / "kafka-producer-perf-test"), "--topic", topic,
           "--num-records", str(row.rate * plan.fixed_rate_seconds), *payload,
           "--throughput", str(row.rate), "--producer-props",
           f"bootstrap.servers={broker.bootstrap}", f"acks={row.acks}",
           f"compression.type={row.compression}", "linger.ms=5", "batch.size=1000000"]
    code, out, err, client_cpu, broker_cpu = run_measured(cmd, plan.timeout, broker)
    summary = parse_perf_summary(out)
    if code != 0 or not summary:
        log(f"  kafka-producer-perf-test failed ({code}): {(out + err).strip()[-500:]}")
        return None
    return {**summary, "client_cpu_s": client_cpu, "broker_cpu_s": broker_cpu}


def parse_perf_summary(out):
    """kafka-producer-perf-test's last line: "N records sent, X records/sec (Y MB/sec),
    A ms avg latency, M ms max latency, P ms 50th, Q ms 95th, R ms 99th, S ms 99.9th."
    (the percentiles are whole milliseconds, truncated)."""
    last = [l for l in out.splitlines() if "records sent" in l and "50th" in l]
    match = last and re.search(
        r"([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max "
        r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th", last[-1])
    if not match:
        return None
    return {"msgs_per_s": float(match[1]), "mb_per_s": float(match[2]), "avg": float(match[3]),
            "max": float(match[4]), "p50": float(match[5]), "p99": float(match[7]),
            "p999": float(match[8])}


def e2e_latency_tool(broker, row, plan):
    """Kafka's kafka-e2e-latency (org.apache.kafka.tools.EndToEndLatency): the Java producer
    sends one message (linger.ms=0) and waits for its acknowledgement, then the Java consumer
    (fetch.max.wait.ms=0, assigned at the end) polls until it has it; the time of the pair is
    one sample. One message in flight, so it measures the idle round trip, a low-load check
    of the other instruments; its payload is one byte value repeated, whatever the row's."""
    props = broker.workdir / f"e2e-latency-{row.compression}.properties"
    props.write_text(f"compression.type={row.compression}\n")
    cmd = [str(KAFKA_BIN / "kafka-e2e-latency"), broker.bootstrap, row.topic,
           str(plan.e2e_tool_messages), row.acks, str(row.size), str(props)]
    code, out, err, client_cpu, broker_cpu = run_measured(cmd, plan.timeout, broker)
    summary = parse_e2e_latency(out)
    if code != 0 or not summary:
        log(f"  kafka-e2e-latency failed ({code}): {(out + err).strip()[-500:]}")
        return None
    # One at a time: the rate it ran at is one message per round trip.
    summary["msgs_per_s"] = 1000 / summary["avg"] if summary["avg"] else None
    return {**summary, "client_cpu_s": client_cpu, "broker_cpu_s": broker_cpu}


def parse_e2e_latency(out):
    """kafka-e2e-latency's summary: "Avg latency: A ms" and "Percentiles: 50th = P, 99th = Q,
    99.9th = R" (whole milliseconds, truncated; the tool prints no maximum)."""
    avg = re.search(r"Avg latency: ([\d.]+) ms", out)
    percentiles = re.search(r"Percentiles: 50th = (\d+), 99th = (\d+), 99.9th = (\d+)", out)
    if not avg or not percentiles:
        return None
    return {"avg": float(avg[1]), "p50": float(percentiles[1]), "p99": float(percentiles[2]),
            "p999": float(percentiles[3])}


def drop_topics(broker, pattern, plan):
    """Deletes the topics matching `pattern` once measured: kept to the end, the full matrix
    holds ~30 GB on Oxbow and ~16 GB on Kafka and can fill the data-dir filesystem."""
    code, _, err = run([str(KAFKA_BIN / "kafka-topics"), "--bootstrap-server", broker.bootstrap,
                        "--delete", "--topic", pattern], plan.timeout)
    if code != 0:
        log(f"  {broker.name}: deleting {pattern} failed ({code}): {err.strip()[-300:]}")
