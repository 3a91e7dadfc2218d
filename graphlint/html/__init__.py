"""A single self-contained HTML report: summary, graph picture, findings by severity and rule.

The file works offline and can be attached to a ticket: CSS, the page's script and the layout
library (dagre, vendored from the npm registry under ``vendor/``, see ``vendor/manifest.json``)
are inlined, and the page data is a JSON block. Python does the linear work (statuses from the
findings, collapsing repeated blocks to a few hundred items, see :mod:`graphlint.html.collapse`);
the browser lays out and draws the collapsed graph.

Page sections, top to bottom: each deployment folder's pipeline (graphlint.html.pipeline: its stages
and edges drawn, each edge's contract and verdict per target, its findings); per model and target a
verdict, counts and the partition; the
collapsed graph coloured by what the selected target does with each node (with every target's
status in each node's chips); the targets side by side; the findings grouped by severity then
rule, with filters; suppressed findings, unreadable models, notes.
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources

from graphlint import __version__
from graphlint.html import sections
from graphlint.html.page import model_graph
from graphlint.html.status import STATUS_NAMES, NodeIndex, TargetView, target_view
from graphlint.ir import gc_paused
from graphlint.report import Run
from graphlint.rule import Finding

_STATIC = ("report.css", "report.js")
# Installed before any other script so that an error in the layout library is caught too.
_CATCH = "window.glErrors=[];addEventListener('error',function(e){glErrors.push(String(e.message||e));});"


def _asset(*parts: str) -> str:
    return resources.files("graphlint.html").joinpath(*parts).read_text(encoding="utf-8")


def layout_library() -> tuple[dict, str]:
    """The vendored layout library's manifest and its script, ready to inline."""
    manifest = json.loads(_asset("vendor", "manifest.json"))
    script = _asset("vendor", manifest["script"])
    # The source map is not shipped; a </script inside would end the inline element early.
    lines = [ln for ln in script.splitlines() if not ln.startswith("//# sourceMappingURL=")]
    return manifest, "\n".join(lines).replace("</script", "<\\/script")


def _json(data: object) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def _graph_section(k: int, views: list[TargetView], titles: list[str]) -> str:
    pick = "".join(f'<label><input type="radio" name="gl-t{k}" value="{t}"{" checked" if t == 0 else ""}> '
                   f"{escape(titles[t])}</label>" for t in range(len(views)))
    legend = "".join(f'<span><i class="sw st{s}"></i>{escape(name)}</span>' for s, name in enumerate(STATUS_NAMES))
    return (f'<section class="graph-section" data-model="{k}"><h3>Graph <span class="muted">(collapsed: repeated '
            "blocks folded; click a box for its findings and attributes)</span></h3>"
            f'<div class="toolbar"><span class="targets">{pick if len(views) > 1 else escape(titles[0])}</span>'
            '<button type="button" data-zoom="1.25">+</button><button type="button" data-zoom="0.8">−</button>'
            '<button type="button" data-zoom="fit">fit</button></div>'
            f'<div class="legend">{legend}<span><i class="sw island"></i>unsupported island</span>'
            '<span><i class="sw block"></i>folded block (×N: repeats)</span></div>'
            f'<div class="graph-wrap"><div class="graph" id="graph-{k}"><p class="muted">Drawing…</p></div>'
            f'<aside class="panel" id="panel-{k}"><p class="muted">Click a box to see its findings.</p></aside></div>'
            "</section>")


def render_html(run: Run, title: str = "graphlint report") -> str:
    # The models' IR is alive while the page data is built (a dict per drawn item, per node of a
    # model that can open its boxes): with the collector on, collections would rescan the IR.
    with gc_paused():
        return _render_html(run, title)


def _render_html(run: Run, title: str) -> str:
    rule_classes = {r.id: r for r in run.rules}
    specs: list[str] = []
    for res in run.results:
        if res.target.spec not in specs:
            specs.append(res.target.spec)
    titles = {res.target.spec: res.target.title for res in run.results}
    # Number every visible finding once: rows, graph items and panels refer to it by that number.
    visible: list[tuple[int, Finding, int, int]] = []
    ids: dict[int, int] = {}
    by_model: dict[int, list] = {}
    for res in run.results:
        by_model.setdefault(id(res.model), []).append(res)
    models = list(by_model.values())
    for k, results in enumerate(models):
        for res in results:
            for f in res.findings:
                if not f.suppressed:
                    ids[id(f)] = len(visible)
                    visible.append((len(visible), f, k, specs.index(res.target.spec)))
    rule_of = [f.rule_id for _, f, _, _ in visible]
    where: dict[int, tuple[int, int]] = {}
    data = {"targets": [titles[s] for s in specs], "statusNames": STATUS_NAMES, "models": []}
    body: list[str] = []
    for k, results in enumerate(models):
        index = NodeIndex(results[0].model)
        views = [target_view(res, index, ids, rule_classes) for res in results]
        for v in views:
            for i, fids in v.findings.items():
                for fid in fids:
                    where[fid] = (k, i)
        graph = model_graph(results[0].model, views)
        graph["targets"] = [specs.index(v.result.target.spec) for v in views]
        data["models"].append(graph)
        vt = [v.result.target.title for v in views]
        body.append(sections.model_summary(k, views) + sections.comparison(k, views, rule_of)
                    + _graph_section(k, views, vt))
    counts = run.counts()
    cards = "".join(f'<div class="card {cls}"><b>{n}</b>{label}</div>' for cls, n, label in [
        ("error", counts.get("error", 0), "errors"), ("warning", counts.get("warning", 0), "warnings"),
        ("info", counts.get("info", 0), "infos"), ("", counts.get("suppressed", 0), "suppressed"),
        ("error" if run.failures else "", len(run.failures), "unreadable models")])
    sev_filters = "".join(f'<label><input type="checkbox" data-sev="{s}" checked> {s}</label>'
                          for s in ("error", "warning", "info"))
    t_filters = "".join(f'<label><input type="checkbox" data-target="{t}" checked> {escape(titles[s])}</label>'
                        for t, s in enumerate(specs)) if len(specs) > 1 else ""
    many = len(models) + len(run.failures) > 1
    findings = sections.findings_section(visible, rule_classes, [titles[s] for s in specs], many, where)
    paths = sorted({res.model.path for res in run.results} | {f.path for f in run.failures})
    head = (f"<header><h1>{escape(title)}</h1><div class='muted'>graphlint {__version__} · "
            f"{len(paths)} model{'s' if len(paths) != 1 else ''} · targets: "
            f"{escape(', '.join(titles[s] for s in specs)) or 'none'}</div>"
            f'<div class="cards">{cards}</div><pre id="gl-errors"></pre></header>')
    if run.pipelines:  # deployment folders: drawn above the sections of their graphs
        from graphlint.html.pipeline import pipeline_sections

        body.insert(0, pipeline_sections(run.pipelines))
    main = [*body, '<section id="findings"><h2>Findings</h2><div class="filters">' + sev_filters + t_filters
            + '<input type="search" id="gl-q" placeholder="filter: rule, node, message…">'
            '<span class="muted"><span id="gl-shown"></span> shown</span></div>' + findings + "</section>",
            sections.suppressed_section([f for f in run.findings(include_suppressed=True) if f.suppressed])]
    if run.failures:
        main.append("<section><h2>Models that could not be read</h2><ul>" + "".join(
            f"<li><code>{escape(x.path)}</code>: {escape(x.message)}</li>" for x in run.failures) + "</ul></section>")
    if run.notes:
        main.append("<section><h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in run.notes)
                    + "</ul></section>")
    manifest, library = layout_library()
    credit = (f'<footer class="muted">Graph layout: {escape(manifest["name"])} {escape(manifest["version"])} '
              f'({escape(manifest["license"])} license), inlined.</footer>')
    css, script = (_asset("static", name) for name in _STATIC)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{css}</style><script>{_CATCH}</script></head><body>{head}<main>{''.join(main)}</main>"
            f'{credit}<script type="application/json" id="gl-data">{_json(data)}</script>'
            f"<script>{library}</script><script>{script}</script></body></html>\n")

