"""graphlint's pipeline verdicts on the VLM corpus against engine truth (docs/conformance.md, "Deployment folders").

Truth is what running each folder end to end did (testmodels/vlm/truth.json for the optimum-intel
folders, run with optimum-intel's own pipeline on OpenVINO; truth_hand.json for the hand exports, run
in ONNX Runtime and OpenVINO): a folder is *positive* when some image size fails or gives a wrong
result. graphlint's verdict is positive when it reports an error for the target. Healthy folders and
seeds are both scored; the held-out seeds (chosen before any rule was run on them, seeds.toml) are
scored apart.

    python -m testmodels.vlm.conformance [--heldout] [--json]
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

    @property
    def positive(self) -> bool:
        return self.truth != "ok"

    @property
    def flagged(self) -> bool:
        return bool(self.errors)


def truth_entries() -> Iterator[dict[str, Any]]:
    """Every scored folder: {id, folder (Path, materialized seeds included), layout, class, heldout, truth, target}."""
    from testmodels.vlm import seeds

    if TRUTH.exists():
        doc = json.loads(TRUTH.read_text())
        known = {s["id"]: s for s in seeds.load()}
        for fid, e in sorted(doc["folders"].items()):
            yield {"id": fid, "base": e["folder"], "seed": known.get(e.get("seed") or ""), "layout": e["layout"],
                   "class": e.get("class") or "healthy", "heldout": bool(e.get("heldout")),
                   "truth": verdict(e["runs"]), "target": "openvino", "materialize": seeds.materialize}
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
                       "target": "ort" if engine == "ort" else "openvino",
                       "materialize": lambda seed, dest: Path(hand_seeds.materialize(seed, str(dest)))}


def score(cases: list[Case]) -> dict[str, Any]:
    tp = sum(c.positive and c.flagged for c in cases)
    fp = sum(not c.positive and c.flagged for c in cases)
    fn = sum(c.positive and not c.flagged for c in cases)
    tn = sum(not c.positive and not c.flagged for c in cases)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None}


def run(heldout: bool | None = None) -> list[Case]:
    import graphlint

    cases = []
    with tempfile.TemporaryDirectory(prefix="vlm-conformance-") as tmp:
        for e in truth_entries():
            if heldout is not None and e["heldout"] != heldout:
                continue
            folder = HERE / e["base"]
            if e["seed"] is not None:
                folder = e["materialize"](e["seed"], Path(tmp) / e["id"].replace("/", "_"))
            report = graphlint.check(str(folder), target=e["target"])
            c = Case(e["id"], e["layout"], e["class"], e["heldout"], e["truth"], e["target"])
            for f in report.findings:
                if f.severity.label == "error":
                    c.errors.append(f"{f.rule_id} {f.node or ''}: {f.message[:160]}")
                elif f.severity.label == "warning":
                    c.warnings += 1
            if report.failures:
                c.errors.extend(f"unreadable {x.path}: {x.message}" for x in report.failures)
            cases.append(c)
    return cases


def summary(cases: list[Case]) -> dict[str, Any]:
    per_class: dict[str, list[Case]] = {}
    for c in cases:
        per_class.setdefault(c.klass, []).append(c)
    healthy_ok = [c for c in cases if not c.positive]
    return {
        "all": score(cases),
        "heldout": score([c for c in cases if c.heldout]),
        "seen": score([c for c in cases if not c.heldout]),
        "per_class": {k: score(v) for k, v in sorted(per_class.items())},
        "noise_median": statistics.median([len(c.errors) + c.warnings for c in healthy_ok]) if healthy_ok else None,
        "noise_max": max((len(c.errors) + c.warnings for c in healthy_ok), default=None),
    }


def main(argv: list[str]) -> None:
    heldout = True if "--heldout" in argv else (False if "--seen" in argv else None)
    cases = run(heldout)
    if "--json" in argv:
        print(json.dumps({"cases": [c.__dict__ for c in cases], "summary": summary(cases)}, indent=1, default=str))
        return
    for c in cases:
        mark = {(True, True): "TP", (False, True): "FP", (True, False): "FN", (False, False): "TN"}[(c.positive, c.flagged)]
        print(f"{mark} {c.id:45} {c.klass:22} truth={c.truth:6} held={int(c.heldout)} warn={c.warnings} "
              f"{c.errors[0] if c.errors else ''}")
    print(json.dumps(summary(cases), indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
