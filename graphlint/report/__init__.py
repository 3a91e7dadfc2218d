"""Reports: the results of one invocation rendered as text, JSON or SARIF 2.1.0."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from graphlint.engine import LintResult
from graphlint.ir import gc_paused
from graphlint.rule import Finding, Rule, Severity


@dataclass
class LoadFailure:
    """A model that could not be linted at all (exit code 2)."""

    path: str
    message: str  # the one line printed on stderr
    line: int | None = None  # where in a text model (.xml) the problem is, when the parser said


@dataclass
class Run:
    results: list[LintResult]
    failures: list[LoadFailure]
    rules: list[type[Rule]]  # the rules that were selected for this run
    root: str  # repository root that SARIF URIs are relative to
    notes: list[str] = field(default_factory=list)  # e.g. "results capped at 25000"
    # deployment folders' pipelines, one result per pipeline and target (graphlint.pipeline.engine)
    pipelines: list[Any] = field(default_factory=list)

    def all_results(self) -> list[Any]:
        """Model results, then pipeline results: everything that holds findings."""
        return [*self.results, *self.pipelines]

    def findings(self, include_suppressed: bool = False) -> list[Finding]:
        return [f for r in self.all_results() for f in r.findings if include_suppressed or not f.suppressed]

    def counts(self) -> Counter:
        c: Counter = Counter()
        for r in self.all_results():
            for f in r.findings:
                c["suppressed" if f.suppressed else f.severity.label] += 1
        return c


def render(run: Run, fmt: str, *, color: bool = False, show_info: bool = False, expand: bool = False) -> str:
    # The models' IR is still alive here, and a JSON/SARIF report builds hundreds of thousands
    # of dicts: with the collector on, they would trigger collections that rescan the whole IR.
    with gc_paused():
        return _render(run, fmt, color=color, show_info=show_info, expand=expand)


def _render(run: Run, fmt: str, *, color: bool, show_info: bool = False, expand: bool = False) -> str:
    if fmt == "json":
        from graphlint.report.json_report import render_json

        return render_json(run)
    if fmt == "sarif":
        from graphlint.report.sarif import render_sarif

        return render_sarif(run)
    if fmt == "github":
        from graphlint.report.github import render_github

        return render_github(run)
    from graphlint.report.text import render_text

    return render_text(run, color=color, show_info=show_info, expand=expand)


SEVERITY_ORDER = [Severity.ERROR, Severity.WARNING, Severity.INFO]
