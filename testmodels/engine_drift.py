"""Engine-drift measurement on the ONNX backend node tests, run in worker processes.

``observe``: every node test on onnxruntime CPU and OpenVINO CPU (f32), each output compared with
the test's reference (testmodels/engines.py). ``lint_all``: the drift rules' findings per test and
target. ``score``: recall and false positives of those findings against the observations. Used by
rules/data/gen/gen_engine_drift.py and tests/test_engine_drift_conformance.py.
"""

from __future__ import annotations

from typing import Any


def versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import openvino

    return {"onnx": onnx.__version__, "ort": onnxruntime.__version__,
            "openvino": openvino.__version__.split("-")[0]}


def observe_one(path: str) -> dict[str, Any]:
    import onnx

    from testmodels import engines as E
    from testmodels.node_cases import case_name, load_io

    model = onnx.load(path)
    inputs, refs = load_io(path, model)
    names = [o.name for o in model.graph.output]
    row: dict[str, Any] = {"case": case_name(path)}
    for eng in E.ENGINES:
        try:
            outs = E.run(eng, path, inputs, names)
        except E.LoadError as e:
            row[eng] = {"status": "load", "detail": str(e)}
            continue
        except E.RunError as e:
            row[eng] = {"status": "run", "detail": str(e)}
            continue
        v = E.compare(refs, outs)
        row[eng] = {"status": v.status, "max_abs": _num(v.max_abs), "detail": v.detail}
    return row


def _num(x: float | None) -> float | str | None:
    if x is None:
        return None
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    return float(f"{x:.4g}")


def _crashed(path: str) -> dict[str, Any]:
    from testmodels.node_cases import case_name

    return {"case": case_name(path), "crashed": True,
            **{e: {"status": "crash", "detail": "the worker process died"} for e in ("ort", "openvino")}}


def observe(paths: list[str] | None = None, jobs: int = 2) -> list[dict[str, Any]]:
    from testmodels.node_cases import case_name, model_paths
    from testmodels.pool import isolated_map

    files = paths if paths is not None else model_paths()
    files = sorted(files, key=lambda p: "attention" not in p)  # long compiles first
    done = isolated_map(observe_one, files, key=case_name, on_crash=_crashed, jobs=jobs, chunk=8)
    return sorted(done.values(), key=lambda r: r["case"])


NEW_RULES = ("GL2010", "GL2011")


def lint_one(path: str) -> dict[str, Any]:
    """Per target: the test's drift (GL2xxx) findings, as (rule id, node label, op type)."""
    from graphlint.lint import LintOptions, lint_paths
    from testmodels.node_cases import case_name

    row: dict[str, Any] = {"case": case_name(path)}
    run = lint_paths([path], LintOptions(targets=["ort", "openvino"], select=["drift"]))
    for res in run.results:
        row[res.target.name] = [[f.rule_id, f.node or "", f.op_type or ""] for f in res.findings
                                if not f.suppressed and f.rule_id.startswith("GL2")]
    return row


def _lint_crashed(path: str) -> dict[str, Any]:
    from testmodels.node_cases import case_name

    return {"case": case_name(path), "ort": [], "openvino": [], "crashed": True}


def lint_all(paths: list[str] | None = None, jobs: int = 2) -> dict[str, dict[str, Any]]:
    from testmodels.node_cases import case_name, model_paths
    from testmodels.pool import isolated_map

    return isolated_map(lint_one, paths if paths is not None else model_paths(), key=case_name,
                        on_crash=_lint_crashed, jobs=jobs, chunk=16)


def score(obs: dict[str, Any], lint: dict[str, dict[str, Any]], engine: str) -> dict[str, Any]:
    """Recall over the tests where the engine differs, false positives over those where it matches.

    A node test's graph is the op under test (one node), or for ``*_expanded`` tests the op's
    function body, every node of which is part of the drifting op: a finding on any node of the
    test's graph points at it. Tests the engine refuses or cannot run are left out (GL1xxx).
    """
    differ = [c for c, r in obs.items() if r[engine]["status"] in ("values", "shape")]
    match = [c for c, r in obs.items() if r[engine]["status"] == "match"]
    new = lambda c: [f for f in lint.get(c, {}).get(engine, []) if f[0] in NEW_RULES]  # noqa: E731
    fam = lambda c: lint.get(c, {}).get(engine, [])  # noqa: E731
    hit_new = [c for c in differ if new(c)]
    hit_fam = [c for c in differ if fam(c)]
    fp_new = [c for c in match if new(c)]
    fp_fam = [c for c in match if fam(c)]
    return {
        "differ": len(differ), "match": len(match),
        "recall_new": len(hit_new) / max(1, len(differ)), "recall_family": len(hit_fam) / max(1, len(differ)),
        "fp_new": len(fp_new) / max(1, len(match)), "fp_family": len(fp_fam) / max(1, len(match)),
        "missed": sorted(set(differ) - set(hit_fam)), "false_new": sorted(fp_new),
        "false_family_only": sorted(set(fp_fam) - set(fp_new)),
    }


