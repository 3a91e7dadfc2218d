"""Text report for people: grouped by model, then node; colour only on a TTY.

Errors and warnings are listed; info-level findings (advice whose premise the model alone does
not settle: fp16 builds, tensor-core alignment, profiles the build will pass) are one summary
line per model unless ``show_info`` (``--show-info``). JSON, SARIF and the exit code see every
finding either way."""

from __future__ import annotations

import click

from graphlint.report import Run
from graphlint.rule import Finding, Severity

_COLORS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _where(f: Finding) -> str:
    loc = f.location
    bits = [loc.graph_path]
    if loc.line is not None:
        bits.append(f"line {loc.line}")
    elif loc.node_index is not None:
        bits.append(f"node #{loc.node_index}")
    return ", ".join(bits)


def render_text(run: Run, *, color: bool = False, show_info: bool = False) -> str:
    def style(text: str, **kw) -> str:
        return click.style(text, **kw) if color else text

    lines: list[str] = []
    for res in run.results:
        findings = [f for f in res.findings if not f.suppressed]
        m = res.model
        nodes = res.stats.get("nodes")
        if nodes is None:  # not .get("nodes", m.node_count): node_count walks the whole model
            nodes = m.node_count
        head = f"{m.path} ({m.format}, {nodes} nodes) -> {res.target.title}"
        lines.append(style(head, bold=True))
        part = res.stats.get("partition")
        if part:  # set by GL1010 (rules/gl110_partition.py)
            lines.append(f"  partition: {part['supported_pct']}% of {part['nodes']} nodes supported, "
                         f"{part['islands']} island(s), {part['unsupported_islands']} unsupported")
        hidden = [] if show_info else [f for f in findings if f.severity <= Severity.INFO]
        if hidden:
            findings = [f for f in findings if f.severity > Severity.INFO]
        if not findings:
            lines.append("  no errors or warnings" if hidden else "  no findings")
        groups: dict[tuple, list[Finding]] = {}
        for f in findings:  # one block per node (or per value / the model), in finding order
            groups.setdefault((f.node, f.op_type, None if f.node else f.value), []).append(f)
        for (node, op, value), group in groups.items():
            subject = f"'{node}' ({op})" if node else (f"value '{value}'" if value else "model")
            lines.append(f"  {style(subject, bold=True)}  {_where(group[0])}")
            origin = group[0].origin
            if origin is not None:  # one line for the node: all its findings share it
                lines.append(f"    {style(origin.describe(), dim=True)}")
            for f in group:
                sev = style(f"{f.severity.label:<7}", fg=_COLORS[f.severity])
                lines.append(f"    {sev} {f.rule_id} {f.rule_name}: {f.message}")
                if f.rewrite:
                    kind = "safe" if f.rewrite.safe else "unsafe, changes results"
                    desc = f" - {f.rewrite.description}" if f.rewrite.description else ""
                    lines.append(f"            fix: {f.rewrite.name} ({kind}){desc}")
        if hidden:
            lines.append("  " + style("info", fg=_COLORS[Severity.INFO]) + f"  {_info_line(hidden)}")
        lines.append("")
    c = run.counts()
    fixable = sum(1 for f in run.findings() if f.rewrite)
    parts = [_count(c.get("error", 0), "error"), _count(c.get("warning", 0), "warning"),
             _count(c.get("info", 0), "info")]
    # a model linted for several targets is one model (its results are one per target)
    models = len({r.model.path for r in run.results})
    summary = f"Found {', '.join(parts)} in {_count(models, 'model')}"
    if fixable:
        summary += f"; {fixable} fixable with 'graphlint fix'"
    if c.get("suppressed"):
        summary += f"; {c['suppressed']} suppressed"
    if run.failures:
        summary += f"; {_count(len(run.failures), 'model')} could not be read"
    lines.append(summary + ".")
    lines.extend(run.notes)
    return "\n".join(lines) + "\n"


def _info_line(infos: list[Finding]) -> str:
    """One line for a model's info findings: how many of each rule, and how to see them."""
    per_rule: dict[str, int] = {}
    for f in infos:
        key = f"{f.rule_id} {f.rule_name}"
        per_rule[key] = per_rule.get(key, 0) + 1
    rules = ", ".join(f"{k} ({n})" for k, n in per_rule.items())
    return f"{_count(len(infos), 'note')} not listed: {rules}; --show-info lists them."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
