"""The fleet dashboard (``graphlint scan --store fleet.db --report fleet.html``): offline HTML, no script.

``fleet.html`` holds the verdict counts per target, the rules that fail the most models and
the models sorted by errors; each model's row links to its own page, ``fleet_models/<id>.html``
beside it, with that model's findings per target as the store holds them (a page needs no
re-lint and no IR). Every file is written to a temporary file, then renamed.
"""

from __future__ import annotations

import datetime
import os
import re
from html import escape
from typing import Any

from graphlint import DOCS_URI, __version__
from graphlint.fsutil import atomic_write_text
from graphlint.scan.fleet import confirm_counts, model_id
from graphlint.scan.store import VERDICTS, Row

MAX_ROWS = 2000  # models listed on the dashboard (every model still has its page)
_SEVERITY = {"error": 0, "warning": 1, "info": 2}
_PAGE = re.compile(r"^[0-9a-f]{12}\.html$")

CSS = """
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; background: #f6f8fa; }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; overflow-wrap: anywhere; } h2 { font-size: 17px; margin: 4px 0 8px; }
.sub { color: #59636e; margin: 0 0 16px; }
section { background: #fff; border: 1px solid #d1d9e0; border-radius: 8px; padding: 12px 16px; margin-top: 14px; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #eaeef2; vertical-align: top; overflow-wrap: anywhere; }
th { font-weight: 600; color: #59636e; font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th.t { font-size: 11px; text-transform: none; }
.bar { display: flex; height: 14px; border-radius: 4px; overflow: hidden; background: #eaeef2; min-width: 120px; }
.bar span { display: block; height: 100%; }
.v { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; font-weight: 600; margin: 1px 2px 1px 0; white-space: nowrap; }
.failed { background: #6e4087; color: #fff; } .error { background: #cf222e; color: #fff; }
.warning { background: #d4a72c; color: #1f2328; } .clean { background: #1a7f37; color: #fff; }
.n\\/a, .na { background: #d1d9e0; color: #1f2328; } .info { background: #ddf4ff; color: #0969da; }
a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: 0 3px; border-radius: 3px; }
td.msg { font-size: 13px; }
.legend span { margin-right: 10px; }
"""


def _verdict(v: str) -> str:
    cls = "na" if v == "n/a" else v
    return f'<span class="v {cls}">{escape(v)}</span>'


def _last_scan(scan: dict[str, Any] | None) -> str:
    if not scan:
        return ""
    cut = " (interrupted)" if scan["interrupted"] else ""
    return (f" · last scan #{scan['id']} {escape(scan['started'])} on {escape(scan['executor'])}: {scan['linted']} "
            f"linted, {scan['reused']} from the store{cut}")


def _cell(target: dict[str, Any] | None) -> str:
    """A model's verdict for one target, with its error count."""
    if target is None:
        return ""
    n = target["error"] if target["verdict"] == "error" else target["warning"] if target["verdict"] == "warning" else 0
    tip = f' title="{escape(target["failure"])}"' if target.get("failure") else ""
    return f'<span{tip}>{_verdict(target["verdict"])}{f" {n}" if n else ""}</span>'


def _page(title: str, body: str) -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head>"
            f'<body data-ready="1"><main>{body}</main></body></html>\n')


def render_diff(d: dict[str, Any], pages: str) -> str:
    """The engine-upgrade section: the models whose verdict changes from ``before`` to ``after``."""
    rows = "".join(
        f'<tr class="change" data-direction="{c["direction"]}"><td><a href="{pages}/{c["id"]}.html">'
        f'{escape(c["path"])}</a></td><td>{_verdict(c["before"])} → {_verdict(c["after"])}</td>'
        f'<td class="msg">{_rule_counts(c["appear"], "+")}{_rule_counts(c["go_away"], "−")}</td></tr>'
        for c in d["changed"])
    table = (f'<table><colgroup><col><col style="width:190px"><col style="width:34%"></colgroup><tr><th>model</th>'
             f'<th>verdict</th><th>errors and warnings that appear (+) or go away (−)</th></tr>{rows}</table>'
             if d["changed"] else "")
    return (f'<section id="diff"><h2>Engine upgrade: <code>{escape(d["before"])}</code> → <code>{escape(d["after"])}'
            f'</code></h2><p class="sub">{d["compared"]} models compared: {d["worse"]} worse, {d["better"]} better, '
            f'{d["unchanged"]} unchanged.</p>{table}</section>')


def _rule_counts(findings: list[dict[str, Any]], sign: str) -> str:
    counts: dict[str, int] = {}
    for f in findings:
        if f["severity"] in ("error", "warning"):
            counts[f"{f['rule_id']} {f['severity']}"] = counts.get(f"{f['rule_id']} {f['severity']}", 0) + 1
    return "".join(f"<span>{sign} {escape(k)}{f' ×{n}' if n > 1 else ''}</span> " for k, n in sorted(counts.items()))


def _settled(c: dict[str, int] | None) -> str:
    """A model's findings confirmed and cleared on the engines (--confirm), over all its targets."""
    if c is None:
        return ""
    more = f", {c['contradicted']} contradicted" if c.get("contradicted") else ""
    return f"{c['confirmed']} / {c['cleared']}{more}"


def render_confirm(per_target: dict[str, dict[str, int]]) -> str:
    """What the engines settled per target (--confirm): models run and not, findings confirmed, cleared,
    contradicted, and failures no finding predicted."""
    heads = ("models run", "not run", "confirmed", "cleared", "contradicted", "unpredicted")
    keys = ("ran", "skipped", "confirmed", "cleared", "contradicted", "unpredicted")
    body = "".join(f'<tr data-target="{escape(t)}"><td><code>{escape(t)}</code></td>'
                   + "".join(f'<td class="num">{c[k]}</td>' for k in keys) + "</tr>"
                   for t, c in per_target.items())
    head = "".join(f'<th class="num">{h}</th>' for h in heads)
    return (f'<section id="confirm"><h2>Run on the engines (--confirm)</h2><p class="sub">Findings the installed '
            f'engines confirmed, cleared or contradicted, and failures no finding predicted (GL9101).</p>'
            f'<table><colgroup><col style="width:220px"></colgroup><tr><th>target</th>{head}</tr>{body}</table>'
            f'</section>')


def _confirm_line(r: Row) -> str:
    c = confirm_counts(r)
    if c is None:
        return ""
    if not c["ran"]:
        return f'<p class="sub confirm">not run on an engine: {escape(c["skipped"] or "no engine ran it")}</p>'
    return (f'<p class="sub confirm">run on {escape(", ".join(c["engines"]))}: {c["confirmed"]} confirmed, '
            f'{c["cleared"]} cleared, {c["contradicted"]} contradicted, {c["unpredicted"]} unpredicted</p>')


def render_dashboard(summary: dict[str, Any], title: str, pages: str, diff: dict[str, Any] | None = None) -> str:
    made = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    targets = summary["targets"]
    parts = [f"<h1>{escape(title)}</h1>",
             f'<p class="sub">{summary["models_total"]} models × {len(targets)} targets · graphlint {__version__} · '
             f"{made}{_last_scan(summary.get('last_scan'))}</p>"]
    colors = {"failed": "#6e4087", "error": "#cf222e", "warning": "#d4a72c", "clean": "#1a7f37", "n/a": "#d1d9e0"}
    rows = []
    for t in targets:
        counts = summary["verdicts"][t]
        total = sum(counts.values()) or 1
        bar = "".join(f'<span style="width:{100 * counts[v] / total:.2f}%;background:{colors[v]}" '
                      f'title="{counts[v]} {v}"></span>' for v in VERDICTS if counts[v])
        cells = "".join(f'<td class="num">{counts[v]}</td>' for v in VERDICTS)
        rows.append(f'<tr data-target="{escape(t)}"><td><code>{escape(t)}</code></td>{cells}'
                    f'<td><div class="bar">{bar}</div></td></tr>')
    head = "".join(f'<th class="num">{_verdict(v)}</th>' for v in VERDICTS)
    parts.append(f'<section id="verdicts"><h2>Verdicts per target</h2><table><colgroup><col style="width:220px">'
                 f'{"<col style=width:84px>" * len(VERDICTS)}<col></colgroup><tr><th>target</th>{head}<th>share</th>'
                 f'</tr>{"".join(rows)}</table></section>')
    if summary["failing_rules"]:
        cols = "".join(f'<th class="num t">{escape(t)}</th>' for t in targets)
        body = "".join(
            f'<tr data-rule="{escape(r["rule_id"])}"><td><a href="{DOCS_URI}/rules/{escape(r["rule_id"])}.md">'
            f'{escape(r["rule_id"])}</a> {escape(r["rule_name"])}</td><td class="num">{r["models"]}</td>'
            + "".join(f'<td class="num">{r["per_target"].get(t, 0)}</td>' for t in targets) + "</tr>"
            for r in summary["failing_rules"])
        parts.append(f'<section id="rules"><h2>Rules that fail the most models</h2><p class="sub">Models with at least '
                     f'one error of the rule, all targets and per target.</p><table><colgroup><col style="width:300px">'
                     f'</colgroup><tr><th>rule</th><th class="num">models</th>{cols}</tr>{body}</table></section>')
    if summary.get("confirm"):
        parts.append(render_confirm(summary["confirm"]))
    confirmed = bool(summary.get("confirm"))
    models = summary["models"][:MAX_ROWS]
    body = "".join(
        f'<tr class="model" data-verdict="{m["verdict"]}"><td><a href="{pages}/{m["id"]}.html">{escape(m["path"])}</a>'
        f'</td><td class="num">{m["errors"]}</td><td class="num">{m["warnings"]}</td>'
        + "".join(f"<td>{_cell(m['targets'].get(t))}</td>" for t in targets)
        + (f'<td class="confirm">{_settled(m.get("confirm"))}</td>' if confirmed else "") + "</tr>"
        for m in models)
    more = (f'<p class="sub">The first {MAX_ROWS} of {len(summary["models"])} models; every model has its page in '
            f'{escape(pages)}/.</p>' if len(summary["models"]) > MAX_ROWS else "")
    cols = "".join(f'<th class="t">{escape(t)}</th>' for t in targets)
    if diff is not None:
        parts.append(render_diff(diff, pages))
    if confirmed:
        cols += '<th class="t">confirmed / cleared</th>'
    parts.append(f'<section id="models"><h2>Models by errors</h2>{more}<table><colgroup><col>'
                 f'<col style="width:84px"><col style="width:100px">{"<col style=width:120px>" * len(targets)}'
                 f'{"<col style=width:130px>" if confirmed else ""}'
                 f'</colgroup><tr><th>model</th><th class="num">errors</th><th class="num">warnings</th>{cols}</tr>'
                 f'{body}</table></section>')
    return _page(title, "".join(parts))


def render_model(path: str, rows: list[Row], dashboard: str) -> str:
    parts = [f'<p><a href="../{escape(dashboard)}">← fleet</a></p><h1>{escape(path)}</h1>',
             f'<p class="sub">sha256 <code>{escape(rows[0].key.sha256[:16])}</code> · {escape(rows[0].format)} · '
             f"linted {escape(rows[0].linted_at)}</p>"]
    for r in rows:
        live = sorted((f for f in r.findings if not f.get("suppressed")), key=lambda f: _SEVERITY.get(f["severity"], 3))
        n = len(live)
        head = f'<h2>{_verdict(r.verdict)} <code>{escape(r.target)}</code> · {n} finding{"" if n == 1 else "s"}</h2>'
        if r.failure:
            head += f'<p class="sub">{escape(r.failure)}</p>'
        head += _confirm_line(r)
        body = "".join(
            f'<tr data-rule="{escape(f["rule_id"])}"><td>{_verdict(f["severity"])}</td><td><a href="{DOCS_URI}/rules/'
            f'{escape(f["rule_id"])}.md">{escape(f["rule_id"])}</a></td><td><code>{escape(f.get("node") or "")}</code>'
            f'</td><td class="msg">{escape(f["message"])}'
            + (f'<br><b>fix:</b> {escape(f["rewrite"].get("description") or f["rewrite"].get("name", ""))}'
               if f.get("rewrite") else "") + "</td></tr>"
            for f in live)
        table = (f'<table><colgroup><col style="width:90px"><col style="width:80px"><col style="width:22%"><col>'
                 f'</colgroup><tr><th>severity</th><th>rule</th><th>node</th><th>message</th></tr>{body}</table>'
                 if live else "")
        parts.append(f'<section class="target" data-target="{escape(r.target)}">{head}{table}</section>')
    return _page(path, "".join(parts))


def write_dashboard(path: str, summary: dict[str, Any], rows: list[Row], title: str,
                    diff: dict[str, Any] | None = None) -> int:
    """Write the dashboard at ``path`` and a page per model beside it; the number of pages."""
    stem = os.path.splitext(os.path.basename(path))[0]
    pages = f"{stem}_models"
    folder = os.path.join(os.path.dirname(os.path.abspath(path)), pages)
    os.makedirs(folder, exist_ok=True)
    by_model: dict[str, list[Row]] = {}
    for r in rows:
        by_model.setdefault(r.path, []).append(r)
    written = set()
    for model, mine in by_model.items():
        name = f"{model_id(model)}.html"
        atomic_write_text(os.path.join(folder, name), render_model(model, mine, os.path.basename(path)))
        written.add(name)
    for old in os.listdir(folder):  # pages of models no longer in view (only files named as ours)
        if _PAGE.match(old) and old not in written:
            os.unlink(os.path.join(folder, old))
    atomic_write_text(path, render_dashboard(summary, title, pages, diff))
    return len(written)
