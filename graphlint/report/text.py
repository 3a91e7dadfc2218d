"""Text report for people: grouped by model, then node; colour only on a TTY.

Errors and warnings are listed; info-level findings (advice whose premise the model alone does
not settle: fp16 builds, tensor-core alignment, profiles the build will pass) are one summary
line per model unless ``show_info`` (``--show-info``). More than three findings of one rule on one
op type are one block (:mod:`graphlint.report.groups`: count, the first three nodes, the shared
message and fix) unless ``expand`` (``--expand``). JSON, SARIF and the exit code see every finding
either way."""

from __future__ import annotations

from collections import Counter

import click

from graphlint.report import Run
from graphlint.report.groups import SHOWN, Group, fold, group_key
from graphlint.rule import Finding, Rewrite, Severity

_COLORS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _where(f: Finding) -> str:
    loc = f.location
    bits = [loc.graph_path]
    if loc.line is not None:
        bits.append(f"line {loc.line}")
    elif loc.node_index is not None:
        bits.append(f"node #{loc.node_index}")
    return ", ".join(bits)


def render_text(run: Run, *, color: bool = False, show_info: bool = False, expand: bool = False) -> str:
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
        if res.confirm is not None:
            lines.append("  " + confirm_line(res.confirm))
        hidden = [] if show_info else [f for f in findings if f.severity <= Severity.INFO]
        if hidden:
            findings = [f for f in findings if f.severity > Severity.INFO]
        if not findings:
            lines.append("  no errors or warnings" if hidden else "  no findings")
        groups, folded = ({}, set()) if expand else fold(findings)
        # blocks in finding order: one per node (or value / the model), one per folded group
        blocks: dict[tuple, list[Finding] | Group] = {}
        for f in findings:
            if id(f) in folded:
                gkey = group_key(f)
                blocks.setdefault(("group", *gkey), groups[gkey])
            else:
                blocks.setdefault(("node", f.node, f.op_type, None if f.node else f.value), []).append(f)
        for key, block in blocks.items():
            if isinstance(block, Group):
                lines.extend(_group_lines(block, style))
                continue
            _, node, op, value = key
            subject = f"'{node}' ({op})" if node else (f"value '{value}'" if value else "model")
            lines.append(f"  {style(subject, bold=True)}  {_where(block[0])}")
            origin = block[0].origin
            if origin is not None:  # one line for the node: all its findings share it
                lines.append(f"    {style(origin.describe(), dim=True)}")
            for f in block:
                sev = style(f"{f.severity.label:<7}", fg=_COLORS[f.severity])
                lines.append(f"    {sev} {f.rule_id} {f.rule_name}: {f.message}")
                if f.rewrite:
                    lines.append(_fix_line(f.rewrite))
        if hidden:
            lines.append("  " + style("info", fg=_COLORS[Severity.INFO]) + f"  {_info_line(hidden)}")
        lines.append("")
    for pres in run.pipelines:
        lines.extend(_pipeline_lines(pres, style, show_info))
    c = run.counts()
    fixable = sum(1 for f in run.findings() if f.rewrite)
    parts = [_count(c.get("error", 0), "error"), _count(c.get("warning", 0), "warning"),
             _count(c.get("info", 0), "info")]
    # a model linted for several targets is one model (its results are one per target)
    models = len({r.model.path for r in run.results})
    summary = f"Found {', '.join(parts)} in {_count(models, 'model')}"
    pipes = len({p.pipeline.folder + p.pipeline.name for p in run.pipelines})
    if pipes:
        summary += f" and {_count(pipes, 'pipeline')}"
    if fixable:
        summary += f"; {fixable} fixable with 'graphlint fix'"
    if c.get("suppressed"):
        summary += f"; {c['suppressed']} suppressed"
    if run.failures:
        summary += f"; {_count(len(run.failures), 'model')} could not be read"
    lines.append(summary + ".")
    lines.extend(run.notes)
    return "\n".join(lines) + "\n"


_VERDICT_COLORS = {"error": "red", "warning": "yellow", "ok": "green", "unknown": "blue", "info": "blue"}


def _pipeline_lines(pres, style, show_info: bool) -> list[str]:
    """One block per pipeline and target: its stages, each edge's contract and verdict, its findings."""
    pipe = pres.pipeline
    lines = [style(f"{pipe.title} -> {pres.target.title}", bold=True)]
    lines.append("  stages: " + ", ".join(f"{s.name} ({s.role})" for s in pipe.stages))
    if pres.confirm is not None:
        lines.append("  " + confirm_line(pres.confirm))
    for ev in pres.contracts:
        mark = style(f"{ev.verdict:<7}", fg=_VERDICT_COLORS.get(ev.verdict, "blue"))
        lines.append(f"  {mark} {ev.subject}")
        lines.append(f"          {style(ev.contract, dim=True)}")
    findings = [f for f in pres.findings if not f.suppressed and (show_info or f.severity > Severity.INFO)]
    hidden = [f for f in pres.findings if not f.suppressed and not show_info and f.severity <= Severity.INFO]
    for f in findings:
        sev = style(f"{f.severity.label:<7}", fg=_COLORS[f.severity])
        where = f.location.file if f.location.line is None else f"{f.location.file}:{f.location.line}"
        lines.append(f"  {sev} {f.rule_id} {f.rule_name}: {f.message}")
        lines.append(f"          {style(where, dim=True)}")
    if hidden:
        lines.append("  " + style("info", fg=_COLORS[Severity.INFO]) + f"  {_info_line(hidden)}")
    if not findings and not hidden:
        lines.append("  every contract holds")
    lines.append("")
    return lines


def confirm_line(doc: dict) -> str:
    """What --confirm ran for one result, in one line (graphlint.confirm.verdicts.run_note's record)."""
    if "engine" not in doc:
        return f"confirm: not run ({doc.get('skipped', 'no engine')})"
    engine = f"{doc['engine']} {doc['version']} ({doc['device'].upper()})"
    if doc.get("skipped"):
        return f"confirm: {engine} not run: {doc['skipped']}"
    points = doc.get("points", [])
    failed = sum(1 for p in points if not p["ok"])
    if doc.get("load_error"):
        text = f"confirm: {engine} refused the model"
    else:
        what = "the pipeline end to end on " + _count(len(points), "prompt") if doc.get("end_to_end") \
            else _count(len(points), "size")
        text = f"confirm: {engine} ran {what}" + (f", {failed} failed" if failed else "")
        labels = [p["label"] for p in points]
        if len(labels) > 4:
            labels = [*labels[:3], f"{len(labels) - 3} more"]
        text += " (" + ", ".join(labels) + ")" if labels else ""
    if doc.get("precision"):
        text += f", computing in {doc['precision']}"
    settled = [f"{doc[k]} {k}" for k in ("confirmed", "cleared", "contradicted") if doc.get(k)]
    if settled:
        text += "; " + ", ".join(settled)
    if doc.get("crashed"):
        text += f"; the engine process did not finish: {doc['crashed']}"
    return text + f"; {doc['seconds']:.1f} s"


def _group_lines(g: Group, style) -> list[str]:
    """A folded block: header with the count, the first nodes, the shared message and fix."""
    sev = style(f"{g.severity.label:<7}", fg=_COLORS[g.severity])
    nodes = g.nodes()
    n = len(nodes)
    count = f"{n} {g.op_type} nodes" if n == len(g.findings) else f"{len(g.findings)} findings on {n} {g.op_type} nodes"
    out = [f"  {sev} {g.rule_id} {g.rule_name}: {style(count, bold=True)}"]
    for f in nodes[:SHOWN]:
        out.append(f"    '{f.node}'  {_where(f)}")
    if n > SHOWN:
        out.append(f"    ... and {n - SHOWN} more (--expand lists them; --format json has every finding)")
    tails = Counter(g.tails())
    if len(tails) == 1:
        out.append(f"    each: {next(iter(tails))}")
    else:  # the messages differ past the node's name (an input, a dtype): the commonest few
        for tail, k in tails.most_common(SHOWN):
            out.append(f"    {k} of them: {tail}")
        if len(tails) > SHOWN:
            out.append(f"    ({len(tails) - SHOWN} other messages)")
    rewrite = g.shared_rewrite()
    if rewrite is not None:
        out.append(_fix_line(rewrite))
    elif any(f.rewrite for f in g.findings):
        out.append("            fix: differs per node (--expand lists each)")
    return out


def _fix_line(rewrite: Rewrite) -> str:
    kind = "safe" if rewrite.safe else "unsafe, changes results"
    desc = f" - {rewrite.description}" if rewrite.description else ""
    return f"            fix: {rewrite.name} ({kind}){desc}"


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
