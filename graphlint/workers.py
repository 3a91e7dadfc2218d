"""Lint several models at once, each in a forked worker process (``graphlint check --jobs``).

A CI run lints many mid-size models, and most of each model's cost is Python (building the
IR, the analyses, the rules) that one process can only do one model after another, on one
core. Here workers take the models in turn, up to ``jobs`` at a time; the run keeps the order
the paths were given in.

A worker lints its model as :func:`graphlint.lint.lint_one` does in one process, time budget
included, but without the loader's forked children (inference and onnx.checker: the other
cores are busy with other models), except for the model that starts last, when no model is
waiting: the cores the other workers leave behind go to its children. Models go smallest
file first, so that the last, which has the machine to itself at the end, is the biggest.
The parent also stops a worker that outlives the budget by a margin (a long C++ call that
the worker's own timer cannot interrupt). A worker that dies, or raises where one process
would have raised, has its model linted again in this process, so the outcome is the same.

What comes back of a model is its findings, statistics and timings, and its header
(:func:`detached`), not its IR.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import select
import time
from collections import deque
from typing import TYPE_CHECKING

from graphlint import forked
from graphlint.engine import LintResult
from graphlint.ir import Graph, Model
from graphlint.report import LoadFailure
from graphlint.rule import Rule
from graphlint.target import Target

if TYPE_CHECKING:
    from graphlint.lint import LintOptions

Outcome = tuple[list[LintResult], LoadFailure | None]
# Seconds past the time budget before the parent kills a worker: the worker's own timer
# reports an overrun itself unless a C++ call holds it.
BUDGET_MARGIN = 10.0


def lint_each(paths: list[str], explicit: list[Target], rules: list[type[Rule]],
              opts: LintOptions) -> list[Outcome]:
    """Each path's outcome, in the order given, linted up to ``opts.jobs`` at a time."""
    from graphlint.lint import budget_failure, lint_one

    _warm(paths, explicit)
    quiet = dataclasses.replace(opts, on_model=None)  # progress is shown here, as workers start
    outcomes: list[Outcome | None] = [None] * len(paths)
    queue = deque(sorted(range(len(paths)), key=lambda i: _size(paths[i])))
    running: dict[int, tuple[int, forked.Pending, float]] = {}  # pipe fd -> (path index, child, deadline)
    limit = min(opts.jobs, len(paths))
    try:
        while queue or running:
            while queue and len(running) < limit:
                i = queue.popleft()
                if opts.on_model:
                    opts.on_model(paths[i])
                # The last model forks the loader's children as one process would: the cores
                # the other workers leave behind go to it.
                child = forked.start(functools.partial(_work, paths[i], explicit, rules, quiet, not queue))
                deadline = time.monotonic() + opts.time_budget + BUDGET_MARGIN if opts.time_budget else float("inf")
                running[child.fd] = (i, child, deadline)
            wait = min(d for _, _, d in running.values()) - time.monotonic()
            ready = select.select(list(running), [], [], None if wait == float("inf") else max(wait, 0))[0]
            for fd in ready:
                i, child, _ = running.pop(fd)
                result = child.join()
                outcomes[i] = lint_one(paths[i], explicit, rules, quiet) if result is forked.DIED else result
            now = time.monotonic()
            for fd, (i, child, deadline) in list(running.items()):
                if now >= deadline:
                    del running[fd]
                    child.cancel()
                    outcomes[i] = ([], budget_failure(paths[i], opts.time_budget))
    finally:
        for _, child, _ in running.values():  # Ctrl-C: no worker outlives the run
            child.cancel()
    return outcomes  # type: ignore[return-value]


def _work(path: str, explicit: list[Target], rules: list[type[Rule]], opts: LintOptions,
          children: bool) -> Outcome:
    """A worker's job: one model, linted in this process (with the loader's children when
    ``children``), its IR left behind."""
    from graphlint.lint import lint_one

    if not children:
        forked.mark_worker()
    results, failure = lint_one(path, explicit, rules, opts)
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


def _warm(paths: list[str], explicit: list[Target]) -> None:
    """Build once here what every worker would otherwise build for itself: onnx's operator
    schema registry and the targets' data tables (forked workers inherit them)."""
    from graphlint.lint import DEFAULT_TARGET, model_kind
    from graphlint.target import resolve

    kinds = {model_kind(p) for p in paths}
    if "onnx" in kinds:
        from graphlint.load import onnx_loader

        onnx_loader.warm_schemas()
    for target in explicit or [resolve(DEFAULT_TARGET[k]) for k in sorted(kinds)]:
        for key in target.profile.get("data", {}):
            target.data(key)
