"""``--confirm`` against recorded engine truth: the real-model corpus and the ONNX backend node tests.

For each ONNX model and IR of the corpus (testmodels/corpus/, truth in truth.json) and each of
``ort`` / ``openvino`` (one target per run, as tests/test_conformance_corpus.py runs them):

* static: graphlint at its default settings (the corpus's ``lint_shapes`` where an entry has them),
  positive = an error finding, exactly as the existing conformance counts;
* confirm: the same with ``--confirm`` and the truth run's sizes given as a shape profile
  (min = opt = the declared-run shapes, max = the other-size run's), OpenVINO compiled as the truth
  compiled it (``INFERENCE_NUM_THREADS=1``, f32), fixed scalar inputs of the manifest (silero's
  sample rate) given as a one-value ``input_ranges``. Positive = an error finding after confirm.

Truth positive = the engine rejects the model or fails a run at either size (every recorded failure
is at a size given, so recall is measured on all of them). Every disagreement is listed with its
reason.

``--part node`` runs the ONNX backend node tests instead (tests/test_conformance_backend.py's
cases): truth = ONNX Runtime session creation / OpenVINO read + compile, as there, and also a run on
the case's own inputs (``input_<j>.pb``: "the model runs"); static = validity and target-support
errors, as there; confirm = the same families plus the runtime rules, both targets in one run
(no engine-vs-engine comparison). ``--limit N`` takes every k-th case (deterministic).

    python -m testmodels.corpus.confirm_conformance [--part all|base|heldout|pipeline|pipeline-heldout|node]
        [--json out.json] [--limit N] [--only ID,ID] [--record] [--rescore earlier.json]

``--record`` merges the scores (no per-model rows) into testmodels/corpus/confirm_results.json.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import sys
import time
from typing import Any

from testmodels.corpus.parts import PARTS

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "confirm_results.json")
OPENVINO_AS_TRUTH = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}
ORT_AS_TRUTH = {"intra_op_num_threads": 1, "inter_op_num_threads": 1}
NODE_FAMILIES = ["validity", "target-support"]


def _line(text: str, n: int = 300) -> str:
    return " ".join(text.split())[:n]


@functools.cache
def _truth() -> dict:
    from testmodels.corpus import truth

    return truth.load()["models"]


def confirm_options() -> Any:
    from graphlint.confirm.options import ConfirmOptions

    return ConfirmOptions(compare=False, bisect=False,
                          engines={"openvino": dict(OPENVINO_AS_TRUTH), "onnxruntime": dict(ORT_AS_TRUTH)})


def given_profiles(row: dict) -> dict[str, Any]:
    """The truth run's sizes as a profile per input: min = opt = declared, max = the other run's."""
    from graphlint.shapes_spec import Profile

    declared = row.get("shapes", {}).get("declared")
    other = row.get("shapes", {}).get("other")
    if not isinstance(declared, dict):
        return {}
    out = {}
    for name, shape in declared.items():
        alt = other.get(name, shape) if isinstance(other, dict) else shape
        # not min <= max in every dim where a manifest's second run is smaller (the profile is only
        # read for its corners here)
        out[name] = Profile(name, tuple(shape), tuple(shape), tuple(alt))
    return out


def fixed_values(entry: dict) -> tuple[dict[str, list[float]], list[str]]:
    """(input_ranges for the manifest's fixed numeric scalars, inputs whose fixed values cannot be given)."""
    ranges: dict[str, list[float]] = {}
    cannot: list[str] = []
    for name, value in (entry.get("values") or {}).items():
        flat = value if isinstance(value, list) else [value]
        if all(isinstance(v, bool) for v in flat) and len(set(flat)) == 1:
            ranges[name] = [float(flat[0]), float(flat[0])]  # use_cache_branch: the branch the pipeline takes
        elif all(isinstance(v, (int, float)) for v in flat) and len(set(flat)) == 1:
            ranges[name] = [float(flat[0]), float(flat[0])]
        else:
            cannot.append(name)
    return ranges, cannot


def _errors(res: Any) -> list[dict]:
    out = []
    for f in res.findings:
        if f.suppressed or f.severity.label != "error":
            continue
        c = f.properties.get("confirm") or {}
        out.append({"rule": f.rule_id, "node": f.node, "verdict": c.get("verdict"), "message": _line(f.message)})
    return out


def _lint(path: str, targets: list[str], rule_options: dict, confirm: Any = None, select: list[str] | None = None,
          ranges: dict | None = None) -> dict[str, dict]:
    from graphlint.config import target_with_options
    from graphlint.lint import LintOptions, lint_paths

    per_model = None
    if ranges:
        def per_model(_path, target):
            return target_with_options(target, {"input_ranges": dict(ranges)}), {}
    opts = LintOptions(targets=targets, rule_options=dict(rule_options), confirm=confirm, select=select or [],
                       per_model=per_model)
    run = lint_paths([path], opts)
    out: dict[str, dict] = {}
    for res in run.results:
        out[res.target.name] = {"errors": _errors(res), "confirm": getattr(res, "confirm", None)}
    for fail in run.failures:
        for t in targets:
            out[t] = {"errors": [{"rule": "unreadable", "node": None, "verdict": None, "message": _line(fail.message)}],
                      "confirm": None}
    return out


def _confirm_lint(path: str, targets: list[str], rule_options: dict, select: list[str] | None = None,
                  ranges: dict | None = None) -> dict[str, dict]:
    """:func:`_lint` with confirm on; graphlint raising is recorded (as a skip with where it raised),
    never taken as a verdict."""
    try:
        return _lint(path, targets, rule_options, confirm_options(), select=select, ranges=ranges)
    except Exception as e:
        import traceback

        tb = traceback.extract_tb(e.__traceback__)[-3:]
        note = {"skipped": f"graphlint raised {type(e).__name__}: {_line(str(e), 160)}",
                "crash": [f"{os.path.relpath(f.filename)}:{f.lineno}" for f in tb]}
        return {t: {"errors": [], "confirm": note} for t in targets}


def _engine_error(rec: dict) -> str:
    return next((f"{k}: {rec[k]}" for k in ("load", "read", "compile", "run", "run_alt")
                 if rec.get(k) and rec[k] not in ("not run", "same shape")), "")


def _size(rec: dict) -> str:
    for k, what in (("load", "load"), ("read", "load"), ("compile", "load"), ("run", "declared"),
                    ("run_alt", "other")):
        if rec.get(k) and rec[k] not in ("not run", "same shape"):
            return what
    return ""


def judge(m: Any) -> dict:
    """Static and confirm verdicts of one corpus model on each of its targets (runs in a worker)."""
    from graphlint.shapes_spec import parse_profiles

    row = _truth().get(m.id)
    out: dict = {"id": m.id, "format": m.format, "source": m.source, "heldout": m.heldout,
                 "pipeline": m.entry.get("name") if m.source == "pipeline" else None, "targets": {}}
    if row is None:
        out["missing_truth"] = True
        return out
    static_opts = {"shapes": parse_profiles(m.entry["lint_shapes"])} if m.entry.get("lint_shapes") else {}
    ranges, cannot = fixed_values(m.entry)
    given = {"shapes": given_profiles(row)}
    for target in (["ort", "openvino"] if m.format == "onnx" else ["openvino"]):
        rec = row.get(target)
        if not rec:
            continue
        t0 = time.perf_counter()
        static = _lint(m.path, [target], static_opts).get(target, {"errors": []})
        t1 = time.perf_counter()
        conf = _confirm_lint(m.path, [target], given, ranges=ranges).get(target, {"errors": []})
        t2 = time.perf_counter()
        out["targets"][target] = {
            "truth": rec["verdict"], "truth_error": _line(_engine_error(rec)), "truth_size": _size(rec),
            "static": static["errors"], "confirm_errors": conf["errors"], "confirm": conf.get("confirm"),
            "unfed_values": cannot, "seconds": {"static": round(t1 - t0, 2), "confirm": round(t2 - t1, 2)},
        }
    return out


def _crashed_model(m: Any) -> dict:
    return {"id": m.id, "format": m.format, "source": m.source, "heldout": m.heldout, "crashed": True, "targets": {}}


# --------------------------------------------------------------------------- scoring


def _cell(tp=0, fp=0, fn=0, tn=0) -> dict:
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn}


def _pr(c: dict) -> dict:
    p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 1.0
    r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
    return {**c, "precision": round(p, 4), "recall": None if r is None else round(r, 4)}


def _add(c: dict, positive: bool, ours: bool) -> str:
    key = ("tp" if ours else "fn") if positive else ("fp" if ours else "tn")
    c[key] += 1
    return key


def _confirm_made(errors: list[dict]) -> list[dict]:
    """The errors confirm itself produced: the runtime rules', and findings an engine run confirmed."""
    return [e for e in errors if e["rule"].startswith("GL91") or e["verdict"] == "confirmed"]


def skip_reason(note: Any) -> str:
    if not isinstance(note, dict):
        return "no confirm record"
    return note.get("skipped", "")


def score(rows: list[dict]) -> dict:
    """Per target: static and confirm TP/FP/FN/TN, the cases confirm got wrong, the misses it caught,
    the models confirm could not run."""
    out: dict = {}
    for target in ("ort", "openvino"):
        st, cf, own = _cell(), _cell(), _cell()
        wrong, caught, unfed, by_format = [], [], [], collections.defaultdict(lambda: {"static": _cell(),
                                                                                      "confirm": _cell()})
        for r in rows:
            t = r["targets"].get(target)
            if t is None:
                continue
            positive = t["truth"] != "accepts"
            s_key = _add(st, positive, bool(t["static"]))
            c_key = _add(cf, positive, bool(t["confirm_errors"]))
            _add(own, positive, bool(t["static"]) or bool(_confirm_made(t["confirm_errors"])))
            _add(by_format[r["format"]]["static"], positive, bool(t["static"]))
            _add(by_format[r["format"]]["confirm"], positive, bool(t["confirm_errors"]))
            skipped = skip_reason(t["confirm"])
            if skipped:
                unfed.append({"model": r["id"], "reason": skipped})
            if c_key in ("fp", "fn"):
                wrong.append({"model": r["id"], "kind": "false positive" if c_key == "fp" else "false negative",
                              "rules": sorted({e["rule"] for e in t["confirm_errors"]}),
                              "by_confirm": bool(_confirm_made(t["confirm_errors"])),
                              "truth": t["truth"], "truth_error": t["truth_error"],
                              "confirm_errors": t["confirm_errors"][:3], "confirm": t["confirm"]})
            if s_key == "fn" and c_key == "tp":
                caught.append({"model": r["id"], "truth": t["truth"], "size": t["truth_size"],
                               "engine": t["truth_error"],
                               "reported_by": [{"rule": e["rule"], "verdict": e["verdict"], "message": e["message"]}
                                               for e in t["confirm_errors"]]})
        out[target] = {"static": _pr(st), "confirm": _pr(cf), "confirm_own": _pr(own), "disagreements": wrong,
                       "caught": caught,
                       "not_run": unfed, "by_format": {k: {"static": _pr(v["static"]), "confirm": _pr(v["confirm"])}
                                                       for k, v in sorted(by_format.items())}}
    return out


# --------------------------------------------------------------------------- backend node tests


def _case_inputs(path: str) -> dict | None:
    """The case's own inputs by graph input name (None: a sequence / optional / map input)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    names = [vi for vi in model.graph.input if vi.name not in inits]
    feeds = {}
    folder = os.path.dirname(path)
    for j, vi in enumerate(names):
        f = os.path.join(folder, f"input_{j}.pb")
        if not os.path.exists(f):
            return None
        if not vi.type.HasField("tensor_type"):
            return None
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        feeds[vi.name] = np.asarray(numpy_helper.to_array(t))
    return feeds


def _node_truth(path: str) -> dict:
    from testmodels.engines import ort_session

    out: dict = {}
    feeds = _case_inputs(path)
    try:
        sess = ort_session(path)
        out["ort"] = None
        if feeds is not None:
            try:
                sess.run(None, feeds)
                out["ort_run"] = None
            except Exception as e:
                out["ort_run"] = _line(str(e), 250)
    except Exception as e:
        out["ort"] = _line(str(e), 250)
    try:
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(core.read_model(path), "CPU", {k: str(v) for k, v in OPENVINO_AS_TRUTH.items()})
        out["openvino"] = None
        if feeds is not None:
            try:
                compiled.infer_new_request({k: v for k, v in feeds.items() if v.dtype.kind != "O"})
                out["openvino_run"] = None
            except Exception as e:
                out["openvino_run"] = _line(str(e), 250)
    except Exception as e:
        out["openvino"] = _line(str(e), 250)
    return out


def judge_node(path: str) -> dict:
    from testmodels.node_cases import case_name

    out: dict = {"case": case_name(path), "truth": _node_truth(path)}
    static = _lint(path, ["ort", "openvino"], {}, select=NODE_FAMILIES)
    conf = _confirm_lint(path, ["ort", "openvino"], {}, select=[*NODE_FAMILIES, "runtime"])
    for t in ("ort", "openvino"):
        out[t] = {"static": static.get(t, {}).get("errors", []), "confirm_errors": conf.get(t, {}).get("errors", []),
                  "confirm": conf.get(t, {}).get("confirm")}
    return out


def _crashed_node(path: str) -> dict:
    from testmodels.node_cases import case_name

    return {"case": case_name(path), "crashed": True, "truth": {"ort": "process crashed", "openvino": "process crashed"},
            "ort": {"static": [], "confirm_errors": [], "confirm": None},
            "openvino": {"static": [], "confirm_errors": [], "confirm": None}}


def score_node(rows: list[dict]) -> dict:
    out: dict = {}
    for target in ("ort", "openvino"):
        st, cf = _cell(), _cell()
        wrong, runs_but_error, unfed = [], [], collections.Counter()
        for r in rows:
            positive = r["truth"].get(target) is not None
            t = r[target]
            _add(st, positive, bool(t["static"]))
            key = _add(cf, positive, bool(t["confirm_errors"]))
            skipped = skip_reason(t["confirm"])
            if skipped:
                unfed[skipped.split(":")[0] if "cannot feed" in skipped else skipped[:80]] += 1
            if key in ("fp", "fn"):
                wrong.append({"case": r["case"], "kind": "false positive" if key == "fp" else "false negative",
                              "engine": r["truth"].get(target), "engine_run_on_case_data": r["truth"].get(f"{target}_run",
                                                                                                      "not run"),
                              "confirm_errors": t["confirm_errors"][:2],
                              "points": [(p["label"], p["ok"]) for p in (t["confirm"] or {}).get("points", [])]})
                if key == "fp" and r["truth"].get(f"{target}_run", "x") is None:
                    runs_but_error.append(r["case"])
        out[target] = {"static": _pr(st), "confirm": _pr(cf), "disagreements": wrong,
                       "error_on_a_model_that_runs_on_its_data": runs_but_error, "not_run": dict(unfed)}
    return out


# --------------------------------------------------------------------------- driver


def run_corpus(part: str, only: list[str] | None = None, jobs: int = 2) -> list[dict]:
    from testmodels.corpus.build import corpus
    from testmodels.pool import isolated_map

    models = [m for m in corpus() if PARTS[part](m) and (not only or m.id in only)]
    # the big ones first, so that no long model ends up alone at the tail
    models.sort(key=lambda m: -os.path.getsize(m.path))
    done = isolated_map(judge, models, key=lambda m: m.id, on_crash=_crashed_model, jobs=jobs, chunk=2)
    return sorted(done.values(), key=lambda r: r["id"])


def run_nodes(limit: int | None = None, jobs: int = 2) -> tuple[list[dict], str]:
    from testmodels.node_cases import case_name, model_paths
    from testmodels.pool import isolated_map

    files = model_paths()
    subset = f"all {len(files)} cases"
    if limit and limit < len(files):
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
        subset = f"every {step:.2f}-th case by name ({len(files)})"
    files.sort(key=lambda p: "attention" not in p)
    done = isolated_map(judge_node, files, key=case_name, on_crash=_crashed_node, jobs=jobs, chunk=8)
    return sorted(done.values(), key=lambda r: r["case"]), subset


def _print_corpus(part: str, rows: list[dict], sc: dict) -> None:
    print(f"{len(rows)} models of part {part!r}")
    for target, s in sc.items():
        for kind in ("static", "confirm", "confirm_own"):
            c = s[kind]
            print(f"  {target:9} {kind:11} tp {c['tp']:3} fp {c['fp']:3} fn {c['fn']:3} tn {c['tn']:3}  "
                  f"P {c['precision']:.3f} R {c['recall'] if c['recall'] is not None else '-'}")
        for w in s["disagreements"]:
            why = w["confirm_errors"][0]["rule"] + ": " + w["confirm_errors"][0]["message"][:200] \
                if w["confirm_errors"] else f"truth {w['truth']}: {w['truth_error'][:160]} | confirm {w['confirm']}"
            print(f"    {w['kind']}: {w['model']}: {why}")
        for c in s["caught"]:
            print(f"    caught (static miss): {c['model']} at {c['size']}: {[e['rule'] for e in c['reported_by']]}")
        for u in s["not_run"]:
            print(f"    not run: {u['model']}: {u['reason'][:160]}")


def main(argv: list[str]) -> int:
    t0 = time.time()
    part = argv[argv.index("--part") + 1] if "--part" in argv else "all"
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else None
    limit = int(argv[argv.index("--limit") + 1]) if "--limit" in argv else None
    cpu0 = os.times()
    if part == "node":
        rows, subset = run_nodes(limit)
        sc = score_node(rows)
        print(f"{len(rows)} node-test cases ({subset})")
        for target, s in sc.items():
            for kind in ("static", "confirm"):
                c = s[kind]
                print(f"  {target:9} {kind:8} tp {c['tp']:4} fp {c['fp']:3} fn {c['fn']:3} tn {c['tn']:4}  "
                      f"P {c['precision']:.3f} R {c['recall']}")
            for w in s["disagreements"]:
                print(f"    {w['kind']}: {w['case']}: {w['confirm_errors'][:1] or w['engine']} "
                      f"(case data run: {w['engine_run_on_case_data']})")
            print(f"    not run: {s['not_run']}")
        doc: dict = {"part": "node", "subset": subset, "cases": len(rows), "score": sc}
    else:
        if "--rescore" in argv:  # score the rows of an earlier --json run again (no engine run)
            with open(argv[argv.index("--rescore") + 1]) as f:
                rows = json.load(f)["rows"]
        else:
            rows = run_corpus(part, only)
        sc = {}
        for name, pred in PARTS.items():
            if name == "all" or part in ("all", name) or (part == "base" and name == "heldout") or \
                    (part == "pipeline" and name == "pipeline-heldout"):
                sub = [r for r in rows if pred(_RowModel(r))]
                if sub:
                    sc[name] = score(sub)
        for name, s in sc.items():
            _print_corpus(name, [r for r in rows if PARTS[name](_RowModel(r))], s)
        doc = {"part": part, "models": len(rows), "score": sc,
               "rows": [{k: v for k, v in r.items()} for r in rows]}
    cpu1 = os.times()
    doc["wall_seconds"] = round(time.time() - t0, 1)
    doc["cpu_seconds"] = round(sum(cpu1[:4]) - sum(cpu0[:4]), 1)
    print(f"wall {doc['wall_seconds']} s, cpu {doc['cpu_seconds']} s (with children)")
    if "--record" in argv:  # the small summary committed beside truth.json
        _record(doc)
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True, default=str)
    return 0


def compact(doc: dict) -> dict:
    """The scores and one line per disagreement (what confirm_results.json keeps)."""
    cells = ("static", "confirm", "confirm_own")

    def target(t: dict) -> dict:
        out = {k: t[k] for k in cells if k in t}
        out["disagreements"] = [
            " | ".join(str(x) for x in (w.get("model") or w.get("case"), w["kind"],
                                         ",".join(sorted({e["rule"] for e in w["confirm_errors"]})) or "-",
                                         (w["confirm_errors"][0]["message"] if w["confirm_errors"]
                                          else w.get("truth_error") or w.get("engine") or "")[:160]))
            for w in t["disagreements"]]
        if "caught" in t:
            out["caught"] = [f"{c['model']} | {c['size']} | {','.join(e['rule'] for e in c['reported_by'])}"
                             for c in t["caught"]]
        nr = t.get("not_run", [])
        out["not_run"] = nr if isinstance(nr, dict) else [f"{u['model']} | {u['reason'][:120]}" for u in nr]
        return out

    score = doc["score"]
    if doc["part"] == "node":
        scores = {t: target(v) for t, v in score.items()}
    else:
        scores = {part: {t: target(v) for t, v in per.items()} for part, per in score.items()}
    return {k: v for k, v in doc.items() if k not in ("rows", "score")} | {"score": scores}


def _record(doc: dict) -> None:
    """Merge this run's scores (no per-model rows) into confirm_results.json under its part."""
    from graphlint.fsutil import atomic_write_text
    from testmodels.corpus import truth

    try:
        with open(RESULTS, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError):
        saved = {}
    saved["versions"] = {k: v for k, v in truth.versions().items() if k in ("onnx", "onnxruntime", "openvino")}
    saved[doc["part"]] = compact(doc)
    atomic_write_text(RESULTS, json.dumps(saved, indent=1, sort_keys=True, default=str) + "\n")


class _RowModel:
    """A result row seen as a corpus Model for the PARTS predicates."""

    def __init__(self, row: dict) -> None:
        self.source, self.heldout = row["source"], row["heldout"]


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
    sys.exit(main(sys.argv))
