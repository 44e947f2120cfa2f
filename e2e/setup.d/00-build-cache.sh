#!/usr/bin/env bash
# Keeps the shared build cache ($CARGO_TARGET_DIR, outside the clone) from filling the disk.
# Every clone path and every dependency change gives the workspace's own crates new unit
# hashes, so their old test binaries, rlibs and incremental sessions pile up (60+ GB after a
# day of clones) until a test that needs real disk (the quorum's gigabyte deletion) fails
# with ENOSPC. This removes the workspace's units that no build has written for
# OXBOW_CACHE_KEEP_HOURS (default 6); third-party crates are kept (they are built once).
set -euo pipefail
target="${CARGO_TARGET_DIR:-${OXBOW_CACHE:-$HOME/.cache/oxbow}/target}"
[ -d "$target" ] || exit 0
before="$(df -Pk "$target" | awk 'NR==2 {print $4}')"
names="$(cargo metadata --no-deps --format-version 1 --offline 2>/dev/null |
  python3 -c 'import json, sys
meta = json.load(sys.stdin)
names = set()
for package in meta["packages"]:
    names.add(package["name"])
    for target in package["targets"]:
        names.add(target["name"])
print("\n".join(sorted(names)))')" || names=""
PRUNE_TARGET="$target" PRUNE_NAMES="$names" python3 - <<'PYEOF'
import os, re, shutil, time

target = os.environ["PRUNE_TARGET"]
keep = float(os.environ.get("OXBOW_CACHE_KEEP_HOURS", "6")) * 3600
cutoff = time.time() - keep
# Cargo names a unit `<name>-<16 hex>` in .fingerprint/ and build/ (package name) and
# deps/ (crate name, `lib` prefix for libraries); incremental/ uses its own hash.
names = {n.replace("-", "_") for n in os.environ["PRUNE_NAMES"].split()}
unit = re.compile(r"^(?:lib)?(.+?)-([0-9a-z]{13,16})(?:\..*)?$")

def ours(entry):
    match = unit.match(entry)
    return match and match.group(1).replace("-", "_") in names

def newest(path):
    if not os.path.isdir(path):
        return os.lstat(path).st_mtime
    latest = os.lstat(path).st_mtime
    for root, _, files in os.walk(path):
        for f in files:
            try:
                latest = max(latest, os.lstat(os.path.join(root, f)).st_mtime)
            except FileNotFoundError:
                pass
    return latest

removed = 0
for profile in sorted(os.listdir(target)):
    for kind in ("deps", ".fingerprint", "build", "incremental"):
        folder = os.path.join(target, profile, kind)
        if not os.path.isdir(folder):
            continue
        for entry in os.listdir(folder):
            path = os.path.join(folder, entry)
            if not ours(entry) or newest(path) >= cutoff:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
            removed += 1
print(f"build cache: removed {removed} stale workspace units from {target}")
PYEOF
after="$(df -Pk "$target" | awk 'NR==2 {print $4}')"
echo "build cache: $((before / 1048576)) GiB free before, $((after / 1048576)) GiB after"
