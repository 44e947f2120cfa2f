#!/usr/bin/env bash
# The differential check: one scenario against fresh Apache Kafka and fresh Oxbow; every
# observable difference is fixed or listed in e2e/peers/KNOWN-DIFFERENCES.md.
# Expected time: 90 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
exec "$(dirname "$0")/../peers/differential/run"
