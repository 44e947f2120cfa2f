#!/usr/bin/env bash
# Installs what builds and runs Oxbow's container images (e2e/images/build, suite 59-images):
# rootful podman and buildah with runc, from Debian's packages (idempotent).
#
# Two machine settings, in a drop-in so other containers.conf settings stay untouched:
#   runtime = "runc"       crun 1.8 (podman's first choice when installed) refuses this
#                          machine's hybrid cgroup layout (v1 controllers with a v2 "unified"
#                          mount, as found when issue 18 was filed); runc runs on it. Only
#                          runc is installed here; the setting keeps it if crun comes along.
#   default_ulimits = []   rootful podman otherwise raises each container's open-files limit
#                          to 1048576; this machine's hard limit is 20000 and may not be
#                          raised, so runc fails: "error setting rlimit type 7: operation not
#                          permitted". With none set, containers inherit the host's limits.
set -euo pipefail
. "$(dirname "$0")/../lib/fetch.sh"

need=()
for cmd in podman buildah runc; do command -v "$cmd" >/dev/null || need+=("$cmd"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "Installing ${need[*]}"
  fetch "the Debian package index" "Debian's package mirrors" apt-get update -qq
  fetch "podman, buildah and runc" "Debian's package mirrors" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc
fi

dropin=/etc/containers/containers.conf.d/50-oxbow.conf
want='[containers]
default_ulimits = []

[engine]
runtime = "runc"'
if [ "$(cat "$dropin" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$(dirname "$dropin")"
  printf '%s\n' "$want" >"$dropin"
  echo "Wrote $dropin"
fi

# Prove the settings took: podman reports the runtime it will use.
runtime="$(podman info --format '{{.Host.OCIRuntime.Name}}')"
[ "$runtime" = runc ] || { echo "podman uses runtime '$runtime', expected runc (see $dropin)" >&2; exit 1; }
echo "podman $(podman version --format '{{.Client.Version}}'), buildah $(buildah --version | cut -d' ' -f3), runtime $runtime"
