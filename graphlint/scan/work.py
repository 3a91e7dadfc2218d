"""One task of a scan: lint one model for the targets whose stored rows are stale, in whatever
process runs it (a local worker or a Ray worker), and return plain data: the findings as the JSON
report's objects, never the IR. The driver turns an :class:`Outcome` into store rows.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

# Seconds past the time budget before a driver gives up on a task whose worker does not answer
# (a long C++ call its own timer cannot interrupt).
BUDGET_MARGIN = 10.0


@dataclass(frozen=True)
class Spec:
    """What every task needs to lint a model as the scan asks; picklable (it travels to Ray workers)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    config_path: str | None = None
    root: str | None = None
    time_budget: float = 300.0
    cwd: str = ""  # the driver's working folder: models are named relative to it (graphlint.scan.sources)
    confirm: bool | None = None  # --confirm / --no-confirm; None: as the configuration's [confirm] says


@dataclass(frozen=True)
class Task:
    path: str
    targets: tuple[str, ...]  # target specs to lint (those the model's format can take)
    shapes: tuple[str, ...] = ()  # the manifest's --shapes for this model
    size: int = 0  # bytes of the model file: how much memory the task declares


@dataclass
class TargetOutcome:
    target: str
    findings: list[dict[str, Any]]
    nodes: int | None = None
    confirm: dict[str, Any] | None = None  # --confirm: what ran on the engines (store.Row.confirm)


@dataclass
class Outcome:
    """What a task sends back: the findings per target, or why the model could not be linted."""

    path: str
    status: str  # linted | failed | crashed | timeout
    results: list[TargetOutcome] = field(default_factory=list)
    failure: str | None = None
    seconds: float = 0.0
    worker: str = ""
    attempts: int = 1
    engines: dict[str, Any] | None = None  # --confirm: the engines installed where it ran (keys.engine_versions)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def run_task(task: Task, spec: Spec) -> Outcome:
    """Lint ``task.path`` for ``task.targets`` in this process; every error becomes an outcome."""
    from graphlint.lint import budget_failure, lint_one
    from graphlint.report import Run
    from graphlint.report.json_report import finding_dict
    from graphlint.target import resolve
    from graphlint.workflow import apply_workflow

    t0 = time.perf_counter()
    try:
        if spec.cwd and os.getcwd() != spec.cwd:  # a Ray worker started elsewhere: paths are the driver's
            os.chdir(spec.cwd)
        opts, rules = options_for(spec, task.shapes)
        if os.path.isdir(task.path):
            return _pipeline_task(task, opts, rules, t0)
        found, failure = lint_one(task.path, [resolve(t) for t in task.targets], rules, opts)
        if failure is not None:
            overran = failure.message == budget_failure(task.path, spec.time_budget).message
            status = "timeout" if overran else "failed"
            return Outcome(task.path, status, failure=failure.message, seconds=time.perf_counter() - t0,
                           worker=worker_name())
        run = Run(results=found, failures=[], rules=rules, root=os.path.abspath(opts.root))
        apply_workflow(run, opts, None)
        results = [TargetOutcome(task.targets[i], [finding_dict(f) for f in res.findings], res.stats.get("nodes"),
                                 res.confirm) for i, res in enumerate(found)]
        return Outcome(task.path, "linted", results, seconds=time.perf_counter() - t0, worker=worker_name(),
                       engines=_engines(opts))
    except Exception as e:  # a bug of ours or a rule pack's must not stop the fleet
        return Outcome(task.path, "crashed", failure=f"internal error: {type(e).__name__}: {e}",
                       seconds=time.perf_counter() - t0, worker=worker_name())


def _pipeline_task(task: Task, opts: Any, rules: list[type], t0: float) -> Outcome:
    """A deployment folder: its pipelines linted (each stage, then the contracts), one outcome per target
    holding the stages' findings and the pipeline's."""
    from graphlint.lint import lint_folder_pipelines
    from graphlint.report.json_report import finding_dict
    from graphlint.target import resolve
    from graphlint.workflow import apply_workflow

    targets = [resolve(t) for t in task.targets]
    run = lint_folder_pipelines(task.path, targets, rules, opts)
    if run.failures and not run.results:
        return Outcome(task.path, "failed", failure="; ".join(f"{f.path}: {f.message}" for f in run.failures),
                       seconds=time.perf_counter() - t0, worker=worker_name())
    apply_workflow(run, opts, None)
    results = []
    for spec_, t in zip(task.targets, targets, strict=True):
        mine = [r for r in run.all_results() if r.target.spec == t.spec]
        nodes = sum(r.stats.get("nodes", 0) for r in run.results if r.target.spec == t.spec)
        stages = {_stage(r, task.path): c for r in mine if (c := getattr(r, "confirm", None))}
        results.append(TargetOutcome(spec_, [finding_dict(f) for r in mine for f in r.findings], nodes or None,
                                     {"stages": stages} if opts.confirm is not None else None))
    return Outcome(task.path, "linted", results, seconds=time.perf_counter() - t0, worker=worker_name(),
                   engines=_engines(opts))


def _stage(result: Any, folder: str) -> str:
    """How a deployment folder's confirm records name a result: its stage's file, or ``pipeline``."""
    model = getattr(result, "model", None)
    return os.path.relpath(model.path, folder) if model is not None else "pipeline"


def _engines(opts: Any) -> dict[str, Any] | None:
    """Under --confirm, the engines this process ran the model on (the driver keys the rows by them)."""
    if opts.confirm is None:
        return None
    from graphlint.scan.keys import engine_versions

    return engine_versions()


@functools.lru_cache(maxsize=64)
def options_for(spec: Spec, shapes: tuple[str, ...]) -> tuple[Any, list[type]]:
    """The lint options and rules for this spec (and a model's own shapes), once per process."""
    from graphlint.config import resolve_options
    from graphlint.lint import selected_rules

    opts = resolve_options(targets=[], select=list(spec.select), ignore=list(spec.ignore),
                           shapes=[*spec.shapes, *shapes], config_path=spec.config_path, repo_root=spec.root,
                           models=[], confirm=spec.confirm)
    opts.time_budget = spec.time_budget
    opts.jobs = 1
    return opts, selected_rules(opts)


def task_budget(spec: Spec) -> float:
    """Seconds a task may run before its executor gives up on it: the time budget, and under --confirm
    each engine's budget too (graphlint.lint.model_budget); 0: no limit."""
    from graphlint.lint import model_budget

    return model_budget(options_for(spec, ())[0])


def gave_up(task: Task, status: str, why: str, attempts: int = 1) -> Outcome:
    """The outcome of a task the driver ended: its worker died on every attempt, or it overran."""
    return Outcome(task.path, status, failure=why, attempts=attempts, worker="")
