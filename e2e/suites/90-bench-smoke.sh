#!/usr/bin/env bash
# The benchmark suite's smoke run: one row of the matrix against fresh Oxbow and fresh Kafka
# (throughput and latency are printed, not asserted: targets are judged from the full run).
# Expected time: 80 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
exec "$(dirname "$0")/../bench/run" --smoke
