"""The rule engine: one model and target in, findings out, with the time each phase took.

Dispatch is by op type: the ``nodes_by_type`` analysis indexes the model's nodes once and
each rule gets only the nodes it declared, so cost scales with nodes asked for, not rules ×
nodes. A rule that raises does not end the run: the failure becomes a GL9002 finding naming
the rule, so one buggy third-party rule cannot hide every other finding.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from graphlint.analysis import Analyses
from graphlint.ir import Model, SourceLoc
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
    confirm: dict[str, Any] | None = None  # what --confirm ran and settled (graphlint.confirm.verdicts.run_note)


def applies(rule: type[Rule], model: Model, target: Target) -> bool:
    if rule.scope != "model" or model.dialect not in rule.dialects:
        return False
    return rule.targets is None or target.name in rule.targets


def run_rules(model: Model, target: Target, rules: Iterable[type[Rule]], options: dict[str, Any] | None = None,
              analyses: Analyses | None = None) -> LintResult:
    """Run ``rules`` on ``model`` for ``target``; ``analyses``: the model's shared results, when
    other targets of the run share them (a fresh manager otherwise)."""
    analyses = analyses if analyses is not None else Analyses(model)
    options = options or {}
    ctx = RuleContext(model, target, analyses, options)
    # Rules that wait for a background result go last, so the wait overlaps the others' work.
    todo = sorted((r for r in rules if applies(r, model, target)), key=lambda r: bool(r.waits_for))
    timings: dict[str, float] = {}
    dispatch = any(r.op_types for r in todo)
    index = analyses.get("nodes_by_type", None) if dispatch else {}
    all_nodes = analyses.get("all_nodes", None) if any(r.op_types == ALL_OPS for r in todo) else []
    overrides: dict[str, Severity] = options.get("severity_overrides", {})
    findings: list[Finding] = []
    for rule_cls in todo:
        t0 = time.perf_counter()
        rule = rule_cls()
        ctx.rule = rule_cls
        try:
            for name in rule_cls.requires:
                analyses.get(name, target)
            out: list[Finding] = list(rule.check(ctx))
            if rule_cls.op_types:
                nodes = all_nodes if rule_cls.op_types == ALL_OPS else (
                    n for op in sorted(rule_cls.op_types) for n in index.get(op, ()))
                for node in nodes:
                    if node.dialect not in rule_cls.dialects:
                        continue
                    if rule_cls.domains is not None and node.domain not in rule_cls.domains:
                        continue
                    out.extend(rule.check_node(node, ctx))
        except Exception as e:
            out = [crash_finding(model, target, rule_cls, e)]
        sev = overrides.get(rule_cls.id)
        if sev is not None:
            for f in out:
                f.severity = sev
        findings.extend(out)
        family = rule_cls.family_name()
        timings[f"rules:{family}"] = timings.get(f"rules:{family}", 0.0) + time.perf_counter() - t0
        timings[f"rule:{rule_cls.id}"] = time.perf_counter() - t0
    for name, t in analyses.computed(target).items():
        timings[f"analysis:{name}"] = t
    findings.sort(key=Finding.sort_key)
    return LintResult(model, target, findings, timings, dict(analyses.stats))


def checked(rule_cls: type[Rule], check: Callable[[], Iterable[Finding]], crashed: Callable[[Exception], Finding],
            overrides: dict[str, Severity]) -> list[Finding]:
    """One rule's findings from ``check()``, its configured severity applied; a rule that raises gives
    ``crashed(e)`` instead (GL9002), so one broken rule hides nothing else. The pipeline and runtime
    (``--confirm``) rules run through this; model rules through :func:`run_rules`'s dispatch."""
    try:
        out = list(check())
    except Exception as e:
        out = [crashed(e)]
    sev = overrides.get(rule_cls.id)
    if sev is not None:
        for f in out:
            f.severity = sev
    return out


def crash_finding(model: Model, target: Target, rule: type[Rule], e: Exception) -> Finding:
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
