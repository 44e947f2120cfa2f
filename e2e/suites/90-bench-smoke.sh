#!/usr/bin/env bash
# The benchmark suite's smoke run: one row of the matrix against fresh Oxbow and fresh Kafka
# (throughput and latency are printed, not asserted: targets are judged from the full run).
set -euo pipefail
exec "$(dirname "$0")/../bench/run" --smoke
