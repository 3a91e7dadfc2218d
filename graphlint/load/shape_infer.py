"""ONNX shape inference (and onnx.checker) off the loader's critical path.

Shape inference is the largest single cost of linting a big model, and it is C++ that
holds the GIL. When the machine has a second core and the model is large, the loader
forks before it reads the file: one child runs inference on the file and sends back only
the decoded types (see ``onnx_loader.infer_types_at``); another, forked at the same time,
runs onnx.checker on it (what users run) once inference is done and its core is free, since
only GL0001, run last, waits for its verdict. The parent reads, parses and builds the IR
meanwhile, and the engine starts the analyses' type-free parts (``defer_types``). Without
fork (Windows, threads running, small files, ``GRAPHLINT_JOBS=1``) the loader does the same
work in-process.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from itertools import compress
from operator import attrgetter
from typing import Any

import onnx

# Below this file size a fork costs about what it saves (a 2,000-node model is about 0.7 MB).
FORK_MIN_BYTES = 1 << 20
DIED = object()  # what Pending.join() returns when the child died before answering
# The default-domain ops with graph attributes, per onnx.defs (other domains' ops may have any).
GRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
_DEFAULT_DOMAIN = frozenset({"", "ai.onnx"})
_OP_AND_DOMAIN = attrgetter("op_type", "domain")
_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS


def graph_protos(model: Any, holders: Callable[[Any], list[Any]] | None = None) -> Iterator[Any]:
    """Every GraphProto of the model (main graph, bodies, bodies inside functions) in the
    converter's breadth-first order: main, then function bodies' and main's subgraphs as
    their owners are visited. (``model`` may also be a look-alike message with the same
    field names and its own ``holders``, see ``onnx_loader._types_only``.)"""
    holders = holders or _graph_holders
    queue: deque[tuple[Any, bool]] = deque([(model.graph, True), *((fn, False) for fn in model.functions)])
    while queue:
        gp, is_graph = queue.popleft()
        if is_graph:
            yield gp
        for n in holders(gp.node):
            for a in n.attribute:
                if a.type == _GRAPH:
                    queue.append((a.g, True))
                elif a.type == _GRAPHS:
                    queue.extend((g, True) for g in a.graphs)


def _graph_holders(nodes: Any) -> list[Any]:
    """The nodes that may have graph attributes, in order (found at C speed: reading every
    node's attributes would cost 2 µs a node)."""
    keys = list(map(_OP_AND_DOMAIN, nodes))
    # Each distinct (op type, domain) is looked at once; the nodes are picked at C speed.
    wanted = {key for key in set(keys) if may_hold_graphs(*key)}
    if not wanted:
        return []
    return [nodes[i] for i in compress(range(len(keys)), map(wanted.__contains__, keys))]


def may_hold_graphs(op_type: str, domain: str) -> bool:
    return op_type in GRAPH_OPS or domain not in _DEFAULT_DOMAIN


def checker_verdict(model: bytes | onnx.ModelProto) -> str | None:
    """What ``onnx.checker.check_model(model, full_check=False)`` says: None when it passes,
    else its message (exactly what str() of the exception gives)."""
    try:
        onnx.checker.check_model(model, full_check=False)
        return None
    except Exception as e:
        return str(e).strip()


class Pending:
    """Work running in a forked child; ``join()`` waits for its result."""

    def __init__(self, pid: int, fd: int, gate: int = -1) -> None:
        self.pid, self.fd, self.gate = pid, fd, gate
        _LIVE.add(self)

    def release(self) -> None:
        """Let a gated child start its work (idempotent)."""
        if self.gate >= 0:
            with contextlib.suppress(OSError):  # it died already: join() says so
                os.write(self.gate, b"1")
            self._close_gate()

    def _close_gate(self) -> None:
        if self.gate >= 0:
            with contextlib.suppress(OSError):
                os.close(self.gate)
            self.gate = -1

    def done(self) -> bool:
        """Whether the child has finished (its result waits in the pipe, or it died); never blocks.
        The child writes only once its work is done, so a readable pipe means finished."""
        return self.fd < 0 or bool(select.select([self.fd], [], [], 0)[0])

    def join(self) -> Any:
        """The child's result, or DIED when it died without one (out of memory, killed, cancelled)."""
        if self.fd < 0:
            return DIED
        self.release()
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
            return DIED
        return pickle.loads(blob[8:])

    def cancel(self) -> None:
        """Kill and reap the child: it must not outlive the model it works for."""
        _LIVE.discard(self)
        self._close_gate()
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
    """Stop every child still running (graphlint.lint calls it when a time budget runs out)."""
    for pending in list(_LIVE):
        pending.cancel()


def can_fork(nbytes: int) -> bool:
    if os.environ.get("GRAPHLINT_JOBS", "") == "1" or not hasattr(os, "fork"):
        return False
    if nbytes < FORK_MIN_BYTES or (os.cpu_count() or 1) < 2:
        return False
    return threading.active_count() == 1  # forking a threaded process can deadlock the child


def start(work: Callable[[], Any], *, gated: bool = False) -> Pending:
    """Fork a child that runs ``work()`` and sends its (picklable) result back; check
    :func:`can_fork` first. A ``gated`` child waits for ``release()`` (or ``join()``) before
    it starts: forked early, while the process is small, to run when a core is free.

    (Not a low-priority child: an unprivileged process cannot raise its priority back, so
    on a busy machine the parent could wait on a child that never gets a core.)"""
    r, w = os.pipe()
    gate_r, gate_w = os.pipe() if gated else (-1, -1)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never returns into the caller's code
        code = 0
        try:
            os.close(r)
            if gated:
                os.close(gate_w)
                if not os.read(gate_r, 1):  # the parent let go without releasing it
                    os._exit(0)
                os.close(gate_r)
            payload = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as f:
                f.write(struct.pack("<Q", len(payload)))
                f.write(payload)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    if gated:
        os.close(gate_r)
    return Pending(pid, r, gate_w)
