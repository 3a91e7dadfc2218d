"""A single self-contained HTML report: summary, findings table, and the graph around each finding.

Everything is inline (CSS, SVG, a little script for filtering): the file reads offline and
can be attached to a ticket. Nodes with target-support findings (GL1xx: operators the engine
cannot run) are grouped into connected "islands", each drawn in its own colour, because an
island is what ends up as a fallback partition or a plugin.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any

from graphlint import DOCS_URI, __version__
from graphlint.engine import LintResult
from graphlint.html.layout import Style, render_svg
from graphlint.ir import Node
from graphlint.report import Run
from graphlint.rule import FAMILIES, Finding, Rule, Severity

MAX_FIGURES = 200  # graph pictures per report; the table still lists every finding
UNSUPPORTED_FAMILY = "target-support"
SEV_FILL = {Severity.ERROR: "#fde2e1", Severity.WARNING: "#fff1cc", Severity.INFO: "#e0ecff"}
SEV_STROKE = {Severity.ERROR: "#c62828", Severity.WARNING: "#b7791f", Severity.INFO: "#2b6cb0"}
ISLAND_COLOURS = ["#d8b4fe", "#99f6e4", "#fbcfe8", "#bfdbfe", "#fed7aa", "#bbf7d0", "#e9d5ff", "#a5f3fc"]

CSS = """
:root{--fg:#1f2430;--muted:#5c6370;--line:#d9dde3;--bg:#f7f8fa}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
margin:0;background:var(--bg)}header,main{max-width:1200px;margin:0 auto;padding:16px 24px}
header{border-bottom:1px solid var(--line);background:#fff;max-width:none}header h1{margin:0 0 4px;font-size:20px}
.muted{color:var(--muted)}.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 16px;min-width:110px}
.card b{display:block;font-size:22px}.card.error b{color:#c62828}.card.warning b{color:#b7791f}
.card.info b{color:#2b6cb0}section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 16px;
margin:16px 0}h2{font-size:16px;margin:4px 0 10px}table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#f0f2f5;position:sticky;top:0}td.msg{max-width:560px}code{font-size:12.5px}
.sev{font-weight:600;border-radius:4px;padding:1px 6px;font-size:12px}.sev.error{background:#fde2e1;color:#c62828}
.sev.warning{background:#fff1cc;color:#8a5a00}.sev.info{background:#e0ecff;color:#2b6cb0}
.filters{display:flex;gap:14px;align-items:center;margin-bottom:8px;flex-wrap:wrap}
.filters input[type=search]{padding:4px 8px;min-width:260px}tr.hidden{display:none}
.figs{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
figure{margin:0;padding:10px;max-width:100%;border:1px solid var(--line);border-radius:8px;overflow:auto;background:#fcfcfd}
figcaption{margin-bottom:6px}svg.graph text.op{font:600 12px system-ui,sans-serif;fill:#1f2430}
svg.graph text.nm{font:11px ui-monospace,monospace;fill:#4a5160}svg.graph g.seed rect{stroke-width:3}
.swatch{display:inline-block;width:12px;height:12px;border-radius:3px;border:1px solid #888;vertical-align:middle;
margin-right:4px}ul.islands{margin:4px 0;padding-left:18px}#gl-errors{color:#c62828}
.legend span{margin-right:14px}
"""

SCRIPT = """
(function(){
  var errs=[];
  window.addEventListener('error',function(e){errs.push(String(e.message||e));show();});
  function show(){var el=document.getElementById('gl-errors');if(el){el.textContent=errs.join('\\n');}
    if(document.body){document.body.setAttribute('data-errors',String(errs.length));}}
  function apply(){
    var q=(document.getElementById('gl-q').value||'').toLowerCase();
    var on={};document.querySelectorAll('input[data-sev]').forEach(function(c){on[c.dataset.sev]=c.checked;});
    var n=0;document.querySelectorAll('#gl-findings tbody tr').forEach(function(r){
      var vis=on[r.dataset.sev]!==false&&(!q||r.textContent.toLowerCase().indexOf(q)>=0);
      r.classList.toggle('hidden',!vis);if(vis){n++;}});
    document.getElementById('gl-shown').textContent=String(n);return n;}
  document.addEventListener('DOMContentLoaded',function(){
    document.querySelectorAll('.filters input').forEach(function(i){i.addEventListener('input',apply);});
    var shown=apply(),drawn=0;
    document.querySelectorAll('svg.graph').forEach(function(s){var b=s.getBBox();if(b.width>0&&b.height>0){drawn++;}});
    document.body.setAttribute('data-rows',String(shown));
    document.body.setAttribute('data-svg-drawn',String(drawn));
    show();document.body.setAttribute('data-ready','1');
  });
})();
"""


def _node_index(res: LintResult) -> dict[tuple[str, str], Node]:
    return {(n.graph.path, n.label): n for n in res.model.walk()}


def _subject(f: Finding, index: dict[tuple[str, str], Node], res: LintResult) -> Node | None:
    """The node to draw a finding around: its node, else its value's producer or first consumer."""
    if f.node:
        return index.get((f.location.graph_path, f.node))
    if f.value:
        graph = next((g for g in res.model.graph.graphs() if g.path == f.location.graph_path), None)
        v = graph.values.get(f.value) if graph is not None else None
        if v is not None:
            return v.producer or (v.consumers[0] if v.consumers else None)
    return None


def _family(rule_id: str, rules: dict[str, type[Rule]]) -> str:
    from graphlint.registry import find_rule

    rule = rules.get(rule_id) or find_rule(rule_id)
    return rule.family_name() if rule is not None else FAMILIES.get(rule_id[:3], "other")


def _islands(res: LintResult, index: dict[tuple[str, str], Node], rules: dict[str, type[Rule]]) -> list[list[Node]]:
    """Connected groups of nodes with unsupported-op findings, largest first."""
    bad: dict[int, Node] = {}
    for f in res.findings:
        if f.suppressed or not f.node or _family(f.rule_id, rules) != UNSUPPORTED_FAMILY:
            continue
        n = index.get((f.location.graph_path, f.node))
        if n is not None:
            bad[id(n)] = n
    seen: set[int] = set()
    islands = []
    for n in bad.values():
        if id(n) in seen:
            continue
        comp, stack = [], [n]
        seen.add(id(n))
        while stack:
            m = stack.pop()
            comp.append(m)
            nbrs = [v.producer for v in m.inputs if v is not None and v.producer is not None]
            nbrs += [c for v in m.outputs for c in v.consumers]
            for k in nbrs:
                if id(k) in bad and id(k) not in seen:
                    seen.add(id(k))
                    stack.append(k)
        islands.append(sorted(comp, key=lambda x: x.index))
    islands.sort(key=lambda c: (-len(c), c[0].index))
    return islands


def _sev(s: Severity) -> str:
    return f'<span class="sev {s.label}">{s.label}</span>'


def _model_section(res: LintResult, k: int, budget: list[int], rules: dict[str, type[Rule]]) -> tuple[str, list[str]]:
    """The per-model section and its table rows."""
    index = _node_index(res)
    islands = _islands(res, index, rules)
    island_of: dict[int, int] = {id(n): i for i, comp in enumerate(islands) for n in comp}
    by_node: dict[int, list[Finding]] = defaultdict(list)
    subj: dict[int, Node | None] = {}
    port_styles: dict[str, Style] = {}
    port_worst: dict[str, Severity] = {}
    for f in res.findings:
        if f.suppressed:
            continue
        n = subj[id(f)] = _subject(f, index, res)
        if n is not None:
            by_node[id(n)].append(f)
        if not f.node and f.value:
            worst = max(f.severity, port_worst.get(f.value, Severity.INFO))
            port_worst[f.value] = worst
            port_styles[f.value] = Style(fill=SEV_FILL[worst], stroke=SEV_STROKE[worst], width=2.5,
                                         css=f"finding {worst.label}")
    styles: dict[int, Style] = {}
    for nid, fs in by_node.items():
        fs = [f for f in fs if f.node] or fs
        if not any(f.node for f in fs):
            continue  # only value findings: the value's port is coloured, not the node
        worst = max(f.severity for f in fs)
        styles[nid] = Style(fill=SEV_FILL[worst], stroke=SEV_STROKE[worst], width=1.8, css=f"finding {worst.label}",
                            note="; ".join(f"{f.rule_id} {f.rule_name}" for f in fs))
    for nid, i in island_of.items():
        st = styles.setdefault(nid, Style())
        st.fill = ISLAND_COLOURS[i % len(ISLAND_COLOURS)]
        st.css = (st.css + f" island island-{i + 1}").strip()
        st.note = (st.note + f"; unsupported island {i + 1}").lstrip("; ")

    m = res.model
    parts = [f'<section class="model" id="m{k}"><h2>{escape(m.path)} <span class="muted">→ '
             f"{escape(res.target.title)} ({escape(res.target.spec)}), {m.format}, "
             f"{res.stats.get('nodes', m.node_count)} nodes</span></h2>"]
    if islands:
        parts.append(f"<p>{len(islands)} unsupported island(s): connected nodes {escape(res.target.title)} cannot run."
                     '</p><ul class="islands">')
        for i, comp in enumerate(islands[:20]):
            ops = sorted({n.op_type for n in comp})
            parts.append(f'<li><span class="swatch" style="background:{ISLAND_COLOURS[i % len(ISLAND_COLOURS)]}">'
                         f"</span>island {i + 1}: {len(comp)} node(s) ({escape(', '.join(ops[:8]))}), from "
                         f"<code>{escape(comp[0].label)}</code></li>")
        parts.append("</ul>")
    visible = [f for f in res.findings if not f.suppressed]
    if not visible:
        parts.append('<p class="muted">No findings.</p>')
    rows: list[str] = []
    fig_of: dict[int, str] = {}
    figures: list[str] = []
    for f in visible:
        n = subj.get(id(f))
        anchor = ""
        if n is not None:
            if id(n) not in fig_of and budget[0] > 0:
                budget[0] -= 1
                fid = f"g{k}-{len(fig_of)}"
                fig_of[id(n)] = fid
                lines = "".join(f"<li>{_sev(x.severity)} <b>{escape(x.rule_id)}</b> {escape(x.message)}</li>"
                                for x in by_node[id(n)])
                figures.append(f'<figure id="{fid}"><figcaption><b>{escape(n.label)}</b> ({escape(n.op_type)}) '
                               f'<span class="muted">{escape(f.location.graph_path)}</span>{_origin(f)}<ul>{lines}</ul>'
                               f"</figcaption>{render_svg(n, styles, f'graph around {n.label}', port_styles)}"
                               "</figure>")
            if id(n) in fig_of:
                anchor = f' <a href="#{fig_of[id(n)]}">graph</a>'
        subject = f.node or (f"value {f.value}" if f.value else "model")
        fix = f"{escape(f.rewrite.name)}{'' if f.rewrite.safe else ' (unsafe)'}" if f.rewrite else ""
        rows.append(
            f'<tr data-sev="{f.severity.label}"><td>{_sev(f.severity)}</td>'
            f'<td><a href="{DOCS_URI}/rules/{escape(f.rule_id)}.md" title="{escape(f.rule_name)}">'
            f"{escape(f.rule_id)}</a></td><td><code>{escape(subject)}</code>{anchor}</td>"
            f"<td>{escape(f.op_type or '')}</td><td>{escape(m.path)}</td><td>{escape(f.target)}</td>"
            f'<td class="msg">{escape(f.message)}{_origin(f)}</td><td>{fix}</td></tr>'
        )
    if figures:
        parts.append('<div class="figs">' + "".join(figures) + "</div>")
    if len(fig_of) < len({id(n) for n in subj.values() if n is not None}):
        parts.append('<p class="muted">More findings than pictures: see the table for the rest.</p>')
    parts.append("</section>")
    return "".join(parts), rows


def _origin(f: Finding) -> str:
    """Where the finding's node came from in the model's code (graphlint.analysis.origins)."""
    if f.origin is None:
        return ""
    code = f' <code>{escape(f.origin.code)}</code>' if f.origin.code else ""
    return f'<div class="origin muted">{escape(f.origin.describe())}{code}</div>'


def render_html(run: Run, title: str = "graphlint report") -> str:
    c = run.counts()
    budget = [MAX_FIGURES]
    sections: list[str] = []
    rows: list[str] = []
    for k, res in enumerate(run.results):
        sec, r = _model_section(res, k, budget, {r.id: r for r in run.rules})
        sections.append(sec)
        rows.extend(r)
    suppressed = [f for f in run.findings(include_suppressed=True) if f.suppressed]
    cards = "".join(f'<div class="card {cls}"><b>{n}</b>{label}</div>' for cls, n, label in [
        ("error", c.get("error", 0), "errors"), ("warning", c.get("warning", 0), "warnings"),
        ("info", c.get("info", 0), "infos"), ("", c.get("suppressed", 0), "suppressed"),
        ("", len(run.results), "model × target runs"), ("error" if run.failures else "", len(run.failures),
                                                           "unreadable models")])
    models = sorted({res.model.path for res in run.results} | {f.path for f in run.failures})
    targets = sorted({res.target.spec for res in run.results})
    filt = "".join(f'<label><input type="checkbox" data-sev="{s}" checked> {s}</label>'
                   for s in ("error", "warning", "info"))
    body: list[Any] = [
        f"<header><h1>{escape(title)}</h1><div class='muted'>graphlint {__version__} · models: "
        f"{escape(', '.join(models)) or 'none'} · targets: {escape(', '.join(targets)) or 'none'}</div>"
        f'<div class="cards">{cards}</div><pre id="gl-errors"></pre></header><main>',
        '<section><h2>Findings</h2><div class="filters">' + filt +
        '<input type="search" id="gl-q" placeholder="filter: rule, node, message…">'
        '<span class="muted"><span id="gl-shown"></span> shown</span></div>'
        '<table id="gl-findings"><thead><tr><th>severity</th><th>rule</th><th>node</th><th>op</th><th>model</th>'
        "<th>target</th><th>message</th><th>fix</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        + ("" if rows else '<p class="muted">No findings.</p>') + "</section>",
        '<section class="legend"><b>Legend</b>: '
        + "".join(f'<span><span class="swatch" style="background:{SEV_FILL[s]};border-color:{SEV_STROKE[s]}">'
                  f"</span>{s.label}</span>" for s in (Severity.ERROR, Severity.WARNING, Severity.INFO))
        + f'<span><span class="swatch" style="background:{ISLAND_COLOURS[0]}"></span>unsupported island</span>'
        "<span>thick border: the node the finding is about</span></section>",
        *sections,
    ]
    if suppressed:
        body.append(f"<section><details><summary>{len(suppressed)} suppressed finding(s)</summary><table>"
                    "<thead><tr><th>rule</th><th>node</th><th>model</th><th>reason</th></tr></thead><tbody>"
                    + "".join(f"<tr><td>{escape(f.rule_id)}</td><td><code>{escape(f.node or f.value or 'model')}"
                              f"</code></td><td>{escape(f.model)}</td><td>{escape(f.suppressed or '')}</td></tr>"
                              for f in suppressed) + "</tbody></table></details></section>")
    if run.failures:
        body.append("<section><h2>Models that could not be read</h2><ul>"
                    + "".join(f"<li><code>{escape(x.path)}</code>: {escape(x.message)}</li>" for x in run.failures)
                    + "</ul></section>")
    if run.notes:
        body.append("<section><h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in run.notes)
                    + "</ul></section>")
    body.append("</main>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style><script>{SCRIPT}</script></head>"
            f"<body>{''.join(body)}</body></html>\n")
