"""Early analyses: while ONNX inference runs in the loader's child, the linter computes the
type-free parts of the analyses its rules need; the findings must not change."""

from __future__ import annotations

import os
import sys

import pytest

from graphlint import analysis as registry
from graphlint.engine import analyses_needed
from graphlint.lint import LintOptions, lint_paths
from graphlint.load import shape_infer
from graphlint.registry import load_rules

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import make_models
from test_load_parallel import rerun_unthreaded

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the early phase needs the forked loader")


def _lint(path: str) -> tuple[list, dict]:
    run = lint_paths([path], LintOptions(targets=["trt", "openvino"]))
    return [(f.rule_id, f.message, f.target) for f in run.findings()], run.results[0].timings


def test_early_phase_runs_and_changes_nothing(tmp_path, monkeypatch, request):
    if rerun_unthreaded(request):
        return
    path = str(tmp_path / "m.onnx")
    make_models.build(path, nodes=600, hidden=8, n_if=2)
    monkeypatch.setenv("GRAPHLINT_JOBS", "1")  # no child: nothing to overlap, no early phase
    serial, serial_times = _lint(path)
    monkeypatch.delenv("GRAPHLINT_JOBS")
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    forked, times = _lint(path)
    assert forked == serial and serial
    early = {k for k in times if "(while inference runs)" in k}
    assert {"load:early:shapes (while inference runs)", "load:early:nodes_by_type (while inference runs)"} <= early
    assert not any("(while inference runs)" in k for k in serial_times)


def test_a_crashing_early_part_costs_nothing_but_time(tmp_path, monkeypatch, request):
    """An early part that raises is dropped; the analysis proper computes the whole result."""
    if rerun_unthreaded(request):
        return
    path = str(tmp_path / "m.onnx")
    make_models.build(path, nodes=300, hidden=8, n_if=1)
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    expected, _ = _lint(path)

    def boom(model):
        raise RuntimeError("early part bug")

    registry._load_builtin()
    monkeypatch.setitem(registry._EARLY, "shapes", boom)
    got, times = _lint(path)
    assert got == expected
    assert "load:early:shapes (while inference runs)" in times


def test_needed_analyses_include_the_dispatch_index():
    rules = load_rules()
    needed = analyses_needed(rules)
    assert {"shapes", "nodes_by_type"} <= needed
    assert all(name in needed for r in rules for name in r.requires)
    model_level = [r for r in rules if not r.op_types and "nodes_by_type" not in r.requires]
    assert model_level and "nodes_by_type" not in analyses_needed(model_level)


def test_early_part_must_be_target_independent():
    with pytest.raises(ValueError, match="per_target=False"):
        registry.analysis("x-test", per_target=True, early=lambda m: None)


def test_early_shape_pass_hands_over_once_inference_is_done(tmp_path, monkeypatch, request):
    """When inference has already finished, the early walk stops at once and the typed pass
    does all the work; the findings stay the same."""
    if rerun_unthreaded(request):
        return
    import time

    from graphlint.analysis import run_early
    from graphlint.engine import run_rules
    from graphlint.load import load_model
    from graphlint.target import resolve

    path = str(tmp_path / "m.onnx")
    make_models.build(path, nodes=300, hidden=8, n_if=1)
    rules = load_rules()
    expected = [(f.rule_id, f.message) for f in run_rules(load_model(path), resolve("trt"), rules).findings]
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    model = load_model(path, defer_types=True)
    assert model.pending
    deadline = time.monotonic() + 60
    while not model.types_arrived() and time.monotonic() < deadline:
        time.sleep(0.01)
    run_early(model, ["shapes"])
    assert model.precomputed["early:shapes"].early.stopped_at == 0
    model.ready()
    assert [(f.rule_id, f.message) for f in run_rules(model, resolve("trt"), rules).findings] == expected
