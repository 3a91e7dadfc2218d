"""The engine-upgrade report on the engines themselves: the test fleet (testmodels/fleet.py, real
exports) scanned for the earlier and the current release of ONNX Runtime (1.20 / 1.32) and OpenVINO
(2024.6 / 2026.4), then every model run on both releases (the earlier in its pinned venv,
testmodels/engine_venvs.sh; session creation, read_model + compile_model on CPU).

- every model whose verdict ``--diff`` says changes is rejected by the release whose side has a
  load-time error (a support-table rule: opset, op, constraint, element type) and accepted by the
  other;
- over the whole fleet, no model with a load-time error for a release is accepted by that release.

A deployment folder the fleet holds (genai folders, optimum's seq2seq exports) is one item of the scan,
its pipeline: the engine's verdict on it is that on its stages.

Errors of run-time failures (GL3003: a constant shape pins a dynamic dim) need the inputs that make
them fail; the real-model corpus runs those (tests/test_conformance_corpus.py).

Without the earlier venvs the tests skip locally and fail in CI (CI=true).
"""

from __future__ import annotations

import os
import sys

import pytest

from graphlint.pipeline import detect
from graphlint.scan import fleet as fleet_report
from graphlint.scan import scan
from graphlint.scan.store import Store
from testmodels import engine_versions as ev
from testmodels import fleet
from tests.conftest import earlier_engine_python

# Rules whose error says the engine refuses the model at load / compile time: validity (checker,
# opset, domain, IR reader) and support tables (op, constraint, element type).
LOAD_TIME = {"GL0001", "GL0002", "GL0003", "GL0006", "GL1001", "GL1002", "GL1004", "GL1005"}
PAIRS = {"ort": ("ort@1.20:cpu", "ort@1.32:cpu"), "openvino": ("openvino@2024.6:cpu", "openvino@2026.4:cpu")}


def _refused(row) -> bool:
    return row.status != "linted" or any(f["severity"] == "error" and f["rule_id"] in LOAD_TIME and not f["suppressed"]
                                         for f in row.findings)


def _python(engine: str, old: bool) -> str:
    return earlier_engine_python(engine) if old else sys.executable


def _ask(engine: str, paths: list[str], old: bool) -> dict[str, dict]:
    """The engine's verdict per scanned item. A deployment folder (one item of the scan: its pipeline) is
    accepted when the engine accepts every stage it can take, else it carries the first refusal."""
    stages: dict[str, list[str]] = {}
    for p in paths:
        if os.path.isdir(p):
            names = {e.name for e in os.scandir(p) if e.is_file()}
            kind = "openvino" if engine == "openvino" else "onnx"
            stages[p] = [s for pipe in detect.detect(p, names) for s in pipe.paths
                         if kind == "openvino" or s.endswith(".onnx")]
        else:
            stages[p] = [p]
    got = ev.ask(engine, sorted({s for ss in stages.values() for s in ss}), python=_python(engine, old))
    out = {}
    for p, ss in stages.items():
        refused = [got[s] for s in ss if got[s]["verdict"] != "accepted"]
        out[p] = refused[0] if refused else {"verdict": "accepted"}
    return out


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list:
    db = str(tmp_path_factory.mktemp("upgrade") / "fleet.db")
    scan(fleet.sources(), [t for pair in PAIRS.values() for t in pair], db, jobs=2)
    with Store(db, create=False) as s:
        return list(s.rows())


@pytest.mark.parametrize("engine", sorted(PAIRS))
def test_upgrade_diff_holds_on_both_releases(rows, engine):
    before, after = PAIRS[engine]
    d = fleet_report.diff(rows, before, after)
    assert d["changed"], "the fleet has models whose verdict changes between the releases"
    paths = [c["path"] for c in d["changed"]]
    old = _ask(engine, paths, True)
    new = _ask(engine, paths, False)
    by = {(r.path, r.target): r for r in rows}
    wrong = []
    for c in d["changed"]:
        rejected_by = {"before": old[c["path"]]["verdict"] != "accepted", "after": new[c["path"]]["verdict"] != "accepted"}
        said = {"before": _refused(by[(c["path"], before)]), "after": _refused(by[(c["path"], after)])}
        if rejected_by != said:
            wrong.append((c["path"], c["before"], c["after"], old[c["path"]], new[c["path"]]))
    print(f"\n{engine}: {len(d['changed'])} verdict changes ({d['better']} better, {d['worse']} worse), "
          f"{len(d['changed']) - len(wrong)} as both releases do")
    assert wrong == []


@pytest.mark.parametrize("engine", sorted(PAIRS))
def test_no_error_the_release_does_not_show(rows, engine):
    """Every load-time error graphlint reports for a release, that release shows (both releases, every model)."""
    reported = 0
    for old, target in ((True, PAIRS[engine][0]), (False, PAIRS[engine][1])):
        mine = {r.path: r for r in rows if r.target == target and r.status == "linted"}
        got = _ask(engine, sorted(mine), old)
        errors = [p for p, r in mine.items() if _refused(r)]
        false = [(p, got[p]) for p in errors if got[p]["verdict"] == "accepted"]
        missed = [p for p, r in mine.items() if not _refused(r) and got[p]["verdict"] != "accepted"]
        print(f"\n{target}: {len(errors)} errors, {len(errors) - len(false)} rejected by the engine; "
              f"{len(mine) - len(errors)} without error, {len(missed)} of them rejected: {missed}")
        assert false == []
        reported += len(errors)
    assert reported
