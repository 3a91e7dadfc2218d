"""OpenVINO's ONNX frontend asked about one file at a time, for gen_openvino.py: ``read_model`` in a child
process, so a probe that crashes the reader ends that child, not the generator, and what the frontend
said of the file ("" when it converted).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
from typing import Any

import onnx

# No translator: "No conversion rule found for operations: Op-N" (2026.4); 2024.6 says "OpenVINO does not
# support the following ONNX operations: [domain.]Op".
NOT_FOUND = re.compile(r"(?:No conversion rule found for operations|OpenVINO does not support the following ONNX "
                       r"operations): ([^\n]*)")

_CHILD = """
import json, sys
import openvino as ov
core = ov.Core()
for line in sys.stdin:
    ranks = []
    try:
        model = core.read_model(line.rstrip("\\n"))
        said = ""
        ranks = [o.get_partial_shape().rank.get_length() if o.get_partial_shape().rank.is_static else None
                 for o in model.outputs]
    except Exception as e:
        said = str(e)
    print("@@" + json.dumps([said, ranks]), flush=True)
"""


class Reader:
    """``read_model`` in a child process: a probe that crashes the reader (openvino 2024.6.0: SIGSEGV on a
    one-input org.openvinotoolkit DetectionOutput) ends that child, not the generator; a new child takes the
    next probe. A crash comes after the frontend found a translator, so it counts as one. A child silent for
    ``TIMEOUT`` seconds counts as crashed; its whole process group is killed (a crashed 2024.6 child
    sometimes leaves a forked copy of itself holding the pipe open)."""

    TIMEOUT = 30.0  # a probe takes milliseconds; the first one also imports openvino

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.buf = b""
        self.ranks: list[int | None] = []  # the last converted model's output ranks (None: dynamic)

    def read(self, path: str) -> str | None:
        """What read_model said ("" when it converted), None when it crashed."""
        if self.proc is None:
            self.proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, start_new_session=True)
            self.buf = b""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(path.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        while (line := self._line()) is not None:
            if line.startswith("@@"):
                said, self.ranks = json.loads(line[2:])
                return said
        self._end()
        return None

    def _line(self) -> str | None:
        """The child's next line; None at its end or after TIMEOUT seconds of silence."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], self.TIMEOUT)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace")

    def _end(self) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()
            self.proc = None


def read(core: Any, path: str) -> str | None:
    """What read_model said of the file ("" when it converted), None when it crashed."""
    if isinstance(core, Reader):
        return core.read(path)
    try:
        core.read_model(path)
        return ""
    except Exception as e:
        return str(e)


def said_of(core: Any, model: onnx.ModelProto, folder: str) -> str | None:
    """What read_model said of ``model``, saved in ``folder`` ("" when it converted), None when it crashed."""
    path = os.path.join(folder, "probe.onnx")
    onnx.save(model, path)
    return read(core, path)


def converts(core: Any, model: onnx.ModelProto, folder: str) -> tuple[bool, str]:
    said = said_of(core, model, folder)
    if said is None:
        return True, "read_model crashed (after finding a translator)"
    m = NOT_FOUND.search(said)
    if m and model.graph.node[0].op_type in m.group(1):
        return False, m.group(1).strip()
    return True, " ".join(said.split())[:200]
