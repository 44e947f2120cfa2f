"""The matrices: Row, FixedRateRow and Plan, and the plans (full, smoke, cluster, cluster
smoke) chosen by the command-line options."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Row:
    size: int
    acks: str
    compression: str
    partitions: int
    replicas: int = 1  # replication factor; min.insync.replicas=2 when more than one

    @property
    def name(self):
        size = "1KiB" if self.size == 1024 else f"{self.size}B"
        name = f"{size} acks={self.acks} {self.compression} p={self.partitions}"
        return name + (f" RF={self.replicas}" if self.replicas > 1 else "")

    @property
    def topic(self):
        topic = f"bench-{self.size}-{self.acks}-{self.compression}-{self.partitions}"
        return topic + (f"-rf{self.replicas}" if self.replicas > 1 else "")


@dataclasses.dataclass(frozen=True)
class FixedRateRow:
    """A latency row at a fixed rate, the same for both brokers (not a share of Oxbow's
    maximum), measured by three instruments: oxbow-loadgen latency, kafka-producer-perf-test
    --throughput and, on the first row of each compression and partition count, the Java
    client's one-at-a-time kafka-e2e-latency."""

    rate: int
    compression: str
    partitions: int
    payload: str  # oxbow-loadgen --payload: letters, random or text
    size: int = 1024
    acks: str = "all"
    replicas: int = 1

    @property
    def name(self):
        size = "1KiB" if self.size == 1024 else f"{self.size}B"
        return (f"{size} acks={self.acks} {self.compression} p={self.partitions} "
                f"{self.payload} @{self.rate:,}/s")

    @property
    def topic(self):
        return f"fixed-{self.size}-{self.compression}-{self.partitions}-{self.payload}-{self.rate}"


@dataclasses.dataclass(frozen=True)
class Plan:
    rows: list
    messages: dict  # size -> messages per produce run
    perf_messages: dict  # size -> messages per Kafka perf-tool run
    latency_seconds: int
    warm_up_messages: int
    ceiling_seconds: int
    dd_mib: int
    timeout: int
    nodes: int = 1  # brokers per cluster
    fixed_rate_rows: tuple = ()
    fixed_rate_seconds: int = 10  # per fixed-rate run of the load generator and of perf-test
    # Load-generator runs per fixed-rate row, reported as medians: on 2 shared cores one run's
    # p99 at 100,000 msg/s varied 10x from run to run against either broker.
    fixed_rate_repeats: int = 1
    # Load-generator produce and consume runs per matrix row, reported as medians: a consume
    # run of 500 MB takes half a second here, and single runs of one row differed by 2x.
    matrix_repeats: int = 1
    # The same for kafka-producer-perf-test and kafka-consumer-perf-test (a JVM start each).
    perf_repeats: int = 1
    e2e_tool_messages: int = 0  # messages per kafka-e2e-latency run (one at a time)


def full_plan():
    rows = [
        Row(size, acks, compression, partitions)
        for size in (1024, 100)
        for acks in ("1", "all")
        for compression in ("none", "lz4")
        for partitions in (1, 8)
    ]
    fixed = tuple(
        FixedRateRow(rate, compression, partitions, payload)
        for rate in (20_000, 100_000)
        for compression in ("none", "lz4")
        for partitions in (1, 8)
        for payload in ("random", "text")
    )
    return Plan(rows, {1024: 500_000, 100: 2_000_000}, {1024: 500_000, 100: 2_000_000},
                latency_seconds=10, warm_up_messages=300_000, ceiling_seconds=5, dd_mib=2048,
                timeout=300, fixed_rate_rows=fixed, fixed_rate_repeats=3, matrix_repeats=3,
                perf_repeats=3, e2e_tool_messages=2000)


def smoke_plan():
    # One fixed-rate row, so every instrument and the compressible payload run once in CI.
    return Plan([Row(1024, "1", "none", 1)], {1024: 50_000}, {1024: 20_000},
                latency_seconds=2, warm_up_messages=20_000, ceiling_seconds=1, dd_mib=128,
                timeout=60, fixed_rate_rows=(FixedRateRow(20_000, "lz4", 1, "text"),),
                fixed_rate_seconds=1, fixed_rate_repeats=2, matrix_repeats=2,
                perf_repeats=2, e2e_tool_messages=100)


def cluster_plan():
    rows = [
        Row(1024, "all", compression, partitions, replicas=3)
        for compression in ("none", "lz4")
        for partitions in (1, 8)
    ]
    return Plan(rows, {1024: 500_000}, {1024: 500_000}, latency_seconds=10,
                warm_up_messages=300_000, ceiling_seconds=5, dd_mib=2048, timeout=300, nodes=3)


def cluster_smoke_plan():
    return Plan([Row(1024, "all", "none", 1, replicas=3)], {1024: 50_000}, {1024: 20_000},
                latency_seconds=2, warm_up_messages=20_000, ceiling_seconds=1, dd_mib=128,
                timeout=60, nodes=3)


def plans(args):
    """The matrices to run, in order."""
    if args.cluster:
        return [cluster_smoke_plan() if args.smoke else cluster_plan()]
    if args.smoke:
        return [smoke_plan()]
    if args.matrix_only:
        return [dataclasses.replace(full_plan(), fixed_rate_rows=())]
    return [full_plan(), cluster_plan()]
