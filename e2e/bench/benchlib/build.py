"""The release builds of oxbow and oxbow-loadgen, brought up to date with the tree."""

import os
import subprocess

from .constants import ROOT, TARGET
from .processes import log


def ensure_built(brokers):
    """Builds the release binaries from the tree, a no-op when they are up to date: a cached
    target directory must not hand out a broker older than the tree. Every Oxbow of the run
    is started from exactly this binary (OXBOW_BINARY for e2e/peers/oxbow/start-single, so
    its start is not a build)."""
    # One package per build: built together, cargo unifies their dependencies' features and
    # the broker would differ from (and rebuild over) the one the other scripts build alone.
    builds = [["-p", "oxbow-e2e", "--bin", "oxbow-loadgen"]]
    if "oxbow" in brokers:
        builds.append(["-p", "oxbow-broker", "--bin", "oxbow"])
    log("building the release binaries (a no-op when up to date)")
    for targets in builds:
        subprocess.run(["cargo", "build", "--release", "--locked", *targets], cwd=ROOT,
                       check=True, env={**os.environ, "CARGO_TARGET_DIR": str(TARGET)})
