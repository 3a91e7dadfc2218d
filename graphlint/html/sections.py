"""The page's static HTML: per-model summary, target comparison, findings grouped by severity and rule.

Everything a reader needs is plain HTML (readable with scripts off); the script only filters
rows and draws the graph. Rows carry ``data-*`` attributes the script and the tests read.
"""

from __future__ import annotations

import os
from html import escape

from graphlint import DOCS_URI
from graphlint.html.status import OK, STATUS_NAMES, TargetView
from graphlint.rule import Finding, Rule, Severity

ROWS_SHOWN = 40  # rows per rule group before "show all"
COMPARE_ROWS = 300
SEVERITIES = (Severity.ERROR, Severity.WARNING, Severity.INFO)
PLURAL = {Severity.ERROR: "Errors", Severity.WARNING: "Warnings", Severity.INFO: "Infos"}


def status_chip(st: int, text: str | None = None) -> str:
    return f'<span class="st st{st}">{escape(text if text is not None else STATUS_NAMES[st])}</span>'


def _count_chips(view: TargetView) -> str:
    return "".join(f'<span class="sev {s.label}">{view.counts.get(s.label, 0)} {s.label}</span>'
                   for s in SEVERITIES)


def _verdict(view: TargetView) -> str:
    title = escape(view.result.target.title)
    if view.errors:
        return (f'<span class="verdict bad">✗ {title}: will not {view.verb}</span>'
                f'<span class="muted"> ({view.errors} error{"s" if view.errors != 1 else ""})</span>')
    return f'<span class="verdict good">✓ {title}: expected to {view.verb}</span>'


def model_summary(k: int, views: list[TargetView]) -> str:
    """Verdict, counts, partition and top rules per target for one model."""
    res = views[0].result
    m = res.model
    nodes = res.stats.get("nodes", len(m.graph.nodes))
    rows = []
    for t, v in enumerate(views):
        pct = v.supported_pct
        isl = len(v.islands)
        top = ", ".join(f'<a href="#rule-{escape(r)}">{escape(r)}</a> ×{n}' for r, n in v.rules.most_common(4))
        more = f" and {len(v.rules) - 4} more" if len(v.rules) > 4 else ""
        rows.append(
            f'<tr data-target="{t}"><td>{_verdict(v)}<div class="muted">{escape(v.result.target.spec)}</div></td>'
            f"<td>{_count_chips(v)}</td>"
            f'<td><div class="bar" title="{pct}% supported"><span style="width:{pct}%"></span></div>'
            f"{pct}% of {len(m.graph.nodes)} nodes supported"
            f"{f', {isl} unsupported island' + ('s' if isl != 1 else '') if isl else ''}</td>"
            f"<td>{top}{more}</td></tr>")
    islands = "".join(_islands(k, t, v) for t, v in enumerate(views) if v.islands)
    return (f'<section class="model-summary" id="m{k}"><h2>{escape(os.path.basename(m.path))} '
            f'<span class="muted">{escape(m.path)} · {escape(m.format)} · {nodes} nodes (all graphs)</span></h2>'
            '<table class="verdicts"><colgroup><col style="width:30%"><col style="width:22%">'
            '<col style="width:26%"><col></colgroup><thead><tr><th>target</th><th>findings</th>'
            f"<th>partition (main graph)</th><th>most frequent rules</th></tr></thead><tbody>{''.join(rows)}"
            f"</tbody></table>{islands}</section>")


def _islands(k: int, t: int, v: TargetView) -> str:
    lis = []
    for n, comp in enumerate(v.islands[:12], 1):
        ops = sorted({x.op_type for x in comp})
        lis.append(f'<li><a href="#" class="show" data-model="{k}" data-target="{t}" data-node="{comp[0].index}">'
                   f"island {n}</a>: {len(comp)} node{'s' if len(comp) != 1 else ''} "
                   f"({escape(', '.join(ops[:6]))}{', …' if len(ops) > 6 else ''}), from "
                   f"<code>{escape(comp[0].label)}</code></li>")
    more = f"<li>… and {len(v.islands) - 12} more</li>" if len(v.islands) > 12 else ""
    return (f"<details><summary>Unsupported islands on {escape(v.result.target.title)} "
            f"({len(v.islands)}): connected nodes it cannot run, each a fallback partition or a plugin"
            f"</summary><ul class=\"islands\">{''.join(lis)}{more}</ul></details>")


def comparison(k: int, views: list[TargetView], rule_of: list[str]) -> str:
    """One row per flagged node, one column per target: where the targets differ comes first.
    ``rule_of[id]``: the rule of finding ``id``."""
    if len(views) < 2:
        return ""
    nodes = views[0].result.model.graph.nodes
    flagged = sorted({i for v in views for i in v.findings})
    rows = []
    for i in flagged:
        sts = [v.status.get(i, OK) for v in views]
        rows.append((len(set(sts)) == 1, -max(sts), i, sts))
    rows.sort()
    body = []
    for same, _, i, sts in rows[:COMPARE_ROWS]:
        n = nodes[i]
        cells = "".join(f"<td>{status_chip(s)} <span class=\"muted\">{escape(' '.join(sorted({rule_of[f] for f in v.findings.get(i, ())})))}</span></td>"
                        for s, v in zip(sts, views, strict=True))
        body.append(f'<tr class="{"same" if same else "differs"}"><td><a href="#" class="show" data-model="{k}" '
                    f'data-node="{i}"><code>{escape(n.label)}</code></a><div class="muted">{escape(n.op_type)}'
                    f"</div></td>{cells}</tr>")
    differ = sum(1 for r in rows if not r[0])
    more = f'<p class="muted">{len(rows) - COMPARE_ROWS} more nodes not listed.</p>' if len(rows) > COMPARE_ROWS else ""
    heads = "".join(f"<th>{escape(v.result.target.title)}</th>" for v in views)
    return (f'<details class="compare" open><summary>Targets side by side: {differ} of {len(rows)} flagged nodes '
            f'differ between targets</summary><table class="compare"><thead><tr><th>node</th>{heads}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>{more}</details>")


def findings_section(findings: list[tuple[int, Finding, int, int]], rules: dict[str, type[Rule]],
                     titles: list[str], many_models: bool, where: dict[int, tuple[int, int]]) -> str:
    """``findings``: (id, finding, model number, target number); ``where[id]``: (model, node index)."""
    parts = []
    anchored: set[str] = set()  # a rule reporting at two severities is anchored at the first
    for sev in SEVERITIES:
        mine = [x for x in findings if x[1].severity == sev]
        if not mine:
            continue
        by_rule: dict[str, list[tuple[int, Finding, int, int]]] = {}
        for x in mine:
            by_rule.setdefault(x[1].rule_id, []).append(x)
        groups = []
        for rule_id, rows in sorted(by_rule.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            rule = rules.get(rule_id)
            summary = escape(rule.summary()) if rule is not None else ""
            trs = "".join(_row(x, titles, many_models, where, hidden=n >= ROWS_SHOWN) for n, x in enumerate(rows))
            more = (f'<button type="button" class="more-btn">show all {len(rows)}</button>'
                    if len(rows) > ROWS_SHOWN else "")
            anchor = "" if rule_id in anchored else f' id="rule-{escape(rule_id)}"'
            anchored.add(rule_id)
            groups.append(
                f'<div class="rule-group"{anchor} data-rule="{escape(rule_id)}">'
                f'<h4><a href="{DOCS_URI}/rules/{escape(rule_id)}.md">{escape(rule_id)}</a> '
                f'{escape(rows[0][1].rule_name)} <span class="count">{len(rows)}</span></h4>'
                f'<p class="muted rule-summary">{summary}</p><table class="findings"><colgroup>'
                '<col class="c-where"><col></colgroup><tbody>' + trs + f"</tbody></table>{more}</div>")
        parts.append(f'<details class="sev-group {sev.label}" open><summary><span class="sev {sev.label}">'
                     f'{PLURAL[sev]}</span> <span class="count">{len(mine)}</span></summary>{"".join(groups)}</details>')
    return "".join(parts) or '<p class="muted">No findings.</p>'


def _row(x: tuple[int, Finding, int, int], titles: list[str], many_models: bool, where: dict[int, tuple[int, int]],
         hidden: bool) -> str:
    fid, f, _m, t = x
    subject = f.node or (f"value {f.value}" if f.value else "model")
    sub = [escape(f.op_type or "")] if f.op_type else []
    if len(titles) > 1:
        sub.append(f'<span class="tchip">{escape(titles[t])}</span>')
    if many_models:
        sub.append(escape(os.path.basename(f.model)))
    show = ""
    if fid in where:
        wm, wi = where[fid]
        show = f'<a href="#" class="show" data-model="{wm}" data-target="{t}" data-node="{wi}">show in graph</a>'
    fix = ""
    if f.rewrite is not None:
        kind = "safe" if f.rewrite.safe else "unsafe: changes results"
        desc = f": {escape(f.rewrite.description)}" if f.rewrite.description else ""
        fix = f'<div class="fix"><b>Fix</b> <code>{escape(f.rewrite.name)}</code> ({kind}){desc}</div>'
    return (f'<tr class="finding{" more" if hidden else ""}" id="f{fid}" data-sev="{f.severity.label}" '
            f'data-target="{t}"><td class="where"><code class="node">{escape(subject)}</code>'
            f'<div class="muted">{" · ".join(sub)}</div>{show}</td><td class="msg"><div class="text">'
            f"{escape(f.message)}</div>{fix}{origin(f)}</td></tr>")


def origin(f: Finding) -> str:
    """Where the node came from: the exporter's source origin when the finding has one
    (``Finding.origin``, from graphlint.analysis.origins), and where it sits in the model."""
    o = f.origin
    loc = f'<span class="muted">in the model: {escape(f.location.describe())}</span>'
    if o is None:
        return f'<div class="origin">{loc}</div>'
    code = f" <code>{escape(o.code)}</code>" if o.code else ""
    return f'<div class="origin"><b>Origin</b> {escape(o.describe())}{code} · {loc}</div>'


def suppressed_section(suppressed: list[Finding]) -> str:
    if not suppressed:
        return ""
    rows = "".join(f"<tr><td>{escape(f.rule_id)}</td><td><code>{escape(f.node or f.value or 'model')}</code></td>"
                   f'<td class="msg">{escape(os.path.basename(f.model))} · {escape(f.target)}</td>'
                   f'<td class="msg">{escape(f.suppressed or "")}</td></tr>' for f in suppressed)
    return (f'<section><details><summary>{len(suppressed)} suppressed finding(s)</summary><table class="plain">'
            "<thead><tr><th>rule</th><th>node</th><th>model · target</th><th>reason</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></details></section>")
