# How an e2e suite reports a skip to e2e/run. Source it from a suite:
#
#   . "$(dirname "$0")/../lib/suite.sh"
#   suite_skip "REASON"            # nothing more to check: record REASON, exit 77 now
#   suite_skip_check "REASON"      # one check could not run: record REASON, carry on
#   suite_done                     # at the end: exit 77 if any check was skipped, else 0
#
# The protocol (e2e/run reads it; Python suites use e2e/lib/oxbow_e2e.py, which speaks the
# same one):
#   exit 0   every check of the suite ran and passed;
#   exit 77  the suite passed what it ran but skipped something; each reason is one line
#            "skip: REASON" on stdout and, when e2e/run runs the suite, one line in the file
#            named by $OXBOW_SKIPS;
#   other    the suite failed.
# A skip always names a capability this machine or this broker lacks, so under CI=true
# e2e/run fails the run on it: a green CI run means every check ran.
# shellcheck shell=bash

SUITE_SKIPPED=0

suite_skip_check() {
  SUITE_SKIPPED=$((SUITE_SKIPPED + 1))
  echo "skip: $*"
  if [ -n "${OXBOW_SKIPS:-}" ]; then echo "$*" >>"$OXBOW_SKIPS"; fi
}

suite_skip() {
  suite_skip_check "$@"
  exit 77
}

suite_done() {
  if [ "$SUITE_SKIPPED" -gt 0 ]; then exit 77; fi
  exit 0
}
