"""The HTML report's pipeline section: each deployment folder drawn as its stages and edges, above the
per-graph sections, with every edge's contract, its verdict per target, and the pipeline's findings.

The drawing is a small SVG made here (stages in columns by their distance from the inputs, an arrow per
edge coloured by its worst verdict over the targets), so it needs no script and prints as it shows.
"""

from __future__ import annotations

import os
from html import escape

from graphlint.rule import Severity

_COLOR = {"ok": "#2e7d32", "error": "#c62828", "warning": "#ef6c00", "unknown": "#757575", "info": "#1565c0"}
_RANK = ["ok", "info", "unknown", "warning", "error"]
W, H, GAP_X, GAP_Y = 270, 54, 90, 26


def pipeline_sections(pipelines: list) -> str:
    """One section per pipeline (its results for every target side by side)."""
    groups: dict[tuple[str, str], list] = {}
    for pres in pipelines:
        groups.setdefault((pres.pipeline.folder, pres.pipeline.name), []).append(pres)
    return "".join(_section(k, results) for k, results in enumerate(groups.values()))


def _worst(verdicts: list[str]) -> str:
    return max(verdicts, key=lambda v: _RANK.index(v) if v in _RANK else 0, default="ok")


def _depths(pipe, edges: list) -> dict[str, int]:
    depth = {s.name: 0 for s in pipe.stages}
    for _ in pipe.stages:  # longest path from a stage no edge feeds (a DAG: len(stages) rounds settle it)
        for e in edges:
            if e.source in depth and e.dest in depth:
                depth[e.dest] = max(depth[e.dest], depth[e.source] + 1)
    return depth


def _svg(pipe, arrows: list[tuple]) -> str:
    """``arrows``: (edge, worst verdict over the targets) for each edge the graphs have."""
    depth = _depths(pipe, [e for e, _ in arrows])
    cols: dict[int, list[str]] = {}
    for s in pipe.stages:
        cols.setdefault(depth[s.name], []).append(s.name)
    pos = {name: (d * (W + GAP_X) + 10, i * (H + GAP_Y) + 10) for d, names in cols.items() for i, name in enumerate(names)}
    width = (max(cols) + 1) * (W + GAP_X) - GAP_X + 20
    height = max(len(v) for v in cols.values()) * (H + GAP_Y) - GAP_Y + 20
    parts = [f'<svg class="pipeline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="pipeline stages and edges">',
             ('<defs><marker id="gl-arrow" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" refX="9" '
              'refY="5" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>')]
    for e, verdict in arrows:
        if e.source not in pos or e.dest not in pos:
            continue
        (x1, y1), (x2, y2) = pos[e.source], pos[e.dest]
        color = _COLOR.get(verdict, "#555")
        dash = ' stroke-dasharray="6 3"' if e.merge else ""
        parts.append(f'<line x1="{x1 + W}" y1="{y1 + H / 2}" x2="{x2 - 2}" y2="{y2 + H / 2}" stroke="{color}" '
                     f'stroke-width="2.5"{dash} marker-end="url(#gl-arrow)"><title>{escape(e.describe())}</title></line>')
    for s in pipe.stages:
        x, y = pos[s.name]
        parts.append(f'<rect x="{x}" y="{y}" width="{W}" height="{H}" rx="6" fill="#f5f7fa" stroke="#90a4ae"/>'
                     f'<text x="{x + 8}" y="{y + 20}" font-size="13" font-weight="bold">{escape(s.name)}</text>'
                     f'<text x="{x + 8}" y="{y + 38}" font-size="11" fill="#555">'
                     f'{escape(_short(s.role + " · " + os.path.basename(s.path)))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _short(name: str, n: int = 40) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def _section(k: int, results: list) -> str:
    pipe = results[0].pipeline
    per_edge: dict[str, dict[str, tuple[str, str]]] = {}
    for pres in results:
        for ev in pres.contracts:
            per_edge.setdefault(ev.subject, {})[pres.target.title] = (ev.verdict, ev.contract)
    arrows = [(ev.edge, _worst([v for v, _ in per_edge[ev.subject].values()]))
              for ev in results[0].contracts if ev.edge is not None]
    targets = [pres.target.title for pres in results]
    rows = []
    for subject, by_target in per_edge.items():
        contract = next(iter(by_target.values()))[1]
        cells = "".join(f'<td style="color:{_COLOR.get(by_target.get(t, ("?", ""))[0], "#555")}">'
                        f"<b>{escape(by_target.get(t, ('?', ''))[0])}</b></td>" for t in targets)
        rows.append(f"<tr><td><code>{escape(subject)}</code><div class='muted'>{escape(contract)}</div></td>{cells}</tr>")
    findings = []
    for pres in results:
        for f in pres.findings:
            if f.suppressed:
                continue
            where = f.location.file + (f":{f.location.line}" if f.location.line else "")
            findings.append(f'<li class="sev-{f.severity.label}"><b style="color:{_COLOR.get(f.severity.label)}">'
                            f"{escape(f.severity.label)}</b> {escape(f.rule_id)} {escape(f.rule_name)} "
                            f"<span class='muted'>({escape(pres.target.title)}, <code>{escape(where)}</code>)</span>"
                            f"<div>{escape(f.message)}</div></li>")
    worst = max((f.severity for pres in results for f in pres.findings if not f.suppressed), default=None)
    verdict = "every contract holds" if worst is None or worst < Severity.WARNING else f"{worst.label}s"
    head = "".join(f"<th>{escape(t)}</th>" for t in targets)
    return (f'<section class="pipeline-section" id="pipeline-{k}"><h2>Pipeline {escape(pipe.name)} '
            f'<span class="muted">{escape(pipe.folder)} · {escape(pipe.layout)} · {escape(verdict)}</span></h2>'
            f'<div class="pipeline-graph">{_svg(pipe, arrows)}</div>'
            f'<table class="pipeline-edges"><tr><th>edge and contract</th>{head}</tr>{"".join(rows)}</table>'
            + (f"<ul class='pipeline-findings'>{''.join(findings)}</ul>" if findings else "")
            + "</section>")
