#!/usr/bin/env bash
# Python clients of the admin suite (e2e/suites/35-admin.sh): confluent-kafka (librdkafka's
# AdminClient) and kafka-python (DescribeLogDirs). Idempotent: installs only what is missing.
set -euo pipefail
. "$(dirname "$0")/../lib/fetch.sh"
missing=()
python3 -c 'import confluent_kafka' 2>/dev/null || missing+=("confluent-kafka>=2.6")
python3 -c 'from kafka import KafkaAdminClient; KafkaAdminClient.describe_log_dirs' 2>/dev/null \
  || missing+=("kafka-python>=2.1")
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing ${missing[*]}"
  fetch "${missing[*]}" "PyPI" python3 -m pip install --quiet "${missing[@]}"
fi
