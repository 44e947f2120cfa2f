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
    # The workspace's one release build (e2e/lib/build --release): the loadgen and the
    # broker from one cargo invocation, the same units every other script uses.
    del brokers  # every binary comes from the one build
    log("building the release binaries (a no-op when up to date)")
    subprocess.run([str(ROOT / "e2e" / "lib" / "build"), "--release"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "CARGO_TARGET_DIR": str(TARGET)})
