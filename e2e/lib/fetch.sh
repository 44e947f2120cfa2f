# For the setup steps: a download that fails says, in one line, what could not be fetched
# and from where, then shows the command's last lines. Source it:
#
#   . "$(dirname "$0")/../lib/fetch.sh"
#   fetch "kcat (Debian package)" "Debian's package mirrors" apt-get install -y -qq kcat
#
# The command's output is shown only on failure (a setup step that works stays quiet).
# shellcheck shell=bash

fetch() {
  local what="$1" source="$2" log status=0
  shift 2
  log="$(mktemp "${TMPDIR:-/tmp}/oxbow-fetch.XXXXXX")"
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "setup: could not fetch $what from $source (exit $status: $*); its last lines:" >&2
    tail -n 15 "$log" | sed 's/^/    /' >&2
  fi
  rm -f "$log"
  return "$status"
}
