"""Lint orchestration: paths and options in, a report Run out. No printing here."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphlint import registry
from graphlint.engine import LintResult, run_rules
from graphlint.errors import GraphlintError, InputError
from graphlint.load import load_model
from graphlint.report import LoadFailure, Run
from graphlint.rule import Rule, Severity
from graphlint.target import Target, resolve

DEFAULT_TARGET = {"onnx": "trt", "openvino": "openvino"}


@dataclass
class LintOptions:
    targets: list[str] = field(default_factory=list)  # empty: trt for .onnx, openvino for .xml
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity_overrides: dict[str, Severity] = field(default_factory=dict)
    rule_options: dict[str, Any] = field(default_factory=dict)  # shapes, pad_multiple, ...
    root: str = "."
    fail_level: str = "error"
    baseline: str | None = None
    on_model: Callable[[str], None] | None = None  # progress callback
    suppressions: list[Any] = field(default_factory=list)  # graphlint.config.Suppression, from configuration
    # per-model hook from the configuration: (path, target) -> (target with options, extra rule options)
    per_model: Callable[[str, Target], tuple[Target, dict[str, Any]]] | None = None


def selected_rules(opts: LintOptions) -> list[type[Rule]]:
    return registry.select(registry.load_rules(), opts.select, opts.ignore)


def lint_model(path: str, targets: list[Target], rules: list[type[Rule]], opts: LintOptions) -> list[LintResult]:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    model = load_model(path)
    timings["load"] = time.perf_counter() - t0
    model.stats.setdefault("nodes", model.node_count)
    results = []
    for target in targets:
        if model.dialect not in target.dialects:
            raise InputError(path, f"target {target.name} cannot take {model.format} models "
                                   f"(use --target {DEFAULT_TARGET[model.format]})")
        options = dict(opts.rule_options, severity_overrides=opts.severity_overrides)
        if opts.per_model is not None:
            target, extra = opts.per_model(path, target)
            options.update(extra)
        t = dict(timings)
        res = run_rules(model, target, rules, options, t)
        results.append(res)
    return results


def lint_paths(paths: list[str], opts: LintOptions) -> Run:
    rules = selected_rules(opts)
    explicit = [resolve(s) for s in opts.targets]
    results: list[LintResult] = []
    failures: list[LoadFailure] = []
    for path in paths:
        if opts.on_model:
            opts.on_model(path)
        kind = "openvino" if path.lower().endswith(".xml") else "onnx"
        targets = explicit or [resolve(DEFAULT_TARGET[kind])]
        try:
            results.extend(lint_model(path, targets, rules, opts))
        except InputError as e:
            failures.append(LoadFailure(path, e.problem))
        except GraphlintError as e:
            failures.append(LoadFailure(path, str(e)))
        except (MemoryError, RecursionError) as e:
            failures.append(LoadFailure(path, f"model too large or too deeply nested to analyse ({type(e).__name__})"))
    return Run(results=results, failures=failures, rules=rules, root=os.path.abspath(opts.root))


def exit_code(run: Run, fail_level: Severity) -> int:
    if run.failures:
        return 2
    return 1 if any(f.severity >= fail_level for f in run.findings()) else 0
