# Sourced by the e2e/suites/4x-groups*.sh suites: builds the broker, points the Python
# and Node helpers at it and at the client libraries installed by setup.d/12-group-clients.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
clients="$OXBOW_CACHE/group-clients"
[ -x "$clients/venv/bin/python" ] || bash "$root/e2e/setup.d/12-group-clients.sh"
if [ -z "${OXBOW_BINARY:-}" ]; then
  "$root/e2e/lib/build" >/dev/null
  export OXBOW_BINARY="$CARGO_TARGET_DIR/debug/oxbow"
fi
export NODE_PATH="$clients/node/node_modules"
PYTHON="$clients/venv/bin/python"
GROUPS_DIR="$root/e2e/groups"
