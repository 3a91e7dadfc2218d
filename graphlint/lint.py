"""Lint orchestration: paths and options in, a report Run out. No printing here."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from graphlint import forked, registry
from graphlint.analysis import origins, run_early
from graphlint.engine import LintResult, RuleRun, analyses_needed
from graphlint.errors import GraphlintError, InputError
from graphlint.load import load_model
from graphlint.report import LoadFailure, Run
from graphlint.rule import Rule, Severity
from graphlint.target import Target, resolve

DEFAULT_TARGET = {"onnx": "trt", "openvino": "openvino"}
# Seconds one model may take (load + every target); 0 disables. A 100k-node graph lints in
# seconds, so this only ever stops a pathological graph or a runaway third-party rule.
DEFAULT_TIME_BUDGET = 300.0


class TimeBudgetExceeded(BaseException):
    """Raised from SIGALRM when a model runs past its budget.

    A BaseException (like KeyboardInterrupt) so that ``except Exception`` in loaders, rules
    and the engine's crash guard cannot swallow it and keep going.
    """


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise TimeBudgetExceeded in this thread once ``seconds`` have passed.

    Uses a real-time interval timer, so it needs the main thread of a POSIX process and
    interrupts Python code only (a long C++ call such as ONNX shape inference is stopped
    when it returns). Elsewhere, or when the caller already has an alarm set, no budget.
    """
    usable = seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeBudgetExceeded

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, old)


@dataclass
class LintOptions:
    targets: list[str] = field(default_factory=list)  # empty: trt for .onnx, openvino for .xml
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity_overrides: dict[str, Severity] = field(default_factory=dict)
    rule_options: dict[str, Any] = field(default_factory=dict)  # shapes, pad_multiple, ...
    root: str = "."
    source_root: str | None = None  # where findings' Python frames are looked for (default: root)
    fail_level: str = "error"
    baseline: str | None = None
    on_model: Callable[[str], None] | None = None  # progress callback
    time_budget: float = DEFAULT_TIME_BUDGET  # seconds per model, 0 = unlimited
    suppressions: list[Any] = field(default_factory=list)  # graphlint.config.Suppression, from configuration
    # per-model hook from the configuration: (path, target) -> (target with options, extra rule options)
    per_model: Callable[[str, Target], tuple[Target, dict[str, Any]]] | None = None
    # Models linted at once, each in a forked worker, when a run has several (graphlint.workers).
    # Results then hold each model's header only (path, format, metadata: see workers.detached),
    # so callers that read a result's graph (HTML report, baselines, fix) keep the default 1.
    jobs: int = 1


def selected_rules(opts: LintOptions) -> list[type[Rule]]:
    return registry.select(registry.load_rules(), opts.select, opts.ignore)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while one model is loaded and linted.

    The IR is millions of small container objects with no garbage cycles: left on, the
    collector rescans all of them about a dozen times per 100k-node model, frees nothing,
    and costs a quarter of the CPU time. It resumes (and collects) after each model.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def lint_model(path: str, targets: list[Target], rules: list[type[Rule]], opts: LintOptions) -> list[LintResult]:
    with _gc_paused():
        return _lint_model(path, targets, rules, opts)


def _lint_model(path: str, targets: list[Target], rules: list[type[Rule]], opts: LintOptions) -> list[LintResult]:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    model = load_model(path, defer_types=True)
    try:
        for target in targets:
            if model.dialect not in target.dialects:
                raise InputError(path, f"target {target.name} cannot take {model.format} models "
                                       f"(use --target {DEFAULT_TARGET[model.format]})")
        runs = [RuleRun(model, target, rules, options)
                for target, options in (_configure(path, target, opts) for target in targets)]
        if model.pending:
            # ONNX shape inference still runs in the loader's child: run what needs no inferred
            # types now instead of waiting for it (the type-free rules, and the analyses'
            # type-free parts; they only read what the loader has already built). Their time
            # is listed under load, and each rule's under its family as well.
            t_rules = sum(run.run(type_free_only=True) for run in runs)
            if t_rules:
                model.timings["rules that read no types (while inference runs)"] = t_rules
            needed = analyses_needed(r for r in rules if model.dialect in r.dialects)
            for name, t in run_early(model, sorted(needed)).items():
                model.timings[f"{name} (while inference runs)"] = t
            model.ready()
        timings["load"] = time.perf_counter() - t0
        timings.update((f"load:{k}", v) for k, v in model.timings.items())
        model.stats.setdefault("nodes", model.node_count)
        results = [run.result(dict(timings)) for run in runs]
        origins.attach(model, (f for res in results for f in res.findings), opts.source_root or opts.root)
        return results
    finally:
        if model.pending:  # raised before ready(): inference and checker children must not run on
            forked.cancel_all()
        model.drop_background()  # e.g. onnx.checker's child when GL0001 was not selected


def _configure(path: str, target: Target, opts: LintOptions) -> tuple[Target, dict[str, Any]]:
    """The target as the configuration sets it for this model, and the rule options."""
    options = dict(opts.rule_options, severity_overrides=opts.severity_overrides)
    if opts.per_model is not None:
        target, extra = opts.per_model(path, target)
        options.update(extra)
    return target, options


def lint_paths(paths: list[str], opts: LintOptions) -> Run:
    rules = selected_rules(opts)
    explicit = [resolve(s) for s in opts.targets]
    if opts.jobs > 1 and len(paths) > 1 and forked.available():
        from graphlint import workers

        per_path = workers.lint_each(paths, explicit, rules, opts)
    else:
        per_path = (lint_one(path, explicit, rules, opts) for path in paths)
    results: list[LintResult] = []
    failures: list[LoadFailure] = []
    for found, failure in per_path:
        results.extend(found)
        if failure is not None:
            failures.append(failure)
    return Run(results=results, failures=failures, rules=rules, root=os.path.abspath(opts.root))


def lint_one(path: str, explicit: list[Target], rules: list[type[Rule]],
             opts: LintOptions) -> tuple[list[LintResult], LoadFailure | None]:
    """One model's results for every target, or why it could not be linted."""
    if opts.on_model:
        opts.on_model(path)
    targets = explicit or [resolve(DEFAULT_TARGET[model_kind(path)])]
    try:
        with time_budget(opts.time_budget):
            return lint_model(path, targets, rules, opts), None
    except TimeBudgetExceeded:
        forked.cancel_all()  # an inference child forked for this model must not run on
        return [], budget_failure(path, opts.time_budget)
    except InputError as e:
        return [], LoadFailure(path, e.problem, e.line)
    except GraphlintError as e:
        return [], LoadFailure(path, str(e))
    except (MemoryError, RecursionError) as e:
        return [], LoadFailure(path, f"model too large or too deeply nested to analyse ({type(e).__name__})")


def model_kind(path: str) -> str:
    return "openvino" if path.lower().endswith(".xml") else "onnx"


def budget_failure(path: str, seconds: float) -> LoadFailure:
    return LoadFailure(path, f"gave up after the time budget of {seconds:g} s per model "
                             f"(--time-budget); the graph may be pathological")


def exit_code(run: Run, fail_level: Severity) -> int:
    if run.failures:
        return 2
    return 1 if any(f.severity >= fail_level for f in run.findings()) else 0
