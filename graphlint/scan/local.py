"""The local executor of a scan: this machine's worker processes (graphlint.workers), one model
each, up to ``jobs`` at a time. A worker that dies is replaced and its model tried once more in a
fresh one; a model that kills its worker twice, or overruns the time budget, is recorded as
such and the scan goes on."""

from __future__ import annotations

from collections.abc import Callable

from graphlint import procs, workers
from graphlint.scan.work import Outcome, Spec, Task, gave_up, run_task, task_budget

# The tasks of the workers forked next (they inherit it, and get a path's index).
_TASKS: dict[str, Task] = {}
_SPEC = Spec()


def run_local(tasks: list[Task], spec: Spec, on_outcome: Callable[[Task, Outcome], None], *, jobs: int,
              on_model: Callable[[str], None] | None = None) -> None:
    global _TASKS, _SPEC
    _TASKS, _SPEC = {t.path: t for t in tasks}, spec
    with procs.using_jobs(jobs):
        workers.lint_each(
            [t.path for t in tasks], _job, _overran, jobs=jobs, time_budget=task_budget(spec), on_model=on_model,
            died=_died, retries=1, on_outcome=lambda i, outcome: on_outcome(tasks[i], outcome))


def _job(path: str) -> Outcome:
    return run_task(_TASKS[path], _SPEC)


def _overran(path: str) -> Outcome:
    extra = " plus the engines' under --confirm" if task_budget(_SPEC) != _SPEC.time_budget else ""
    return gave_up(_TASKS[path], "timeout", f"its worker did not answer past the time budget of "
                                            f"{_SPEC.time_budget:g} s (--time-budget){extra} and was stopped")


def _died(path: str) -> Outcome:
    return gave_up(_TASKS[path], "crashed", "its worker process died on both attempts (a crash in native "
                                            "code, or out of memory)", attempts=2)
