#!/usr/bin/env bash
# The differential check: one scenario against fresh Apache Kafka and fresh Oxbow; every
# observable difference is fixed or listed in e2e/peers/KNOWN-DIFFERENCES.md.
set -euo pipefail
exec "$(dirname "$0")/../peers/differential/run"
