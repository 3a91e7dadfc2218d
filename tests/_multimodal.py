"""Shared helpers for the multimodal GL3xx/GL4xx/GL5xx tests: built models and in-process linting."""

from __future__ import annotations

import os

from graphlint.lint import LintOptions, lint_paths
from graphlint.shapes_spec import parse_profiles


def models() -> str:
    from testmodels.export_multimodal import models as build

    return build()


def path(name: str) -> str:
    return os.path.join(models(), name)


def lint(file: str, target: str, select: str, shapes: list[str] | None = None):
    """Findings (not suppressed) of the selected rules on one model for one target."""
    opts = LintOptions(targets=[target], select=[select])
    opts.rule_options["shapes"] = parse_profiles(shapes or [])
    run = lint_paths([file], opts)
    assert not run.failures, run.failures
    return [f for r in run.results for f in r.findings]


def load_stats(file: str) -> dict:
    """The model's stats once the shape analysis has recorded its counts."""
    from graphlint.analysis import Analyses
    from graphlint.load import load_model

    analyses = Analyses(load_model(file))
    analyses.get("shapes", None)
    return analyses.stats
