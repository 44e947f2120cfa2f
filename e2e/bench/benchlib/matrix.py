"""Running a plan against the brokers: the matrix rows and the fixed-rate rows, each row's runs
interleaved between the brokers, and the medians and spreads recorded from them."""

import dataclasses

from . import constants
from .clients import (create_topic, drop_topics, e2e_latency_tool, loadgen, perf_consume,
                      perf_produce, perf_produce_at_rate, producer_settings)
from .processes import log, run


def record_cpu(results, row, prefix, report):
    """The client's and the broker's CPU seconds over one run, side by side."""
    results[(row.name, f"{prefix} client CPU s")] = report["client_cpu_s"]
    results[(row.name, f"{prefix} broker CPU s")] = report["broker_cpu_s"]


def record_latencies(results, row, prefix, kind, summary):
    """p50, p99, p99.9 and max of one latency summary (ms)."""
    for label, field in (("p50", "p50"), ("p99", "p99"), ("p99.9", "p999"), ("max", "max")):
        if summary and summary.get(field) is not None:
            results[(row.name, f"{prefix} {kind} {label} ms")] = summary[field]


def run_matrix(brokers, plan, max_rates, failed):
    """Runs every row against every broker in `brokers` (all running at once), the runs of one
    row interleaved: each load-generator repeat runs against each broker in turn, then the next
    repeat. Returns {broker name: {(row name, measurement): value}} and appends what did not
    run to `failed` as (broker name, tool, row name, what).

    Interleaved because this machine's memory is not the same from one minute to the next: its
    host takes freed memory back within seconds and the next first touch of a page costs a
    fault on the host, so a produce run writing into new page cache went at 200-800 MB/s
    depending on what was freed just before (docs/benchmarks/2026-12-02-interleaved.txt).
    Run one broker's whole matrix after the other's, and one broker got the other's
    conditions; alternated run by run, both see the same."""
    results = {broker.name: {} for broker in brokers}
    # Warm-up, not measured: the same for both brokers (a JVM needs it before it is at speed).
    for broker in brokers:
        log(f"{broker.name}: warm-up")
        if plan.rows and plan.rows[0].replicas > 1:
            create_topic(broker, "bench-warm-up", dataclasses.replace(plan.rows[0], partitions=1))
        for mode, extra in (("produce", ["--create-topic", "--messages",
                                         str(plan.warm_up_messages)]), ("consume", [])):
            cmd = [str(constants.LOADGEN), "--bootstrap", broker.bootstrap, "--topic",
                   "bench-warm-up", mode, *extra]
            run(cmd, plan.timeout)
        drop_topics(broker, "bench-warm-up", plan)
    for row in plan.rows:
        log(f"{row.name}: {', '.join(broker.name for broker in brokers)} in turn")
        ready = []
        for broker in brokers:
            if row.replicas > 1 and not create_topic(broker, row.topic, row):
                failed.append((broker.name, "kafka-topics", row.name, "create"))
            else:
                ready.append(broker)
        # Each produce run appends to the row's topic; each consume run reads all of it.
        produced = interleave(ready, plan.matrix_repeats, lambda broker: loadgen(
            broker, row, "produce", plan, ["--create-topic", "--messages",
                                           str(plan.messages[row.size]), *producer_settings(row)]))
        for broker, runs in produced.items():
            out = results[broker.name]
            if runs:
                produce = median_report(runs)
                out[(row.name, "loadgen produce MB/s")] = produce["mb_per_s"]
                record_spread(out, row, "loadgen produce MB/s", "",
                              [run["mb_per_s"] for run in runs])
                out[(row.name, "loadgen produce p99 ack ms")] = produce["ack_latency_ms"]["p99"]
                record_cpu(out, row, "loadgen produce", produce)
                max_rates.setdefault(row.name, produce["msgs_per_s"])
            else:
                failed.append((broker.name, "loadgen", row.name, "produce"))
        if row.acks == "1":
            consumed = interleave(ready, plan.matrix_repeats,
                                  lambda broker: loadgen(broker, row, "consume", plan))
            for broker, runs in consumed.items():
                out = results[broker.name]
                if runs:
                    consume = median_report(runs)
                    out[(row.name, "loadgen consume MB/s")] = consume["mb_per_s"]
                    record_spread(out, row, "loadgen consume MB/s", "",
                                  [run["mb_per_s"] for run in runs])
                    record_cpu(out, row, "loadgen consume", consume)
                else:
                    failed.append((broker.name, "loadgen", row.name, "consume"))
        # Kafka's perf tools the same way: each produce run appends to the row's -perf topic,
        # each consume run reads the first run's worth of it.
        produced = interleave(ready, plan.perf_repeats,
                              lambda broker: perf_produce(broker, row, plan))
        for broker, runs in produced.items():
            out = results[broker.name]
            if runs:
                out[(row.name, "perf-test produce MB/s")] = median([r["mb_per_s"] for r in runs])
                record_spread(out, row, "perf-test produce MB/s", "",
                              [r["mb_per_s"] for r in runs])
                out[(row.name, "perf-test produce p99 ms")] = median([r["p99_ms"] for r in runs])
            else:
                failed.append((broker.name, "perf-test", row.name, "produce"))
        if row.acks == "1":
            consumers = [broker for broker in ready if produced.get(broker)]
            consumed = interleave(consumers, plan.perf_repeats,
                                  lambda broker: perf_consume(broker, row, plan))
            for broker in ready:
                runs = consumed.get(broker)
                out = results[broker.name]
                if runs:
                    out[(row.name, "perf-test consume MB/s")] = \
                        median([r["mb_per_s"] for r in runs])
                    record_spread(out, row, "perf-test consume MB/s", "",
                                  [r["mb_per_s"] for r in runs])
                else:
                    failed.append((broker.name, "perf-test", row.name, "consume"))
        if row.name in max_rates:
            # 50% of Oxbow's maximum produce rate of this row (Kafka's when Oxbow did not run).
            rate = max(1, int(max_rates[row.name] * 0.5))
            for broker in ready:
                out = results[broker.name]
                latency = loadgen(broker, row, "latency", plan, [
                    "--rate", str(rate), "--duration-s", str(plan.latency_seconds),
                    *producer_settings(row)])
                if latency and latency.get("e2e_latency_ms"):
                    prefix = f"latency @{rate}/s"
                    out[(row.name, f"{prefix} achieved msgs/s")] = latency["msgs_per_s"]
                    record_latencies(out, row, prefix, "e2e", latency["e2e_latency_ms"])
                    record_latencies(out, row, prefix, "ack", latency.get("ack_latency_ms"))
                    record_cpu(out, row, prefix, latency)
                else:
                    failed.append((broker.name, "loadgen", row.name, "latency"))
        for broker in ready:
            drop_topics(broker, f"{row.topic}(-perf)?", plan)
    run_fixed_rate(brokers, plan, results, failed)
    return results


def run_fixed_rate(brokers, plan, results, failed):
    """The fixed-rate rows: every instrument on the same topic settings, one after the other;
    the load generator's repeats interleaved between the brokers as in run_matrix."""
    e2e_tool_done = set()
    for row in plan.fixed_rate_rows:
        log(f"{row.name}: {', '.join(broker.name for broker in brokers)} in turn")
        ready = []
        for broker in brokers:
            if create_topic(broker, row.topic, row):
                ready.append(broker)
            else:
                failed.append((broker.name, "kafka-topics", row.name, "create"))
        measured = interleave(ready, plan.fixed_rate_repeats, lambda broker: loadgen(
            broker, row, "latency", plan, ["--rate", str(row.rate), "--duration-s",
                                           str(plan.fixed_rate_seconds), *producer_settings(row)]),
            complete=lambda run: run and run.get("e2e_latency_ms"))
        for broker, runs in measured.items():
            out = results[broker.name]
            if runs:
                latency = median_report(runs)
                out[(row.name, "loadgen achieved msgs/s")] = latency["msgs_per_s"]
                record_latencies(out, row, "loadgen", "e2e", latency["e2e_latency_ms"])
                record_latencies(out, row, "loadgen", "ack", latency.get("ack_latency_ms"))
                record_cpu(out, row, "loadgen", latency)
                record_spread(out, row, "loadgen e2e p99", " ms",
                              [run["e2e_latency_ms"]["p99"] for run in runs])
            else:
                failed.append((broker.name, "loadgen", row.name, ""))
        # One message at a time, so the rate and the payload do not matter to it: once per
        # compression and partition count is enough.
        e2e_tool = plan.e2e_tool_messages and (row.compression, row.partitions) not in e2e_tool_done
        e2e_tool_done.add((row.compression, row.partitions))
        for broker in ready:
            out = results[broker.name]
            perf = perf_produce_at_rate(broker, row, plan)
            if perf:
                out[(row.name, "perf-test achieved msgs/s")] = perf["msgs_per_s"]
                record_latencies(out, row, "perf-test", "ack", perf)
                record_cpu(out, row, "perf-test", perf)
            else:
                failed.append((broker.name, "perf-test", row.name, ""))
            if e2e_tool:
                e2e = e2e_latency_tool(broker, row, plan)
                if e2e:
                    out[(row.name, "e2e-latency (sync) msgs/s")] = e2e["msgs_per_s"]
                    out[(row.name, "e2e-latency (sync) e2e avg ms")] = e2e["avg"]
                    record_latencies(out, row, "e2e-latency (sync)", "e2e", e2e)
                    record_cpu(out, row, "e2e-latency (sync)", e2e)
                else:
                    failed.append((broker.name, "e2e-latency", row.name, ""))
            # The brokers are stopped after the last row: no kafka-topics run spent on it.
            if row != plan.fixed_rate_rows[-1]:
                drop_topics(broker, f"{row.topic}(-perf)?", plan)


def interleave(brokers, times, run_once, complete=bool):
    """`times` reports of `run_once(broker)` per broker, the brokers taking turns run by run:
    {broker: [reports]}, or {broker: None} for a broker as soon as one of its runs is missing
    or incomplete (its cell then says FAILED rather than a median of fewer runs; the other
    brokers go on)."""
    runs = {broker: [] for broker in brokers}
    for _ in range(times):
        for broker in brokers:
            if runs[broker] is None:
                continue
            report = run_once(broker)
            runs[broker] = runs[broker] + [report] if complete(report) else None
    return runs


def record_spread(results, row, measurement, unit, values):
    """The lowest and highest run's value next to a median of several runs."""
    if len(values) > 1:
        results[(row.name, f"{measurement} lowest run{unit}")] = min(values)
        results[(row.name, f"{measurement} highest run{unit}")] = max(values)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def median_report(reports):
    """Per number of the load generator's reports, the median over the runs (each percentile
    on its own: the p99 shown is the median run's p99, not a p99 of the runs pooled)."""
    merged = {}
    for key, value in reports[0].items():
        if isinstance(value, dict):
            nested = [r.get(key) or {} for r in reports]
            merged[key] = {
                field: median([n[field] for n in nested])
                for field in value
                if all(isinstance(n.get(field), (int, float)) for n in nested)
            }
        elif isinstance(value, (int, float)) and not isinstance(value, bool) \
                and all(isinstance(r.get(key), (int, float)) for r in reports):
            merged[key] = median([r[key] for r in reports])
    return merged
