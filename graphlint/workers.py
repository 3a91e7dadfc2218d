"""Lint several models at once, each in a worker process (``graphlint check --jobs``).

A CI run lints many mid-size models, and most of each model's cost is Python that one process
can only do one model after another. Here each model is linted by :func:`graphlint.lint.lint_one`
in a worker of its own (a :class:`graphlint.procs.Child`), up to ``jobs`` at a time; the run
keeps the order the paths were given in. Models go smallest file first, and the last one, which
has the machine to itself at the end, runs its shape inference in a child as a one-model run
does; the others do it in-process, since the other cores are busy. The parent stops a worker that
outlives the time budget by a margin (a long C++ call its own timer cannot interrupt), and lints
again in-process the model of a worker that died, so the outcome is the same as in one process.

What comes back of a model is whatever its job returns: for ``graphlint check`` its findings,
statistics, timings and header (:func:`detached`), not its IR; for ``graphlint scan`` the plain
rows it stores (graphlint.scan.work).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from graphlint import procs
from graphlint.ir import Graph, Model

# Seconds past the time budget before the parent kills a worker: the worker's own timer
# reports an overrun itself unless a C++ call holds it.
BUDGET_MARGIN = 10.0

Outcome = Any  # what the job returns for one path
# The job of the workers forked next: each inherits it (a worker gets only its path's index, since
# the options hold closures that cannot be pickled).
_LINT: Callable[[str], Outcome] | None = None
_PATHS: list[str] = []


def lint_each(paths: list[str], lint: Callable[[str], Outcome], overrun: Callable[[str], Outcome], *,
              jobs: int, time_budget: float, on_model: Callable[[str], None] | None,
              died: Callable[[str], Outcome] | None = None, retries: int = 0,
              on_outcome: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
    """Each path's outcome (``lint(path)``), in the order given, linted up to ``jobs`` at a time.

    ``overrun(path)`` is the outcome of a worker killed past the budget. A worker that dies is
    replaced and its path tried again ``retries`` times; after that the outcome is ``died(path)``
    (default: ``lint(path)`` in this process). ``on_outcome(index, outcome)`` is called as each
    path ends, in the order they end (a scan stores each result as soon as it exists)."""
    global _LINT, _PATHS
    if not procs.can_fork():
        out = []
        for i, path in enumerate(paths):
            if on_model:
                on_model(path)
            out.append(lint(path))
            if on_outcome:
                on_outcome(i, out[-1])
        return out
    _LINT, _PATHS = lint, paths
    outcomes: list[Outcome | None] = [None] * len(paths)
    tries = [0] * len(paths)
    queue = deque(sorted(range(len(paths)), key=lambda i: _size(paths[i])))
    running: dict[Future, tuple[int, procs.Child, float]] = {}  # job -> (path index, worker, deadline)
    limit = min(jobs, len(paths))
    try:
        while queue or running:
            while queue and len(running) < limit:
                i = queue.popleft()
                if on_model:
                    on_model(paths[i])
                # The last model runs its shape inference in a child as a one-model run does.
                worker = procs.Child(worker=True, share_cores=bool(queue))
                future = worker.submit(_work, i)
                deadline = time.monotonic() + time_budget + BUDGET_MARGIN if time_budget else float("inf")
                running[future] = (i, worker, deadline)
            soonest = min(d for _, _, d in running.values()) - time.monotonic()
            done, _ = wait(list(running), timeout=None if soonest == float("inf") else max(soonest, 0),
                           return_when=FIRST_COMPLETED)
            for future in done:
                i, worker, _ = running.pop(future)
                result = procs.Child.outcome(future)
                worker.close()
                if result is procs.DIED and tries[i] < retries:
                    tries[i] += 1
                    queue.appendleft(i)
                    continue
                outcomes[i] = (died or lint)(paths[i]) if result is procs.DIED else result
                if on_outcome:
                    on_outcome(i, outcomes[i])
            now = time.monotonic()
            for future, (i, worker, deadline) in list(running.items()):
                if now >= deadline:
                    del running[future]
                    worker.cancel()
                    outcomes[i] = overrun(paths[i])
                    if on_outcome:
                        on_outcome(i, outcomes[i])
    finally:
        for _, worker, _ in running.values():  # Ctrl-C: no worker outlives the run
            worker.cancel()
    return outcomes  # type: ignore[return-value]


def _work(i: int) -> Outcome:
    """A worker's job: one path, done in this process."""
    assert _LINT is not None
    return _LINT(_PATHS[i])


def lint_detached(lint: Callable[[str], tuple[list[Any], Any]], path: str) -> tuple[list[Any], Any]:
    """``lint(path)`` (graphlint.lint.lint_one's results and failure), the IR left behind: what a
    ``graphlint check`` worker sends back."""
    results, failure = lint(path)
    if results:  # one model, loaded once for every target: one header, shared as the model was
        header = detached(results[0].model)
        for res in results:
            res.model = header
    return results, failure


def detached(model: Model) -> Model:
    """``model`` without its IR: what reports, suppressions and ``--stats`` read of a result
    (path, format, metadata, statistics), and an empty main graph of the same name."""
    return Model(
        path=model.path, format=model.format, graph=Graph(model.graph.name, model.graph.path),
        dialect=model.dialect, ir_version=model.ir_version, opset_imports=dict(model.opset_imports),
        producer=model.producer, producer_version=model.producer_version, metadata=dict(model.metadata),
        rt_info=dict(model.rt_info), stats=dict(model.stats), timings=dict(model.timings),
    )


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0  # the worker reports why
