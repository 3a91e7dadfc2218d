"""Work in forked child processes, through the standard library's process pools.

The loader runs ONNX shape inference and onnx.checker in a child (graphlint.load.inference),
and a run over several models lints each in a worker of its own (graphlint.lint). Each such
child is a :class:`Child`: a ``ProcessPoolExecutor`` of one forked process, so that one child
can be stopped (a time budget) without breaking another's work. Forking is used only where it
is safe and pays: POSIX, two cores or more (``--jobs``/``GRAPHLINT_JOBS`` 1: everything in
one process), no other thread running, and not in a worker whose siblings have the other cores.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

DIED = object()  # what Child.outcome() gives for a job whose process died or raised
_JOBS: int | None = None  # set_jobs(): the command line's --jobs
_IN_WORKER = False  # a worker whose siblings have the other cores forks no children of its own
_LIVE: set[Child] = set()
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_SIGINT_HELD = False  # a fork is under way: a Ctrl-C waits for its end (_sigint_held)
_SIGINT_PENDING = False


def set_jobs(n: int) -> None:
    """Use at most ``n`` processes from now on (``--jobs``; 1: no forking at all)."""
    global _JOBS
    _JOBS = n


@contextlib.contextmanager
def using_jobs(n: int) -> Iterator[None]:
    """``set_jobs(n)`` for the duration of a block (a library call leaves the caller's setting alone)."""
    global _JOBS
    old, _JOBS = _JOBS, n
    try:
        yield
    finally:
        _JOBS = old


def jobs() -> int:
    """Processes a run may use: ``--jobs``, else ``GRAPHLINT_JOBS`` when it is a number, else the core count."""
    if _JOBS is not None:
        return _JOBS
    env = os.environ.get("GRAPHLINT_JOBS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether a child may help here (and cannot deadlock: forking a threaded process can)."""
    if not hasattr(os, "fork") or _IN_WORKER or jobs() < 2:
        return False
    return threading.active_count() == 1


def _on_sigint(signum: int, frame: Any) -> None:
    global _SIGINT_PENDING
    if _SIGINT_HELD:
        _SIGINT_PENDING = True
        return
    signal.default_int_handler(signum, frame)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold a Ctrl-C that comes during a fork until the fork is done, then raise it.

    os.fork runs Python's at-fork callbacks (logging's lock release among them); a
    KeyboardInterrupt raised inside one is printed as "Exception ignored" and dropped, so a
    Ctrl-C landing there was lost and ``graphlint scan`` went on to the end. Only the main
    thread's default handler is replaced, and only for the block."""
    global _SIGINT_HELD, _SIGINT_PENDING
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    signal.signal(signal.SIGINT, _on_sigint)
    _SIGINT_HELD = True
    try:
        yield
    finally:
        _SIGINT_HELD = False
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if _SIGINT_PENDING:
            _SIGINT_PENDING = False
            raise KeyboardInterrupt


def _in_child(parent: int, worker: bool, share_cores: bool) -> None:
    """Initializer of a child: it owns none of its parent's children (it inherited their records),
    and it dies with its parent (a killed ``graphlint scan`` must leave no process behind: the
    siblings hold each other's job pipes open, so none would ever see its parent go)."""
    global _IN_WORKER, _SIGINT_HELD, _SIGINT_PENDING
    if signal.getsignal(signal.SIGINT) is _on_sigint:  # forked inside _sigint_held: Ctrl-C as usual
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _SIGINT_HELD = _SIGINT_PENDING = False
    _LIVE.clear()
    if worker:
        _IN_WORKER = share_cores
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


class Child:
    """One forked process running the jobs given to :meth:`submit` one after another."""

    def __init__(self, *, worker: bool = False, share_cores: bool = True) -> None:
        ctx = multiprocessing.get_context("fork")
        self._pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=_in_child,
                                         initargs=(os.getpid(), worker, share_cores))
        self._process: Any = None
        _LIVE.add(self)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        if self._process is not None:
            return self._pool.submit(fn, *args)
        before = set(multiprocessing.active_children())
        try:
            with _sigint_held():  # the executor forks its process in the first submit
                future = self._pool.submit(fn, *args)
                self._process = next(iter(set(multiprocessing.active_children()) - before), None)
        except KeyboardInterrupt:  # a Ctrl-C during the fork: this child goes too
            self.cancel()
            raise
        return future

    @staticmethod
    def outcome(future: Future) -> Any:
        """The job's result, or DIED when its process died or the job raised (the caller then
        does the work itself, and sees the error if there is one)."""
        try:
            return future.result()
        except Exception:
            return DIED

    def cancel(self) -> None:
        """Kill the process and forget its jobs: it must not outlive the model it works for."""
        _LIVE.discard(self)
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._process is not None:
            with contextlib.suppress(Exception):
                self._process.kill()
                self._process.join()
                # The pool's management thread may reap the process between our kill and join;
                # then our join returns at once and the Process sees the exit only when that
                # thread records it, a moment later.
                deadline = time.monotonic() + 5
                while self._process.is_alive() and time.monotonic() < deadline:
                    time.sleep(0.001)

    def close(self) -> None:
        """Wait for the jobs given and let the process end."""
        _LIVE.discard(self)
        self._pool.shutdown(wait=True)


def cancel_all() -> None:
    """Stop every child still running (a time budget ran out, or the command ends)."""
    for child in list(_LIVE):
        child.cancel()
