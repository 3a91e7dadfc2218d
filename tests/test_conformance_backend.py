"""graphlint's target-support verdicts vs the real engines on every ONNX backend node test case.

Each model of ``onnx.backend.test.case.node.collect_testcases()`` (about 1,900) is loaded in
onnxruntime (CPU session creation) and in OpenVINO (read + compile on CPU); "the engine
rejects it" is compared with "graphlint reports an error" for ``--target ort`` and
``--target openvino``. Positive = rejected. Precision and recall must both be >= 0.95.

Run as a script to print the numbers and every disagreement (docs/conformance.md):

    .venv/bin/python tests/test_conformance_backend.py [--json out.json]
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

# Rule families whose errors mean "will not load": validity (GL0xxx) and target support (GL1xx).
# Drift, shape and contract families flag models that load but misbehave; they are not part of
# the load/no-load comparison.
FAMILIES = ["validity", "target-support"]
TARGETS = ("ort", "openvino")
BAR = 0.95


def case_folder() -> str:
    from testmodels.node_cases import case_folder as folder

    return folder()


_core = None


def _ov_core():
    global _core
    if _core is None:
        import openvino as ov

        _core = ov.Core()
    return _core


def _first(e: BaseException) -> str:
    return " ".join(str(e).split())[:400]


def judge(path: str) -> dict:
    """Both engines' verdicts and graphlint's, for one model (runs in a worker process)."""
    from graphlint.lint import LintOptions, lint_paths
    from testmodels.engines import ort_session
    from testmodels.node_cases import case_name

    out: dict = {"case": case_name(path)}
    try:
        ort_session(path)
        out["ort"] = None
    except Exception as e:
        out["ort"] = _first(e)
    try:
        core = _ov_core()
        core.compile_model(core.read_model(path), "CPU", {"INFERENCE_NUM_THREADS": 1})
        out["openvino"] = None
    except Exception as e:
        out["openvino"] = _first(e)
    run = lint_paths([path], LintOptions(targets=list(TARGETS), select=FAMILIES))
    for res in run.results:
        errs = [f"{f.rule_id}: {f.message}" for f in res.findings if f.severity.label == "error" and not f.suppressed]
        out[f"gl_{res.target.name}"] = errs
    if run.failures:
        for t in TARGETS:
            out[f"gl_{t}"] = [f"load failure: {run.failures[0].message}"]
    return out


@dataclass
class Score:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def score(rows: list[dict], target: str) -> tuple[Score, list[dict]]:
    s = Score(0, 0, 0, 0)
    wrong = []
    for r in rows:
        engine, ours = r[target] is not None, bool(r[f"gl_{target}"])
        if engine and ours:
            s.tp += 1
        elif ours:
            s.fp += 1
            wrong.append({"case": r["case"], "kind": "false positive", "graphlint": r[f"gl_{target}"][0]})
        elif engine:
            s.fn += 1
            wrong.append({"case": r["case"], "kind": "false negative", "engine": r[target]})
        else:
            s.tn += 1
    return s, wrong


def _crashed(path: str) -> dict:
    """A case that kills its worker process (a native crash in an engine or in graphlint)."""
    from testmodels.node_cases import case_name

    return {"case": case_name(path), "ort": "process crashed", "openvino": "process crashed",
            "gl_ort": [], "gl_openvino": [], "crashed": True}


def run_all(jobs: int = 2, chunk: int = 8) -> list[dict]:
    from testmodels.node_cases import case_name, model_paths
    from testmodels.pool import isolated_map

    files = model_paths()
    # Slow cases first so one long OpenVINO compile does not end up alone at the tail.
    files.sort(key=lambda p: "attention" not in p)
    done = isolated_map(judge, files, key=case_name, on_crash=_crashed, jobs=jobs, chunk=chunk)
    return sorted(done.values(), key=lambda r: r["case"])


@pytest.mark.slow
def test_backend_conformance():
    rows = run_all(jobs=max(2, min(4, os.cpu_count() or 2)))
    assert len(rows) > 1500, f"only {len(rows)} backend test cases found"
    report = {}
    for target in TARGETS:
        s, wrong = score(rows, target)
        report[target] = (s, wrong)
        assert s.tp > 50, f"{target}: too few rejections seen ({s.tp}); the harness is broken"
    failures = [f"{t}: precision {s.precision:.3f}, recall {s.recall:.3f} (tp {s.tp}, fp {s.fp}, fn {s.fn})"
                for t, (s, _) in report.items() if s.precision < BAR or s.recall < BAR]
    assert not failures, "; ".join(failures)


def main(argv: list[str]) -> None:
    t0 = time.time()
    rows = run_all()
    print(f"{len(rows)} cases in {time.time() - t0:.0f}s")
    doc = {}
    for target in TARGETS:
        s, wrong = score(rows, target)
        print(f"{target}: precision {s.precision:.4f} recall {s.recall:.4f} tp {s.tp} fp {s.fp} fn {s.fn} tn {s.tn}")
        for w in wrong:
            print(f"  {w['kind']}: {w['case']}: {(w.get('graphlint') or w.get('engine'))[:220]}")
        doc[target] = {"score": s.__dict__, "disagreements": wrong}
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump({"rows": rows, "targets": doc}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
