"""Lint orchestration: paths and options in, a report Run out. No printing here.

One model: load it (a big ONNX file's shape inference and checker in a child process, see
graphlint.load.inference), then run the rules once per target; the targets share one
:class:`graphlint.analysis.Analyses`, so per-model analyses are computed once. Several
models: each in a worker process of its own (graphlint.procs), up to ``jobs`` at a time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from graphlint import registry, workers
from graphlint.analysis import Analyses, origins, partition, required
from graphlint.engine import LintResult, run_rules
from graphlint.errors import GraphlintError, InputError
from graphlint.ir import gc_paused
from graphlint.load import load_with_background
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
    # Models linted at once, each in a worker process, when a run has several. Results then hold
    # each model's header only (path, format, metadata: see detached), so callers that read a
    # result's graph (HTML report, baselines, fix) keep the default 1.
    jobs: int = 1
    # --confirm: run the models on the installed engines after the rules (graphlint.confirm.ConfirmOptions)
    confirm: Any = None


def selected_rules(opts: LintOptions) -> list[type[Rule]]:
    return registry.select(registry.load_rules(), opts.select, opts.ignore)


def lint_model(path: str, targets: list[Target], rules: list[type[Rule]], opts: LintOptions,
               *, child: bool = True) -> list[LintResult]:
    """Every target's result for one model (``child``: a big file's inference may run in a child)."""
    with gc_paused():
        t0 = time.perf_counter()
        model, background = load_with_background(path, child=child, meanwhile=_structure_work(rules))
        analyses = Analyses(model, background)
        try:
            targets = taking(targets, model.dialect, path, model.format)
            return lint_loaded(path, model, analyses, targets, rules, opts, time.perf_counter() - t0)
        finally:
            analyses.close()  # e.g. onnx.checker's child when GL0001 was not selected


def lint_loaded(path: str, model: Any, analyses: Analyses, targets: list[Target], rules: list[type[Rule]],
                opts: LintOptions, load_seconds: float, extra: dict[str, Any] | None = None) -> list[LintResult]:
    """Every target's result for a loaded model, origins attached (``extra``: rule options a deployment
    folder adds for this stage, its fed sizes)."""
    timings = {"load": load_seconds}
    timings.update((f"load:{k}", v) for k, v in model.timings.items())
    analyses.stats.setdefault("nodes", model.node_count)
    results = []
    for target in targets:
        target, options = _configure(path, target, opts)
        options.update(extra or {})
        res = run_rules(model, target, rules, options, analyses)
        res.timings = {**timings, **res.timings}
        results.append(res)
    if opts.confirm is not None and results:
        from graphlint.confirm import confirm_model

        _, options = _configure(path, results[0].target, opts)
        options.update(extra or {})
        confirm_model(path, model, analyses, results, options, rules, opts.confirm)
    attach_origins(analyses, results, opts.source_root or opts.root)
    return results


def taking(targets: list[Target], dialect: str, path: str, fmt: str) -> list[Target]:
    """The targets that can take a model of ``dialect`` (a run over .onnx and .xml files lints each for
    the targets that take it; ``skipped`` says which pairs were left); none at all is an input error."""
    ok = takes(targets, dialect)
    if not ok:
        names = ", ".join(sorted({t.name for t in targets}))
        raise InputError(path, f"no requested target can take {fmt} models ({names}; "
                               f"use --target {DEFAULT_TARGET[fmt]})")
    return ok


def takes(targets: list[Target], dialect: str) -> list[Target]:
    """The targets that can take a model of ``dialect`` (a file's kind, ``model_kind``, is its dialect)."""
    return [t for t in targets if dialect in t.dialects]


def skipped(paths: list[str], explicit: list[Target]) -> list[str]:
    """Notes for the report: the requested targets that cannot take some of the run's model files
    (when no requested target takes a lone kind of file, that is an input error instead)."""
    notes = []
    kinds = Counter(model_kind(p) for p in paths)
    for kind, n in sorted(kinds.items()):
        left = sorted({t.spec for t in explicit if kind not in t.dialects})
        if left and (len(kinds) > 1 or len(left) < len(explicit)):
            noun = "OpenVINO IR file" if kind == "openvino" else "ONNX file"
            notes.append(f"Skipped: {', '.join(left)} for {n} {noun}{'s' if n != 1 else ''} "
                         f"(the target{'s' if len(left) != 1 else ''} cannot take {kind} models).")
    return notes


def _structure_work(rules: list[type[Rule]]) -> dict[str, Callable[[Any], Any]]:
    """What the loader computes from the main graph's structure while its child infers the types:
    the graph's connected components, when a rule needs them (the partition, if every node is
    supported)."""
    wanted = required(name for rule in rules for name in rule.requires)
    return {"components": partition.components} if "components" in wanted else {}


def attach_origins(analyses: Analyses, results: list[LintResult], source_root: str) -> None:
    """Give each finding about a node where the model's code made that node (the ``origins``
    analysis, computed only when some finding is about a node; frames resolved under ``source_root``)."""
    path = analyses.model.path
    findings = [f for res in results for f in res.findings
                if f.location.node_index is not None and f.location.file == path]
    if not findings:
        return
    table: origins.Origins = analyses.get("origins", None)
    tree = origins.SourceTree(source_root)
    resolved: dict[int, origins.Origin | None] = {}
    for f in findings:
        node = table.node_at(f.location.graph_path, f.location.node_index)
        if node is None:
            continue
        if id(node) not in resolved:
            rec = table.of(node)
            resolved[id(node)] = None if rec is None else origins.resolve(rec, tree)
        f.origin = resolved[id(node)]


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
    paths, pipelines, empty = expand_folders(paths)
    every = paths + [p for pipe in pipelines for p in pipe.paths]
    notes = skipped(every, explicit)
    if explicit and (pipelines or len({model_kind(p) for p in paths}) > 1):
        # a mixed run: a file no requested target takes is skipped (said in the notes), not an error
        paths = [p for p in paths if takes(explicit, model_kind(p))]
    run = _lint_files(paths, explicit, rules, opts)
    for pipe in pipelines:
        _lint_pipeline(pipe, explicit, rules, opts, run)
    run.notes[:0] = notes
    run.failures.extend(empty)
    return run



def expand_folders(paths: list[str]) -> tuple[list[str], list[Any], list[LoadFailure]]:
    """Folders given on the command line: their deployment pipelines (graphlint.pipeline.detect),
    the model files that belong to none, which are linted alone like any file, and the folders that
    hold neither (each an input error of the run, like an unreadable model)."""
    if not any(os.path.isdir(p) for p in paths):
        return paths, [], []
    from graphlint.pipeline import detect

    files: list[str] = []
    pipelines = []
    empty = []
    for p in paths:
        if not os.path.isdir(p):
            files.append(p)
            continue
        found = detect.find(p)
        pipelines.extend(found.pipelines)
        files.extend(found.loose)
        if not found.pipelines and not found.loose:
            empty.append(LoadFailure(p, "is a directory with no model file (.onnx, OpenVINO .xml) and no "
                                        "deployment pipeline"))
    return files, pipelines, empty


def lint_folder_pipelines(folder: str, explicit: list[Target], rules: list[type[Rule]], opts: LintOptions) -> Run:
    """The pipelines of ``folder`` itself (not of its subfolders) linted into a run: ``graphlint scan``'s
    task for a deployment folder."""
    from graphlint.pipeline import detect

    names = {e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False)}
    run = Run(results=[], failures=[], rules=rules, root=os.path.abspath(opts.root))
    for pipe in detect.detect(folder, names):
        _lint_pipeline(pipe, explicit, rules, opts, run)
    return run


def _lint_pipeline(pipe: Any, explicit: list[Target], rules: list[type[Rule]], opts: LintOptions, run: Run) -> None:
    from graphlint.pipeline.lint import lint_pipeline

    if opts.on_model:
        opts.on_model(pipe.folder)

    def lint_stage(path: str, model: Any, analyses: Analyses, seconds: float,
                   extra: dict[str, Any]) -> list[LintResult]:
        targets = takes(explicit, model.dialect) if explicit else [resolve(DEFAULT_TARGET[model.format])]
        return lint_loaded(path, model, analyses, targets, rules, opts, seconds, extra)

    def configure(path: str, target: Target) -> tuple[Target, dict[str, Any]]:
        return _configure(path, target, opts)

    try:
        with gc_paused(), time_budget(model_budget(opts) * max(1, len(pipe.stages))):
            results, piped, failed = lint_pipeline(pipe, lint_stage, configure, rules, _structure_work(rules),
                                                   opts.confirm)
    except TimeBudgetExceeded:
        run.failures.append(budget_failure(pipe.folder, opts.time_budget))
        return
    except InputError as e:
        run.failures.append(LoadFailure(e.path, e.problem, e.line))
        return
    run.results.extend(results)
    run.pipelines.extend(piped)
    run.failures.extend(LoadFailure(path, problem) for path, problem in failed)


def _lint_files(paths: list[str], explicit: list[Target], rules: list[type[Rule]], opts: LintOptions) -> Run:
    if opts.jobs > 1 and len(paths) > 1:
        _warm(paths, explicit)
        quiet = dataclasses.replace(opts, on_model=None)  # progress is shown as workers start
        one = functools.partial(lint_one, explicit=explicit, rules=rules, opts=quiet)  # a dead worker's: here, IR kept
        per_path = workers.lint_each(
            paths, functools.partial(workers.lint_detached, one),
            functools.partial(budget_outcome, seconds=opts.time_budget),
            jobs=opts.jobs, time_budget=model_budget(opts), on_model=opts.on_model, died=one)
    else:
        per_path = [lint_one(path, explicit, rules, opts) for path in paths]
    results: list[LintResult] = []
    failures: list[LoadFailure] = []
    for found, failure in per_path:
        results.extend(found)
        if failure is not None:
            failures.append(failure)
    return Run(results=results, failures=failures, rules=rules, root=os.path.abspath(opts.root))


Outcome = tuple[list[LintResult], LoadFailure | None]


def _warm(paths: list[str], explicit: list[Target]) -> None:
    """Build once here what every worker would otherwise build for itself: onnx's operator
    schema registry and the targets' data tables (forked workers inherit them)."""
    kinds = {model_kind(p) for p in paths}
    if "onnx" in kinds:
        import onnx

        onnx.defs.has("Add")
    for target in explicit or [resolve(DEFAULT_TARGET[k]) for k in sorted(kinds)]:
        for key in target.profile.get("data", {}):
            target.data(key)


def lint_one(path: str, explicit: list[Target], rules: list[type[Rule]], opts: LintOptions,
             *, child: bool = True) -> Outcome:
    """One model's results for every target, or why it could not be linted."""
    if opts.on_model:
        opts.on_model(path)
    targets = explicit or [resolve(DEFAULT_TARGET[model_kind(path)])]
    try:
        with time_budget(model_budget(opts)):
            return lint_model(path, targets, rules, opts, child=child), None
    except TimeBudgetExceeded:
        return [], budget_failure(path, opts.time_budget)
    except InputError as e:
        return [], LoadFailure(path, e.problem, e.line)
    except GraphlintError as e:
        return [], LoadFailure(path, str(e))
    except (MemoryError, RecursionError) as e:
        return [], LoadFailure(path, f"model too large or too deeply nested to analyse ({type(e).__name__})")


def model_budget(opts: LintOptions) -> float:
    """Seconds one model may take: the static budget, and under --confirm each engine's own budget
    (the engine children are killed at theirs; bisection runs a few more of them)."""
    if not opts.time_budget or opts.confirm is None:
        return opts.time_budget
    return opts.time_budget + 8 * opts.confirm.budget if opts.confirm.budget else 0.0


def model_kind(path: str) -> str:
    return "openvino" if path.lower().endswith(".xml") else "onnx"


def budget_outcome(path: str, seconds: float) -> Outcome:
    return [], budget_failure(path, seconds)


def budget_failure(path: str, seconds: float) -> LoadFailure:
    return LoadFailure(path, f"gave up after the time budget of {seconds:g} s per model "
                             f"(--time-budget); the graph may be pathological")


def exit_code(run: Run, fail_level: Severity) -> int:
    if run.failures:
        return 2
    return 1 if any(f.severity >= fail_level for f in run.findings()) else 0
