"""Pipeline rules: one pipeline and target in, findings out (the model engine's twin).

A pipeline rule (``scope = "pipeline"``) reads the :class:`~graphlint.pipeline.contracts.Contracts`
and reports on the file that must change: a config key (the finding's file is that config, with
the key's line, so SARIF puts it there) or a stage graph. A rule that raises becomes a GL9002
finding, as on models.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from graphlint.engine import INTERNAL_RULE_ID, checked
from graphlint.ir import SourceLoc
from graphlint.pipeline import Edge, Pipeline
from graphlint.pipeline.contracts import Contracts
from graphlint.rule import Finding, Rule, Severity
from graphlint.target import Target


@dataclass
class EdgeVerdict:
    """One contract of the pipeline and what the rules said of it, for the report's pipeline block."""

    subject: str  # "vision_embeddings:last_hidden_state -[image tokens]-> language_model:inputs_embeds"
    contract: str  # "f32 [.., 32] -> f32 [.., 32]; rows = image tokens at 5 sizes"
    verdict: str = "ok"  # ok | error | warning | unknown
    edge: Edge | None = None  # the edge as resolved in the graphs (an implied one they lack is not here)


@dataclass
class PipelineResult:
    pipeline: Pipeline
    target: Target
    findings: list[Finding]
    contracts: list[EdgeVerdict] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    confirm: dict[str, Any] | None = None  # --confirm: the pipeline run end to end (graphlint.confirm.pipeline)

    @property
    def path(self) -> str:
        return self.pipeline.folder


class PipelineContext:
    def __init__(self, contracts: Contracts, target: Target, options: dict[str, Any]) -> None:
        self.contracts = contracts
        self.pipeline = contracts.pipeline
        self.target = target
        self.options = options
        self.rule: type[Rule] | None = None

    def finding(self, message: str, *, config: str | None = None, key: str | None = None, stage: str | None = None,
                value: str | None = None, severity: Severity | None = None, **properties: Any) -> Finding:
        """A finding on ``config``'s ``key`` (the file to change), else on ``stage``'s model file."""
        rule = self.rule
        assert rule is not None, "finding() called outside a rule"
        pipe = self.pipeline
        if config is not None:
            file, line = pipe.configs.path(config), pipe.configs.line(config, key) if key else None
        elif stage is not None and pipe.stage(stage) is not None:
            file, line = pipe.stage(stage).path, None  # type: ignore[union-attr]
        else:
            file, line = pipe.folder, None
        props = {"pipeline": pipe.name, "folder": pipe.folder, "layout": pipe.layout, "stage": stage,
                 "config": config, "key": key, **properties}
        return Finding(
            rule_id=rule.id, rule_name=rule.name, severity=severity or rule.severity, message=message,
            model=file, location=SourceLoc(file=file, graph_path=f"pipeline:{pipe.name}", line=line),
            node=stage, value=value if value is not None else (f"{config}:{key}" if config and key else None),
            target=self.target.spec, properties={k: v for k, v in props.items() if v is not None})


def run_pipeline_rules(contracts: Contracts, target: Target, rules: Iterable[type[Rule]],
                       options: dict[str, Any]) -> PipelineResult:
    ctx = PipelineContext(contracts, target, options)
    overrides: dict[str, Severity] = options.get("severity_overrides", {})
    findings: list[Finding] = []
    timings: dict[str, float] = {}
    for rule_cls in sorted((r for r in rules if r.scope == "pipeline"), key=lambda r: r.id):
        if rule_cls.targets is not None and target.name not in rule_cls.targets:
            continue
        t0 = time.perf_counter()
        ctx.rule = rule_cls
        out = checked(rule_cls, functools.partial(rule_cls().check_pipeline, ctx),
                      functools.partial(crash_finding, contracts, target, rule_cls), overrides)
        findings.extend(out)
        timings[f"rule:{rule_cls.id}"] = time.perf_counter() - t0
    findings.sort(key=lambda f: (f.model, f.location.line or 0, f.rule_id, f.message))
    return PipelineResult(contracts.pipeline, target, findings, verdicts(contracts, findings), timings)


def crash_finding(contracts: Contracts, target: Target, rule_cls: type[Rule], e: Exception) -> Finding:
    """GL9002 for a pipeline-scope rule that raised (its subject is the folder, not a model)."""
    return Finding(INTERNAL_RULE_ID, "rule-crashed", Severity.WARNING,
                   f"Rule {rule_cls.id} ({rule_cls.name}, pack {rule_cls.pack!r}) crashed on pipeline "
                   f"'{contracts.pipeline.name}': {type(e).__name__}: {e}.",
                   contracts.pipeline.folder, SourceLoc(file=contracts.pipeline.folder),
                   target=target.spec, properties={"crashed_rule": rule_cls.id})


def verdicts(contracts: Contracts, findings: list[Finding]) -> list[EdgeVerdict]:
    """Each edge's contract and the worst finding about it (findings name the edge in ``edge``)."""
    out = []
    for ef in contracts.edges:
        subject = ef.edge.describe()
        about = [f for f in findings if f.properties.get("edge") == subject]
        verdict = "ok"
        if about:
            verdict = max(f.severity for f in about).label
        elif ef.problem:
            verdict = "unknown"
        out.append(EdgeVerdict(subject, _contract_text(contracts, ef), verdict, ef.edge))
    return out


def _contract_text(contracts: Contracts, ef: Any) -> str:
    if ef.problem:
        return ef.problem
    def port(v: Any) -> str:
        return f"{v.dtype or '?'} {shape_text(v.shape)}"
    text = f"{port(ef.out)} -> {port(ef.inp)}"
    if ef.edge.merge:
        singles = [f for f in contracts.feeds if f.images == 1]
        known = [f for f in singles if f.rows is not None]
        pairs = len(contracts.feeds) - len(singles)
        if contracts.processor is None:
            text += "; rows = image tokens: no processor config to check against"
        else:
            text += (f"; rows = image tokens at {len(known)} of {len(singles)} fed sizes"
                     + (" (and each as two images in one prompt)" if pairs else ""))
    return text


def shape_text(shape: Any) -> str:
    """A shape as messages and the report print it: ``[?, 16, 48]``, ``?`` for an unknown rank."""
    return "?" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
