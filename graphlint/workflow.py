"""Workflow integration applied to a finished run: suppressions and baselines."""

from __future__ import annotations

from graphlint.lint import LintOptions
from graphlint.report import Run


def apply_workflow(run: Run, opts: LintOptions, baseline_path: str | None) -> None:
    """Mark suppressed findings (in-model ``graphlint:ignore`` metadata) in place."""
    for res in run.results:
        ignored = {s.strip().upper() for s in res.model.metadata.get("graphlint:ignore", "").split(",") if s.strip()}
        for f in res.findings:
            if f.rule_id.upper() in ignored:
                f.suppressed = "graphlint:ignore in model metadata"
