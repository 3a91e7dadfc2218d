"""graphlint's pipeline verdicts on the VLM corpus against engine truth (docs/conformance.md, "Deployment folders").

Truth is what running each folder end to end did (testmodels/vlm/truth.json for the optimum-intel
folders, run with optimum-intel's own pipeline on OpenVINO; truth_hand.json for the hand exports, run
in ONNX Runtime and OpenVINO): a folder is *positive* when some image size fails or gives a wrong
result. graphlint's verdict is positive when it reports an error for the target. Healthy folders and
seeds are both scored; the held-out seeds (chosen before any rule was run on them, seeds.toml) are
scored apart.

    python -m testmodels.vlm.conformance [--heldout] [--json] [--confirm] [--jobs N]

``--confirm`` also runs each folder with ``graphlint.check(..., confirm=...)`` (the whole pipeline end to
end on the installed engines, graphlint.confirm.pipeline; the hand exports' ``openvino_1thread`` cases with
``INFERENCE_NUM_THREADS = 1``) and prints the static verdict, the confirm verdict and the truth per case,
with recall on the truth failures (``fails``: some run raised) and on the ``wrong`` ones (it ran, the
logits differ: no run-time failure to find).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TRUTH = HERE / "truth.json"
HAND_TRUTH = HERE / "truth_hand.json"
_RANK = ["ok", "wrong", "fails"]
# the hand exports' seed classes under the names the optimum-intel seeds (and issue 36) use
_CLASS = {"image_tokens": "image_token_count", "patch_merge_size": "merge_or_patch_size", "dtype_f16": "f16_vision"}
def verdict(runs: list[dict[str, Any]]) -> str:
    return max((r["outcome"] for r in runs), key=_RANK.index, default="ok")


@dataclass
class Case:
    id: str
    layout: str
    klass: str  # seed class, "healthy" for an unseeded folder
    heldout: bool
    truth: str  # ok | fails | wrong
    target: str
    errors: list[str] = field(default_factory=list)  # "GL8001 stage: message" of graphlint's errors
    warnings: int = 0
    engine: str = ""  # the truth's engine (hand exports: ort | openvino | openvino_1thread)
    confirm_errors: list[str] | None = None  # under --confirm: the errors after the end-to-end run
    confirm_note: str = ""  # what the end-to-end run did (engine, prompts run, failures), or why it did not run

    @property
    def positive(self) -> bool:
        return self.truth != "ok"

    @property
    def flagged(self) -> bool:
        return bool(self.errors)

    @property
    def confirmed(self) -> bool:
        return bool(self.confirm_errors)


def truth_entries() -> Iterator[dict[str, Any]]:
    """Every scored folder: {id, folder (Path, materialized seeds included), layout, class, heldout, truth, target}."""
    from testmodels.vlm import seeds

    if TRUTH.exists():
        doc = json.loads(TRUTH.read_text())
        known = {s["id"]: s for s in seeds.load()}
        for fid, e in sorted(doc["folders"].items()):
            yield {"id": fid, "base": e["folder"], "seed": known.get(e.get("seed") or ""), "layout": e["layout"],
                   "class": e.get("class") or "healthy", "heldout": bool(e.get("heldout")),
                   "truth": verdict(e["runs"]), "target": "openvino", "materialize": seeds.materialize,
                   "engine": "openvino"}
    if HAND_TRUTH.exists():
        from testmodels.vlm import hand_seeds

        doc = json.loads(HAND_TRUTH.read_text())
        classes = {s["id"]: s["class"] for s in hand_seeds.load_seeds()}
        for fid, e in sorted(doc.items()):
            if fid.startswith("_"):  # _meta: tolerances, engines, image sizes
                continue
            engines = sorted({r["engine"] for r in e["runs"]})
            for engine in engines:
                truth = verdict([r for r in e["runs"] if r["engine"] == engine])
                yield {"id": f"{fid}@{engine}", "base": f"hand/{e['base']}", "seed": fid if e.get("seed") else None,
                       "layout": "hand-" + e.get("exporter", ""),
                       "class": _CLASS.get(classes.get(fid, "healthy"), classes.get(fid, "healthy")),
                       "heldout": bool(e.get("heldout")), "truth": truth,
                       "target": "ort" if engine == "ort" else "openvino", "engine": engine,
                       "materialize": lambda seed, dest: Path(hand_seeds.materialize(seed, str(dest)))}


def score(cases: list[Case], flag: str = "flagged") -> dict[str, Any]:
    tp = sum(c.positive and getattr(c, flag) for c in cases)
    fp = sum(not c.positive and getattr(c, flag) for c in cases)
    fn = sum(c.positive and not getattr(c, flag) for c in cases)
    tn = sum(not c.positive and not getattr(c, flag) for c in cases)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None}


def _errors(report: Any) -> list[str]:
    out = [f"{f.rule_id} {f.node or ''}: {f.message[:160]}" for f in report.findings if f.severity.label == "error"]
    return out + [f"unreadable {x.path}: {x.message}" for x in report.failures]


def _confirm_note(report: Any) -> str:
    notes = []
    for p in report.pipelines:
        doc = getattr(p, "confirm", None) or {}
        if doc.get("skipped"):
            notes.append(f"not run: {doc['skipped']}")
            continue
        pts = doc.get("points", [])
        bad = [x for x in pts if not x.get("ok")]
        notes.append(f"{doc.get('engine')} ran {len(pts)} prompts, {len(bad)} failed"
                     + (f" ({bad[0].get('failed')}: {str(bad[0].get('error'))[:100]})" if bad else "")
                     + (f"; load: {doc['load_error'][:100]}" if doc.get("load_error") else ""))
    return "; ".join(notes) or "no pipeline"


def check_one(e: dict[str, Any], tmp: str, confirm: bool) -> Case:
    import graphlint

    folder = HERE / e["base"]
    if e["seed"] is not None:
        folder = e["materialize"](e["seed"], Path(tmp) / e["id"].replace("/", "_").replace("@", "_"))
    c = Case(e["id"], e["layout"], e["class"], e["heldout"], e["truth"], e["target"], engine=e.get("engine", ""))
    report = graphlint.check(str(folder), target=e["target"])
    c.errors = _errors(report)
    c.warnings = sum(f.severity.label == "warning" for f in report.findings)
    if confirm:
        settings: dict[str, Any] = {"compare": False, "bisect": False}
        if c.engine == "openvino_1thread":
            settings["openvino"] = {"INFERENCE_NUM_THREADS": 1}
        report = graphlint.check(str(folder), target=e["target"], confirm=settings)
        c.confirm_errors = _errors(report)
        c.confirm_note = _confirm_note(report)
        print(f"{c.id}: {c.confirm_note[:100]}", file=sys.stderr, flush=True)
    return c


def run(heldout: bool | None = None, confirm: bool = False, jobs: int = 1) -> list[Case]:
    entries = [e for e in truth_entries() if heldout is None or e["heldout"] == heldout]
    with tempfile.TemporaryDirectory(prefix="vlm-conformance-") as tmp:
        if jobs > 1:
            import multiprocessing

            with multiprocessing.get_context("spawn").Pool(jobs) as pool:
                return pool.starmap(_check_entry, [(e["id"], tmp, confirm) for e in entries])
        return [check_one(e, tmp, confirm) for e in entries]


def _check_entry(case_id: str, tmp: str, confirm: bool) -> Case:
    """check_one by case id (a worker process re-reads the truth entries: their materializers do not pickle)."""
    e = next(x for x in truth_entries() if x["id"] == case_id)
    return check_one(e, tmp, confirm)


def summary(cases: list[Case]) -> dict[str, Any]:
    per_class: dict[str, list[Case]] = {}
    for c in cases:
        per_class.setdefault(c.klass, []).append(c)
    healthy_ok = [c for c in cases if not c.positive]
    out = {
        "all": score(cases),
        "heldout": score([c for c in cases if c.heldout]),
        "seen": score([c for c in cases if not c.heldout]),
        "per_class": {k: score(v) for k, v in sorted(per_class.items())},
        "noise_median": statistics.median([len(c.errors) + c.warnings for c in healthy_ok]) if healthy_ok else None,
        "noise_max": max((len(c.errors) + c.warnings for c in healthy_ok), default=None),
    }
    run = [c for c in cases if c.confirm_errors is not None]
    if run:
        fails = [c for c in run if c.truth == "fails"]
        wrong = [c for c in run if c.truth == "wrong"]
        out["confirm"] = {
            "all": score(run, "confirmed"),
            "heldout": score([c for c in run if c.heldout], "confirmed"),
            "per_class": {k: score([c for c in v if c.confirm_errors is not None], "confirmed")
                          for k, v in sorted(per_class.items())},
            "per_class_static": {k: score([c for c in v if c.confirm_errors is not None])
                                 for k, v in sorted(per_class.items())},
            # recall on the positives that raise at run time, and on those that only give other logits
            "recall_fails": {"static": score(fails)["recall"], "confirm": score(fails, "confirmed")["recall"],
                             "n": len(fails)},
            "recall_wrong": {"static": score(wrong)["recall"], "confirm": score(wrong, "confirmed")["recall"],
                             "n": len(wrong)},
            "gained": [c.id for c in run if c.confirmed and not c.flagged],
            "lost": [c.id for c in run if c.flagged and not c.confirmed],
            "confirm_fp": [c.id for c in run if c.confirmed and not c.positive],
        }
    return out


def _mark(positive: bool, flagged: bool) -> str:
    return {(True, True): "TP", (False, True): "FP", (True, False): "FN", (False, False): "TN"}[(positive, flagged)]


def main(argv: list[str]) -> None:
    heldout = True if "--heldout" in argv else (False if "--seen" in argv else None)
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 1
    cases = run(heldout, confirm="--confirm" in argv, jobs=jobs)
    if "--json" in argv:
        print(json.dumps({"cases": [c.__dict__ for c in cases], "summary": summary(cases)}, indent=1, default=str))
        return
    for c in cases:
        line = f"{_mark(c.positive, c.flagged)} {c.id:45} {c.klass:22} truth={c.truth:6} held={int(c.heldout)} warn={c.warnings} "
        if c.confirm_errors is not None:
            line += f"confirm={_mark(c.positive, c.confirmed)} {c.confirm_note[:120]} | "
            errs = c.confirm_errors
        else:
            errs = c.errors
        print(line + (errs[0] if errs else ""))
    print(json.dumps(summary(cases), indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
