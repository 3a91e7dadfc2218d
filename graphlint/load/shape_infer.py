"""ONNX shape inference (and onnx.checker) off the loader's critical path.

Shape inference is the largest single cost of linting a big model, and it is C++ that
holds the GIL. When the machine has a second core and the model is large, the loader
forks once: the child runs inference on the file's own bytes (no re-serialization) and
then onnx.checker on the inferred bytes, while the parent builds the IR. The child sends
back only what inference added (each graph's ``value_info``, ``input`` and ``output``, in the
loader's graph order), the strict-mode issues and the checker's verdict; the parent
merges those into its proto, so ``model.proto`` ends up byte-identical to what
``onnx.shape_inference.infer_shapes`` returns. Without fork (Windows, threads running,
small models, ``GRAPHLINT_JOBS=1``) the loader infers in-process on the file bytes.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import onnx

from graphlint.ir import LoadIssue

# Below this many nodes a fork costs about what it saves.
FORK_MIN_NODES = 2000
NOT_CHECKED = "not-checked"  # verdict placeholder: the checker was not run ahead
_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS


def graph_protos(model: onnx.ModelProto) -> Iterator[onnx.GraphProto]:
    """Every GraphProto of the model (main graph, bodies, bodies inside functions) in the
    converter's breadth-first order: main, then function bodies' and main's subgraphs as
    their owners are visited."""
    queue: deque[Any] = deque([model.graph, *model.functions])
    while queue:
        gp = queue.popleft()
        if isinstance(gp, onnx.GraphProto):
            yield gp
        for n in gp.node:
            for a in n.attribute:
                if a.type == _GRAPH:
                    queue.append(a.g)
                elif a.type == _GRAPHS:
                    queue.extend(a.graphs)


def _parts(inferred: onnx.ModelProto) -> list[bytes]:
    """What shape inference changes, per graph: value_info, and the types of inputs (a Loop or
    Scan body's) and outputs."""
    out = []
    for gp in graph_protos(inferred):
        part = onnx.GraphProto()
        part.value_info.extend(gp.value_info)
        part.input.extend(gp.input)
        part.output.extend(gp.output)
        out.append(part.SerializeToString())
    return out


def merge(graphs: list[onnx.GraphProto], parts: list[bytes]) -> None:
    """Write inferred value_info/output into the loader's own graphs, in place."""
    if len(graphs) != len(parts):  # cannot happen for the same bytes; refuse rather than mis-assign
        raise RuntimeError(f"shape inference returned {len(parts)} graphs for {len(graphs)}")
    for gp, raw in zip(graphs, parts, strict=True):
        part = onnx.GraphProto.FromString(raw)
        for name in ("value_info", "input", "output"):
            gp.ClearField(name)
            getattr(gp, name).extend(getattr(part, name))


def _checker_verdict(model_bytes: bytes) -> str | None:
    """What ``onnx.checker.check_model(model, full_check=False)`` says: None when it passes,
    else its message (exactly what str() of the exception gives)."""
    try:
        onnx.checker.check_model(model_bytes, full_check=False)
        return None
    except Exception as e:
        return str(e).strip()


def _work(data: bytes, infer: Callable, check: bool) -> tuple[list[bytes] | None, list[LoadIssue], str]:
    """Inference (+ the checker) on the file bytes; runs in the child or in-process."""
    issues: list[LoadIssue] = []
    inferred = infer(data, issues)
    gave_up = isinstance(inferred, bytes)  # infer_shapes returned its input untouched
    verdict = NOT_CHECKED
    if check:
        verdict = _checker_verdict(data if gave_up else inferred.SerializeToString()) or ""
    return (None if gave_up else _parts(inferred)), issues, verdict


class Pending:
    """Inference running in a forked child; ``join()`` waits for its result."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        _LIVE.add(self)

    def join(self) -> tuple[list[bytes] | None, list[LoadIssue], str] | None:
        chunks = []
        try:
            with os.fdopen(self.fd, "rb") as f:
                self.fd = -1  # closed by f from here on
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    chunks.append(b)
        except BaseException:  # time budget or Ctrl-C while waiting
            self.cancel()
            raise
        os.waitpid(self.pid, 0)
        _LIVE.discard(self)
        blob = b"".join(chunks)
        if len(blob) < 8 or struct.unpack("<Q", blob[:8])[0] != len(blob) - 8:
            return None  # the child died (out of memory, killed): caller redoes the work in-process
        return pickle.loads(blob[8:])


    def cancel(self) -> None:
        """Kill and reap the child: it must not outlive the model it works for."""
        _LIVE.discard(self)
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


_LIVE: set[Pending] = set()


def cancel_all() -> None:
    """Stop every inference child still running (graphlint.lint calls it when a time budget runs out)."""
    for pending in list(_LIVE):
        pending.cancel()


def _can_fork(nodes: int) -> bool:
    if os.environ.get("GRAPHLINT_JOBS", "") == "1" or not hasattr(os, "fork"):
        return False
    if nodes < FORK_MIN_NODES or (os.cpu_count() or 1) < 2:
        return False
    return threading.active_count() == 1  # forking a threaded process can deadlock the child


def start(data: bytes, nodes: int, infer: Callable, check: bool) -> Pending | None:
    """Fork a child running :func:`_work`; None when forking is not worth it or not possible."""
    if not _can_fork(nodes):
        return None
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never returns into the caller's code
        code = 0
        try:
            os.close(r)
            payload = pickle.dumps(_work(data, infer, check), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as f:
                f.write(struct.pack("<Q", len(payload)))
                f.write(payload)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    return Pending(pid, r)
