"""Shared constants: where the binaries and the Kafka peer are, MB, the clusters' fixed ports.
`run --binaries` rebinds LOADGEN and OXBOW, so they are read as constants.LOADGEN and .OXBOW."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CACHE = Path(os.environ.get("OXBOW_CACHE", Path.home() / ".cache" / "oxbow"))
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", CACHE / "target"))
LOADGEN = TARGET / "release" / "oxbow-loadgen"
OXBOW = TARGET / "release" / "oxbow"
KAFKA_PEER = ROOT / "e2e" / "peers" / "kafka"
KAFKA_BIN = KAFKA_PEER / "bin"
MB = 1024 * 1024
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The 3-node clusters: fixed ports below the ephemeral range (32768-) and apart from the other
# suites' (e2e/cluster: 21092-22644 and 29192-29394; metadata_scale.py: 23092-23644).
NODES = (1, 2, 3)
OXBOW_CLUSTER_PORTS = (24092, 24192, 24644)  # node 1's client, controller and metrics ports
KAFKA_CLUSTER_PORTS = (25092, 25192)  # node 1's client and controller ports
