"""Helpers for tests of the forked paths (graphlint.forked)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading


def rerun_unthreaded(request) -> bool:
    """The loader only forks from a process without Python threads (forking a threaded process
    can deadlock the child). When an earlier test left a thread running, run this test alone in
    a fresh interpreter instead, so the fork path is what gets tested; True when that happened."""
    if threading.active_count() == 1 or os.environ.get("GRAPHLINT_TEST_FRESH"):
        return False
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", request.node.nodeid],
                       cwd=root, env=dict(os.environ, GRAPHLINT_TEST_FRESH="1"), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    return True
