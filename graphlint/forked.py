"""Work in forked child processes, its result sent back pickled through a pipe.

The loader forks ONNX shape inference and onnx.checker (graphlint.load.shape_infer), and a
run over several models lints each in a worker of its own (graphlint.workers). Forking is
used only where it is safe and pays: POSIX, two cores or more (``--jobs``/``GRAPHLINT_JOBS``
1: everything in one process), one thread, and not in a worker whose siblings have the
other cores.
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
from collections.abc import Callable
from typing import Any

DIED = object()  # what Pending.join() returns when the child died before answering
_IN_WORKER = False  # mark_worker(): a worker whose siblings have the other cores
_JOBS: int | None = None  # set_jobs(): the command line's --jobs


def set_jobs(n: int) -> None:
    """Use at most ``n`` processes from now on (``--jobs``; 1: no forking at all)."""
    global _JOBS
    _JOBS = n


def jobs() -> int:
    """Processes a run may use: ``--jobs``, else ``GRAPHLINT_JOBS`` when set to a number, else
    the core count."""
    if _JOBS is not None:
        return _JOBS
    env = os.environ.get("GRAPHLINT_JOBS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1


def mark_worker() -> None:
    """This process is a graphlint.workers worker sharing the cores: it forks no children."""
    global _IN_WORKER
    _IN_WORKER = True


def available() -> bool:
    """Whether forking may help here (and cannot deadlock: no other thread runs)."""
    if not hasattr(os, "fork") or _IN_WORKER or jobs() < 2:
        return False
    return threading.active_count() == 1  # forking a threaded process can deadlock the child


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


def start(work: Callable[[], Any], *, gated: bool = False) -> Pending:
    """Fork a child that runs ``work()`` and sends its (picklable) result back; check
    :func:`available` first. A ``gated`` child waits for ``release()`` (or ``join()``) before
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
        # Its siblings are not its children: a cancel_all() here (a worker's time budget) must
        # not kill the parent's other workers.
        _LIVE.clear()
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
