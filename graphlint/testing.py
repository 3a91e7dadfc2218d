"""A pytest helper for export scripts: fail a test when a target would reject the model (docs/api.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphlint.api import Report, check

__all__ = ["assert_deployable"]


def assert_deployable(model: Any, target: str | Sequence[str] = "trt", **options: Any) -> Report:
    """Raise AssertionError, whose message is the text report, when ``check`` finds an error or the
    model cannot be read; return the report otherwise (its warnings are still there to look at)."""
    report = check(model, target, **options)
    if not report.ok:
        raise AssertionError("graphlint: the model is not deployable\n" + report.to_text())
    return report
