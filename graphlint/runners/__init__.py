"""The engines a model is run on: ONNX Runtime, OpenVINO, TensorRT, each behind one small interface.

``graphlint fix`` runs them to prove a rewrite, ``graphlint check --confirm`` to settle what static
analysis could not. Nothing here is imported on the static path: each engine module imports its
engine only when a model is loaded on it. An engine's error becomes :class:`RunError` with its
informative line and, where the engine names one, the failing node.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any


class RunError(Exception):
    """An engine refused or failed a model; ``node`` is the node its message names, if any."""

    def __init__(self, message: str, node: str | None = None) -> None:
        super().__init__(message)
        self.node = node


def one_line(e: BaseException | str) -> str:
    """The informative line of an engine error (OpenVINO leads with source locations and checks)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from src/", "Check '"))]
    return (useful or lines or [type(e).__name__ if isinstance(e, BaseException) else "error"])[0][:300]


# How each engine names the node a message is about.
_NODE_PATTERNS = (
    re.compile(r"running \w+ node\. Name:'([^']*)'"),  # ONNX Runtime, run time
    re.compile(r"\bNode \(([^)]+)\) (?:Op|output)"),  # ONNX Runtime, session creation
    re.compile(r"node with name '([^']+)'"),  # OpenVINO CPU plugin, run time
    re.compile(r"[Nn]ode '(?:[\w:]+::)?\w+ ([^' ]+) \("),  # OpenVINO: While validating node 'opset1::Add /Add (...)'
    re.compile(r"[Nn]ode name: ([^\s,;]+)"),  # OpenVINO frontend / plugin
    re.compile(r"layer \"?([^\s\"]+)\"? \(type"),  # TensorRT builder
)


def node_named(message: str) -> str | None:
    """The node an engine's error message names, if it names one."""
    for pat in _NODE_PATTERNS:
        m = pat.search(message)
        if m and m.group(1):
            return m.group(1)
    return None


def failure(e: BaseException) -> RunError:
    """An engine exception as a RunError: its first useful line, and the node it names."""
    text = str(e)
    return RunError(one_line(text) if text.strip() else type(e).__name__, node_named(text))


def write_progress(path: str, doc: dict[str, Any]) -> None:
    """An engine child's record of what it did so far, replaced whole (the parent reads it whatever the
    child's end). Scratch in the linter's own temporary folder: no fsync, unlike a user's file
    (graphlint.fsutil.atomic_write_text)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
