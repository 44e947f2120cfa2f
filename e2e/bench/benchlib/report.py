"""The printed report: the machine's ceilings, each matrix's table (Oxbow, Kafka, ratio), the
fixed-rate rows' instruments side by side, the brokers' resources."""

import sys

from .constants import MB


def fmt(value):
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.2f}" if value < 100 else f"{value:.1f}"


def print_ceilings(ceilings):
    print("\nMachine ceilings (same run)")
    for name, value in ceilings.items():
        print(f"  {name:<42} {fmt(value):>10}")


# The fixed-rate rows' instruments: (label, measurement prefix, latency kind, rate measurement,
# whether the line shows the run's CPU: the load generator's ack and e2e come from one run).
INSTRUMENTS = (
    ("loadgen ack", "loadgen", "ack", "loadgen achieved msgs/s", True),
    ("perf-test ack", "perf-test", "ack", "perf-test achieved msgs/s", True),
    ("loadgen e2e", "loadgen", "e2e", "loadgen achieved msgs/s", False),
    ("e2e-latency e2e, 1 in flight", "e2e-latency (sync)", "e2e", "e2e-latency (sync) msgs/s",
     True),
)


def print_instruments(plan, results, failed_cells, width):
    """The fixed-rate rows again, one line per broker and instrument, so the instruments'
    disagreements show."""
    out = sys.stdout
    runs = (f"; loadgen: medians of {plan.fixed_rate_repeats} runs"
            if plan.fixed_rate_repeats > 1 else "")
    print("\nFixed-rate rows, the instruments side by side (ms; ack: send to acknowledgement, "
          "e2e: send to receipt by a consumer;\nperf-test and e2e-latency percentiles are whole "
          f"milliseconds; CPU s: user + system over the instrument's run{runs})", file=out)
    header = (f"{'row':<{width}} {'broker':<6} {'instrument':<29} {'msgs/s':>8} {'p50':>8} "
              f"{'p99':>8} {'p99.9':>8} {'max':>8} {'client CPU s':>12} {'broker CPU s':>12}")
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in plan.fixed_rate_rows:
        first = True
        for broker_name, values in results.items():
            for label, prefix, kind, rate_key, with_cpu in INSTRUMENTS:
                cells = [values.get((row.name, f"{prefix} {kind} {q} ms"))
                         for q in ("p50", "p99", "p99.9", "max")]
                # A measurement's first word names its tool.
                failed = any(f[0] == broker_name and f[1][0] == row.name
                             and f[1][1].split()[0] == prefix.split()[0] for f in failed_cells)
                if failed:
                    cells = ["FAILED"] * 4
                elif all(c is None for c in cells):
                    continue
                cpu = [values.get((row.name, f"{prefix} {who} CPU s")) if with_cpu else None
                       for who in ("client", "broker")]
                rate = values.get((row.name, rate_key))
                shown = [c if isinstance(c, str) else fmt(c) for c in cells]
                print(f"{row.name if first else '':<{width}} {broker_name:<6} {label:<29} "
                      f"{fmt(rate):>8} {shown[0]:>8} {shown[1]:>8} {shown[2]:>8} {shown[3]:>8} "
                      f"{fmt(cpu[0]):>12} {fmt(cpu[1]):>12}", file=out)
                first = False


def print_report(plan, ceilings, results, usage, failed_runs):
    out = sys.stdout
    if plan.nodes > 1:
        print(f"\n{plan.nodes}-node clusters (Oxbow: {plan.nodes} oxbow processes, Kafka: "
              f"start-cluster), topics RF={plan.rows[0].replicas}, min.insync.replicas=2, "
              f"clients bootstrapped from all {plan.nodes} nodes", file=out)
    keys = []
    for broker_results in results.values():
        for key in broker_results:
            if key not in keys:
                keys.append(key)
    # A failed run: its cells say FAILED (a row of its own when no broker measured it).
    failed_cells = {}
    for broker_name, tool, row_name, what in failed_runs:
        # An empty `what`: every measurement of that tool in the row (the fixed-rate rows).
        prefix = f"{tool} {what}" if what else f"{tool} "
        cells = [k for k in keys if k[0] == row_name and k[1].startswith(prefix)] or [(row_name, prefix)]
        for key in cells:
            key = (key[0], key[1].strip())
            if key not in keys:
                keys.append(key)
            failed_cells[(broker_name, key)] = True
    # Row by row in matrix order; within a row, measurements in the order first seen.
    all_rows = [*plan.rows, *plan.fixed_rate_rows]
    row_order = {row.name: i for i, row in enumerate(all_rows)}
    first_seen = {k: i for i, k in enumerate(keys)}
    keys.sort(key=lambda k: (row_order.get(k[0], len(row_order)), first_seen[k]))
    # Latency labels carry the rate; align Oxbow's and Kafka's rows by the same key.
    oxbow, kafka = results.get("Oxbow", {}), results.get("Kafka", {})
    width = max(26, *(len(row.name) for row in all_rows))
    header = f"{'row':<{width}} {'measurement':<34} {'Oxbow':>10} {'Kafka':>10} {'ratio':>7}"
    print("\n" + header, file=out)
    print("-" * len(header), file=out)
    for row_name, measurement in keys:
        a, b = oxbow.get((row_name, measurement)), kafka.get((row_name, measurement))
        ratio = f"{a / b:.2f}" if a is not None and b else "-"
        cell_a = "FAILED" if failed_cells.get(("Oxbow", (row_name, measurement))) else fmt(a)
        cell_b = "FAILED" if failed_cells.get(("Kafka", (row_name, measurement))) else fmt(b)
        print(f"{row_name:<{width}} {measurement:<34} {cell_a:>10} {cell_b:>10} {ratio:>7}",
              file=out)
    print("\nratio = Oxbow / Kafka (throughput: higher is better for Oxbow; latency: lower)",
          file=out)
    if plan.fixed_rate_rows:
        print_instruments(plan, results, failed_cells, width)
    summed = f", summed over each cluster's {plan.nodes} processes" if plan.nodes > 1 else ""
    print(f"\nBroker resources over the whole matrix{summed}", file=out)
    for name, (rss, cpu, idle) in usage.items():
        print(f"  {name:<6} peak RSS {rss / MB:8.1f} MiB   CPU {cpu:8.1f} s, of which {idle:.1f} s "
              "idle (while the other broker's runs went on)", file=out)
    if len(usage) == 2:
        (rss_o, cpu_o, idle_o), (rss_k, cpu_k, idle_k) = \
            usage.get("Oxbow", (0, 0, 0)), usage.get("Kafka", (0, 1, 0))
        if rss_k:
            print(f"  Oxbow/Kafka peak RSS {rss_o / rss_k:.2f}, CPU {cpu_o / max(cpu_k, 1e-9):.2f}, "
                  f"CPU less idle {(cpu_o - idle_o) / max(cpu_k - idle_k, 1e-9):.2f}", file=out)
    print("\nBest throughput as a fraction of the ceilings", file=out)
    disk = ceilings.get("sequential write, page cache (dd) MB/s")
    tcp = ceilings.get("loopback TCP (iperf3) MB/s")
    for name, values in results.items():
        produce = max((v for (r, m), v in values.items() if m.endswith("produce MB/s")), default=None)
        consume = max((v for (r, m), v in values.items() if m.endswith("consume MB/s")), default=None)
        parts = []
        if produce and disk:
            parts.append(f"produce {fmt(produce)} MB/s = {produce / disk:.0%} of dd page-cache write")
        if produce and tcp:
            parts.append(f"{produce / tcp:.0%} of loopback TCP")
        if consume and tcp:
            parts.append(f"consume {fmt(consume)} MB/s = {consume / tcp:.0%} of loopback TCP")
        if parts:
            print(f"  {name:<6} " + "; ".join(parts), file=out)
