#!/usr/bin/env bash
# Keeps the shared build cache ($CARGO_TARGET_DIR, outside the clone) from filling the disk.
# Every clone path and every dependency change gives the workspace's own crates new unit
# hashes, so their old test binaries, rlibs and incremental sessions pile up (60+ GB after a
# day of clones) until a test that needs real disk (the quorum's gigabyte deletion) fails
# with ENOSPC. This removes the workspace's units that no build has written for
# OXBOW_CACHE_KEEP_HOURS (default 6); third-party crates are kept (they are built once).
set -euo pipefail
target="${CARGO_TARGET_DIR:-${OXBOW_CACHE:-$HOME/.cache/oxbow}/target}"
# The fuzz suite's own target directory (nightly, instrumented) grows the same way.
fuzz_target="${OXBOW_CACHE:-$HOME/.cache/oxbow}/target-fuzz"
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
PRUNE_TARGETS="$target:$fuzz_target" PRUNE_NAMES="$names" python3 - <<'PYEOF'
import os, re, shutil, time

targets = [t for t in os.environ["PRUNE_TARGETS"].split(":") if os.path.isdir(t)]
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

def unit_folders(target):
    """deps/, .fingerprint/, build/, incremental/ of every profile, with or without a target
    triple level (target/debug/deps, target-fuzz/x86_64-unknown-linux-gnu/release/deps)."""
    for root, dirs, _ in os.walk(target):
        depth = root[len(target):].count(os.sep)
        for kind in ("deps", ".fingerprint", "build", "incremental"):
            if kind in dirs:
                yield os.path.join(root, kind)
        if depth >= 2:
            dirs[:] = []
        else:
            dirs[:] = [d for d in dirs if d not in ("deps", ".fingerprint", "build", "incremental")]

removed = 0
for target in targets:
    for folder in unit_folders(target):
        for entry in os.listdir(folder):
            path = os.path.join(folder, entry)
            if not ours(entry) or newest(path) >= cutoff:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
            removed += 1
print(f"build cache: removed {removed} stale workspace units from {', '.join(targets)}")
PYEOF
after="$(df -Pk "$target" | awk 'NR==2 {print $4}')"
echo "build cache: $((before / 1048576)) GiB free before, $((after / 1048576)) GiB after"
