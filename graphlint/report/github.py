"""GitHub Actions workflow commands (::error file=...::message) for inline annotations."""

from __future__ import annotations

from graphlint.report import Run
from graphlint.rule import Severity

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_github(run: Run) -> str:
    out = []
    for f in run.findings():
        message = f.message
        source = f.origin.under(run.root) if f.origin is not None else None
        if source is not None:  # annotate the Python line that made the node
            props = f"file={_prop(source)},line={f.origin.line}"
            message += f" (model {f.model})"
        else:
            props = f"file={_prop(f.model)}"
            if f.location.line:
                props += f",line={f.location.line}"
        props += f",title={_prop(f.rule_id + ' ' + f.rule_name)}"
        out.append(f"::{_LEVEL[f.severity]} {props}::{_escape(message)}")
    for fail in run.failures:
        line = f",line={fail.line}" if fail.line else ""
        out.append(f"::error file={_prop(fail.path)}{line},title=graphlint::{_escape(fail.message)}")
    return "\n".join(out) + ("\n" if out else "")
