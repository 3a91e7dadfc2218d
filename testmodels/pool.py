"""Map a function over models in worker processes, surviving a worker's native crash.

Engines (and graphlint's loaders) are native code: a model that crashes one must not take the
whole run down. Workers are spawned, not forked: a test process that already ran an engine holds
its thread pools' locks, and a forked child can wait on them forever. When the pool breaks, what
did not finish is retried, the first item alone when no progress is made, and an item that breaks
a pool on its own is reported through ``on_crash``. Used by the node-test conformance, the engine
drift generator and the real-model corpus.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any


def _many(fn: Callable[[Any], Any], items: list) -> list:
    return [fn(i) for i in items]


def isolated_map(fn: Callable[[Any], Any], items: list, *, key: Callable[[Any], str],
                 on_crash: Callable[[Any], Any], jobs: int = 2, chunk: int = 4) -> dict[str, Any]:
    """{key(item): fn(item)} over all items; ``fn`` must be a module-level function."""
    ctx = multiprocessing.get_context("spawn")
    done: dict[str, Any] = {}
    pending = list(items)
    while pending:
        before = len(done)
        with ProcessPoolExecutor(jobs, mp_context=ctx) as ex:
            futures = [(pending[i:i + chunk], ex.submit(_many, fn, pending[i:i + chunk]))
                       for i in range(0, len(pending), chunk)]
            for batch, fut in futures:
                with contextlib.suppress(BrokenProcessPool):
                    done.update(zip((key(i) for i in batch), fut.result(), strict=True))
        pending = [i for i in pending if key(i) not in done]
        if pending and len(done) == before:  # no progress: the first one alone
            item = pending.pop(0)
            with ProcessPoolExecutor(1, mp_context=ctx) as ex:
                try:
                    done[key(item)] = ex.submit(fn, item).result()
                except BrokenProcessPool:
                    done[key(item)] = on_crash(item)
    return done
