"""Engine drift on the ONNX backend node tests: recall and false positives of the drift rules per target.

For ``ort`` and ``openvino``: of the node tests whose engine output differs from the reference
(recorded in rules/data/gen/engine_drift_observations.json), the share with a drift finding
(GL2xxx) on the test's graph; of those where the engine matches, the share with any drift finding
(GL2010/GL2011 alone, and the whole GL2 family). Tests the engine refuses or cannot run are
outside both (target support, GL1xxx). Bars: recall >= 0.80, false positives <= 0.02.

The fast test lints every node test (about 6 s) against the committed observations; the slow one
re-runs both engines on every node test (about 2 minutes on 2 cores) and checks the committed
observations are still what the installed engines do, then scores the fresh run.
"""

from __future__ import annotations

import os

import pytest

from tests.test_engine_drift_facts import generator

RECALL, FALSE_POSITIVES = 0.80, 0.02
TARGETS = ("ort", "openvino")


@pytest.fixture(scope="module")
def gen():
    return generator()


@pytest.fixture(scope="module")
def lint(gen):
    return gen.lint_all(jobs=max(2, min(4, os.cpu_count() or 2)))


def _check(gen, obs, lint) -> dict:
    scores = {}
    for target in TARGETS:
        s = gen.score(obs, lint, target)
        scores[target] = s
        assert s["differ"] > 10 and s["match"] > 1000, f"{target}: too few tests ({s['differ']}, {s['match']})"
        assert s["recall_family"] >= RECALL, f"{target}: recall {s['recall_family']:.3f}, missed {s['missed']}"
        assert s["fp_new"] <= FALSE_POSITIVES, f"{target}: GL2010/11 false positives {s['fp_new']:.4f}: {s['false_new']}"
        assert s["fp_family"] <= FALSE_POSITIVES, f"{target}: GL2 false positives {s['fp_family']:.4f}"
    # the engine-drift rules alone carry OpenVINO; onnxruntime's training Dropout is GL2009's
    assert scores["openvino"]["recall_new"] >= RECALL
    return scores


def test_drift_rules_on_the_committed_observations(gen, lint):
    _check(gen, gen.load_observations()["rows"], lint)


def test_observations_name_the_installed_engines(gen):
    doc = gen.load_observations()
    installed = gen.versions()
    assert doc["versions"]["ort"] == installed["ort"] and doc["versions"]["openvino"] == installed["openvino"], \
        "engine versions changed: re-run rules/data/gen/gen_engine_drift.py observe, update, score"
    assert "f32" in doc["devices"]["openvino"]


@pytest.mark.slow
def test_fresh_engine_run_matches_the_observations_and_the_bars(gen, lint):
    fresh = {r["case"]: r for r in gen.observe(jobs=max(2, min(4, os.cpu_count() or 2)))}
    committed = gen.load_observations()["rows"]
    changed = [(c, e, committed[c][e]["status"], fresh[c][e]["status"]) for c in committed for e in TARGETS
               if c in fresh and committed[c][e]["status"] != fresh[c][e]["status"]]
    assert len(fresh) == len(committed)
    assert not changed, f"the engines now behave otherwise than recorded (re-run the generator): {changed[:10]}"
    _check(gen, fresh, lint)
