"""The rule engine: load → analyse → dispatch rules → findings, with per-phase timings.

Dispatch is by op type: the engine builds one op-type index per model and hands each
rule only the nodes it declared, so cost scales with nodes asked for, not rules × nodes.
A rule that raises does not end the run: the failure becomes a GL9xx finding naming the
rule, so one buggy third-party rule cannot hide every other finding.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from graphlint.analysis import Analyses
from graphlint.ir import Model
from graphlint.rule import ALL_OPS, Finding, Rule, RuleContext, Severity
from graphlint.target import Target

INTERNAL_RULE_ID = "GL9002"  # see rules/gl9002_rule_crashed.py


@dataclass
class LintResult:
    model: Model
    target: Target
    findings: list[Finding]
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


def _applies(rule: type[Rule], model: Model, target: Target) -> bool:
    if model.dialect not in rule.dialects:
        return False
    return rule.targets is None or target.name in rule.targets


def analyses_needed(rules: Iterable[type[Rule]]) -> set[str]:
    """Every analysis a run of these rules computes: what they require, plus the engine's op-type index."""
    rules = list(rules)
    names = {name for r in rules for name in r.requires}
    if any(r.op_types for r in rules):
        names.add("nodes_by_type")
    if any(r.op_types == ALL_OPS for r in rules):
        names.add("all_nodes")
    return names


# Analyses that read no value types: rules needing only these may run before types arrive.
TYPE_FREE_ANALYSES = frozenset({"nodes_by_type", "all_nodes"})


def type_free(rule: type[Rule]) -> bool:
    """Whether the engine may run the rule while ONNX shape inference still runs."""
    return not rule.reads_types and TYPE_FREE_ANALYSES.issuperset(rule.requires)


class RuleRun:
    """The rules of one run on one model and target: dispatched in one go (:meth:`run`), or
    the type-free ones while the loader's shape inference runs and the rest after."""

    def __init__(self, model: Model, target: Target, rules: Iterable[type[Rule]],
                 options: dict[str, Any] | None = None) -> None:
        self.model, self.target = model, target
        self.options = options or {}
        self.analyses = Analyses(model, target)
        self.ctx = RuleContext(model, target, self.analyses, self.options)
        # Rules waiting for background results last (stable; findings are sorted below anyway).
        self.todo = sorted((r for r in rules if _applies(r, model, target)), key=lambda r: bool(r.waits_for))
        self.findings: list[Finding] = []
        self.timings: dict[str, float] = {}

    def run(self, *, type_free_only: bool = False) -> float:
        """Run the rules not run yet (only the type-free ones if asked); returns the time taken."""
        t_start = time.perf_counter()
        now = [r for r in self.todo if type_free(r)] if type_free_only else self.todo
        if not now:
            return 0.0
        self.todo = [r for r in self.todo if r not in now] if type_free_only else []
        analyses, ctx, timings = self.analyses, self.ctx, self.timings
        needed = analyses_needed(now)
        index = analyses.get("nodes_by_type") if "nodes_by_type" in needed else {}
        all_nodes = analyses.get("all_nodes") if "all_nodes" in needed else []
        overrides: dict[str, Severity] = self.options.get("severity_overrides", {})
        for rule_cls in now:
            t0 = time.perf_counter()
            rule = rule_cls()
            ctx.rule = rule_cls
            try:
                for name in rule_cls.requires:
                    analyses.get(name)
                out: list[Finding] = list(rule.check(ctx))
                if rule_cls.op_types:
                    nodes = all_nodes if rule_cls.op_types == ALL_OPS else (
                        n for op in sorted(rule_cls.op_types) for n in index.get(op, ())
                    )
                    for node in nodes:
                        if node.dialect not in rule_cls.dialects:
                            continue
                        if rule_cls.domains is not None and node.domain not in rule_cls.domains:
                            continue
                        out.extend(rule.check_node(node, ctx))
            except Exception as e:
                out = [_crash_finding(self.model, self.target, rule_cls, e)]
            sev = overrides.get(rule_cls.id)
            if sev is not None:
                for f in out:
                    f.severity = sev
            self.findings.extend(out)
            family = rule_cls.family_name()
            timings[f"rules:{family}"] = timings.get(f"rules:{family}", 0.0) + time.perf_counter() - t0
            timings[f"rule:{rule_cls.id}"] = time.perf_counter() - t0
        return time.perf_counter() - t_start

    def result(self, timings: dict[str, float] | None = None) -> LintResult:
        """Run what is left, and the findings in report order with every phase's time."""
        self.run()
        timings = timings if timings is not None else {}
        timings.update(self.timings)
        for name, t in self.analyses.timings.items():
            timings[f"analysis:{name}"] = t
        self.findings.sort(key=Finding.sort_key)
        return LintResult(self.model, self.target, self.findings, timings, dict(self.model.stats))


def run_rules(
    model: Model,
    target: Target,
    rules: Iterable[type[Rule]],
    options: dict[str, Any] | None = None,
    timings: dict[str, float] | None = None,
) -> LintResult:
    return RuleRun(model, target, rules, options).result(timings)


def _crash_finding(model: Model, target: Target, rule: type[Rule], e: Exception) -> Finding:
    from graphlint.ir import SourceLoc

    frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    where = f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
    return Finding(
        rule_id=INTERNAL_RULE_ID,
        rule_name="rule-crashed",
        severity=Severity.WARNING,
        message=f"Rule {rule.id} ({rule.name}, pack {rule.pack!r}) crashed{where}: {type(e).__name__}: {e}.",
        model=model.path,
        location=SourceLoc(file=model.path),
        target=target.spec,
        properties={"crashed_rule": rule.id},
    )
