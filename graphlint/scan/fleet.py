"""What a fleet's stored rows say, as plain data for the text, JSON and HTML reports.

* :func:`summarize`: verdict counts per target, the rules that fail the most models, and the
  models sorted by errors (the dashboard, docs/scan.md); under --confirm, per target how many models
  the engines ran and how many findings they confirmed, cleared and contradicted.
* :func:`diff`: the models whose verdict changes between two targets (two versions of one
  engine: the engine-upgrade impact report), each with the findings that appear or go away.
  Findings of two targets are matched by their fingerprint (rule, model, subject, kind), which
  does not name the target.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from graphlint.scan.store import VERDICTS, Row

SCHEMA = "graphlint-fleet/1"
DIFF_SCHEMA = "graphlint-fleet-diff/1"
TOP_RULES = 20
RANK = {v: i for i, v in enumerate(VERDICTS)}  # lower is worse


def model_id(path: str) -> str:
    """A short stable name for a model's page and anchors."""
    return hashlib.sha256(path.encode()).hexdigest()[:12]


def _live(row: Row) -> list[dict[str, Any]]:
    return [f for f in row.findings if not f.get("suppressed")]


SETTLED = ("confirmed", "cleared", "contradicted", "unpredicted")


def confirm_records(row: Row) -> list[dict[str, Any]]:
    """The engine records of a row linted with --confirm (a deployment folder's: one per stage)."""
    rec = row.confirm
    if rec is None:
        return []
    return list(rec["stages"].values()) if "stages" in rec else [rec]


def confirm_counts(row: Row) -> dict[str, Any] | None:
    """What --confirm did for a row: whether the engine ran it (or why not) and how many findings it
    confirmed, cleared and contradicted, and how many failures no finding predicted; None: not confirmed."""
    if row.confirm is None:
        return None
    recs = confirm_records(row)
    ran = [r for r in recs if not r.get("skipped")]
    out: dict[str, Any] = {k: sum(r[k] for r in ran if isinstance(r.get(k), int)) for k in SETTLED}
    out["ran"] = bool(ran)
    out["engines"] = sorted({f"{r['engine']} {r['version']}" for r in ran if r.get("engine") and r.get("version")})
    skipped = [r["skipped"] for r in recs if r.get("skipped")]
    out["skipped"] = skipped[0] if skipped and not ran else None
    return out


def summarize(rows: Iterable[Row], scans: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``scans``: the store's scans (the last one is shown: when, where, how much it linted)."""
    rows = list(rows)
    targets = sorted({r.target for r in rows})
    verdicts = {t: dict.fromkeys(VERDICTS, 0) for t in targets}
    by_model: dict[str, dict[str, Row]] = defaultdict(dict)
    failing: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # rule -> target -> models
    names: dict[str, str] = {}
    confirm: dict[str, dict[str, int]] = {}  # target -> models run / skipped and findings settled (--confirm)
    for r in rows:
        verdicts[r.target][r.verdict] += 1
        cc = confirm_counts(r)
        if cc is not None:
            per = confirm.setdefault(r.target, dict.fromkeys(("ran", "skipped", *SETTLED), 0))
            per["ran" if cc["ran"] else "skipped"] += 1
            for k in SETTLED:
                per[k] += cc[k]
        by_model[r.path][r.target] = r
        for f in _live(r):
            if f["severity"] == "error":
                failing[f["rule_id"]][r.target].add(r.path)
                names[f["rule_id"]] = f["rule_name"]
    rules = sorted(({"rule_id": rid, "rule_name": names[rid],
                     "models": len(set().union(*per.values())),
                     "per_target": {t: len(m) for t, m in sorted(per.items())}}
                    for rid, per in failing.items()), key=lambda d: (-d["models"], d["rule_id"]))
    models = []
    for path, per in by_model.items():
        counts = Counter()
        for r in per.values():
            counts.update(r.counts)
        worst = min((r.verdict for r in per.values()), key=RANK.__getitem__)
        settled = {t: cc for t, r in sorted(per.items()) if (cc := confirm_counts(r)) is not None}
        models.append({
            "path": path, "id": model_id(path), "format": next(iter(per.values())).format, "verdict": worst,
            "errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"],
            "failed": sorted(t for t, r in per.items() if r.verdict == "failed"),
            "targets": {t: {"verdict": r.verdict, **r.counts, "failure": r.failure,
                            **({"confirm": settled[t]} if t in settled else {})} for t, r in sorted(per.items())},
            "confirm": {k: sum(c[k] for c in settled.values()) for k in SETTLED} if settled else None,
        })
    # Models graphlint could not lint first (nothing is known of them), then by errors.
    models.sort(key=lambda m: (not m["failed"], -m["errors"], -m["warnings"], m["path"]))
    return {"schema": SCHEMA, "targets": targets, "models_total": len(models), "verdicts": verdicts,
            "failing_rules": rules[:TOP_RULES], "models": models, "last_scan": scans[-1] if scans else None,
            "confirm": {t: confirm[t] for t in targets if t in confirm} or None}


def diff(rows: Iterable[Row], before: str, after: str) -> dict[str, Any]:
    """The models whose verdict for ``after`` differs from ``before``; ``changed`` worse first."""
    pairs: dict[str, dict[str, Row]] = defaultdict(dict)
    for r in rows:
        if r.target in (before, after):
            pairs[r.path][r.target] = r
    changed, only = [], {before: 0, after: 0}
    same = 0
    for path, per in sorted(pairs.items()):
        if len(per) < 2:
            only[next(iter(per))] += 1
            continue
        a, b = per[before], per[after]
        if a.verdict == b.verdict:
            same += 1
            continue
        fa = {f["fingerprint"]: f for f in _live(a)}
        fb = {f["fingerprint"]: f for f in _live(b)}
        changed.append({
            "path": path, "id": model_id(path), "before": a.verdict, "after": b.verdict,
            "direction": "worse" if RANK[b.verdict] < RANK[a.verdict] else "better",
            "appear": [_brief(fb[k]) for k in fb if k not in fa],
            "go_away": [_brief(fa[k]) for k in fa if k not in fb],
            "failure": {t: r.failure for t, r in ((before, a), (after, b)) if r.failure and r.status != "n/a"},
        })
    changed.sort(key=lambda c: (c["direction"] != "worse", c["path"]))
    return {"schema": DIFF_SCHEMA, "before": before, "after": after, "compared": same + len(changed),
            "unchanged": same, "worse": sum(c["direction"] == "worse" for c in changed),
            "better": sum(c["direction"] == "better" for c in changed), "only_in": only, "changed": changed}


def _brief(f: dict[str, Any]) -> dict[str, Any]:
    return {k: f.get(k) for k in ("rule_id", "rule_name", "severity", "node", "op_type", "message")}


def render_summary_text(s: dict[str, Any], top: int = 15) -> str:
    out = [f"{s['models_total']} model(s) in the store's view"]
    width = max([len(t) for t in s["targets"]] + [6])
    out.append(f"  {'target':<{width}}  " + "  ".join(f"{v:>7}" for v in VERDICTS))
    for t in s["targets"]:
        out.append(f"  {t:<{width}}  " + "  ".join(f"{s['verdicts'][t][v]:>7}" for v in VERDICTS))
    if s.get("confirm"):
        out.append("run on the engines (--confirm):")
        for t, c in s["confirm"].items():
            skipped = f", {c['skipped']} not run" if c["skipped"] else ""
            out.append(f"  {t}: {c['ran']} model(s) ran{skipped}; findings {c['confirmed']} confirmed, "
                       f"{c['cleared']} cleared, {c['contradicted']} contradicted; "
                       f"{c['unpredicted']} failure(s) no finding predicted")
    if s["failing_rules"]:
        out.append("rules that fail the most models:")
        for r in s["failing_rules"][:top]:
            per = ", ".join(f"{t} {n}" for t, n in r["per_target"].items())
            out.append(f"  {r['rule_id']} {r['rule_name']}: {r['models']} model(s) ({per})")
    worst = [m for m in s["models"] if m["errors"] or m["failed"]][:top]
    if worst:
        out.append("models with the most errors:")
        for m in worst:
            why = f", failed on {', '.join(m['failed'])}" if m["failed"] else ""
            out.append(f"  {m['path']}: {m['errors']} error(s), {m['warnings']} warning(s){why}")
    return "\n".join(out) + "\n"


def render_diff_text(d: dict[str, Any]) -> str:
    out = [f"{d['before']} -> {d['after']}: {d['compared']} model(s) compared, {d['worse']} worse, "
           f"{d['better']} better, {d['unchanged']} unchanged"]
    for t, n in d["only_in"].items():
        if n:
            out.append(f"  {n} model(s) have a row for {t} only (scan them for both targets to compare)")
    for c in d["changed"]:
        out.append(f"{c['path']}: {c['before']} -> {c['after']} ({c['direction']})")
        for f in c["appear"]:
            out.append(f"  + {f['severity']} {f['rule_id']} {f['node'] or ''}: {f['message']}")
        for f in c["go_away"]:
            out.append(f"  - {f['severity']} {f['rule_id']} {f['node'] or ''}: {f['message']}")
        for t, why in c["failure"].items():
            out.append(f"  ! {t}: {why}")
    return "\n".join(out) + "\n"
