"""graphlint's target-support verdicts vs the real engines on every ONNX backend node test case.

Each model of ``onnx.backend.test.case.node.collect_testcases()`` (about 1,900) is loaded in
onnxruntime (CPU session creation) and in OpenVINO (read + compile on CPU); "the engine
rejects it" is compared with "graphlint reports an error" for ``--target ort`` and
``--target openvino``. Positive = rejected. Precision and recall must both be >= 0.95.

Run as a script to print the numbers and every disagreement (docs/conformance.md):

    .venv/bin/python tests/test_conformance_backend.py [--json out.json]
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
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


def _build_cases(folder: str) -> None:
    import onnx
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    for c in cases:
        onnx.save(c.model, os.path.join(folder, f"{c.name}.onnx"))


def case_folder() -> str:
    from testmodels.common import cached

    return cached("onnx-backend-node", _build_cases)


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
    import onnxruntime as ort

    from graphlint.lint import LintOptions, lint_paths

    out: dict = {"case": os.path.basename(path)[:-5]}
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    try:
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
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


def judge_many(paths: list[str]) -> list[dict]:
    return [judge(p) for p in paths]


def _crashed(path: str) -> dict:
    """A case that kills its worker process (a native crash in an engine or in graphlint)."""
    return {"case": os.path.basename(path)[:-5], "ort": "process crashed", "openvino": "process crashed",
            "gl_ort": [], "gl_openvino": [], "crashed": True}


def run_all(jobs: int = 2, chunk: int = 8) -> list[dict]:
    from concurrent.futures.process import BrokenProcessPool

    folder = case_folder()
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".onnx"))
    # Slow cases first so one long OpenVINO compile does not end up alone at the tail.
    files.sort(key=lambda p: "attention" not in p)
    done: dict[str, dict] = {}
    pending = files
    while pending:
        before = len(done)
        with ProcessPoolExecutor(jobs) as ex:
            futures = [ex.submit(judge_many, pending[i:i + chunk]) for i in range(0, len(pending), chunk)]
            for fut in futures:
                # a native crash takes the pool down: what did not finish is retried below
                with contextlib.suppress(BrokenProcessPool):
                    done.update((row["case"], row) for row in fut.result())
        pending = [p for p in pending if os.path.basename(p)[:-5] not in done]
        if pending and len(done) == before:  # no progress: run the first case alone
            p = pending.pop(0)
            with ProcessPoolExecutor(1) as ex:
                try:
                    done[os.path.basename(p)[:-5]] = ex.submit(judge, p).result()
                except BrokenProcessPool:
                    done[os.path.basename(p)[:-5]] = _crashed(p)
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
