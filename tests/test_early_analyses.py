"""Early analyses: while ONNX inference runs in the loader's child, the linter computes the
type-free parts of the analyses its rules need; the findings must not change."""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphlint import analysis as registry
from graphlint.analysis import shapes
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


def _inference_outlasts_early_parts(monkeypatch) -> None:
    """A small model's inference can finish before the early phase starts, and then no early part
    runs (run_early); these tests are about the parts, so inference "runs" until ready()."""
    from graphlint.ir import Model

    monkeypatch.setattr(Model, "types_arrived", lambda self: self._pending is None)


def test_early_phase_runs_and_changes_nothing(tmp_path, monkeypatch, request):
    if rerun_unthreaded(request):
        return
    path = str(tmp_path / "m.onnx")
    make_models.build(path, nodes=600, hidden=8, n_if=2)
    monkeypatch.setenv("GRAPHLINT_JOBS", "1")  # no child: nothing to overlap, no early phase
    serial, serial_times = _lint(path)
    monkeypatch.delenv("GRAPHLINT_JOBS")
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    _inference_outlasts_early_parts(monkeypatch)
    forked, times = _lint(path)
    assert forked == serial and serial
    early = {k for k in times if "(while inference runs)" in k}
    # (the op-type index is made earlier still, by the type-free rules' dispatch)
    assert {"load:early:shapes (while inference runs)", "load:early:components (while inference runs)"} <= early
    assert "load:early:nodes_by_type (while inference runs)" not in early
    assert not any("(while inference runs)" in k for k in serial_times)


def test_a_crashing_early_part_costs_nothing_but_time(tmp_path, monkeypatch, request):
    """An early part that raises is dropped; the analysis proper computes the whole result."""
    if rerun_unthreaded(request):
        return
    path = str(tmp_path / "m.onnx")
    make_models.build(path, nodes=300, hidden=8, n_if=1)
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    _inference_outlasts_early_parts(monkeypatch)
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
    assert "early:shapes" not in model.precomputed  # too late: the analysis proper does it all
    model.precomputed["early:shapes"] = shapes._early_until_inferred(model)
    assert model.precomputed["early:shapes"].early.stopped_at == 0
    model.ready()
    assert [(f.rule_id, f.message) for f in run_rules(model, resolve("trt"), rules).findings] == expected


def _type_free_zoo(opset: int) -> onnx.ModelProto:
    """Nodes for the rules that read no types (Rule.reads_types = False)."""
    h = helper
    f = TensorProto.FLOAT
    vi = h.make_tensor_value_info
    c = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
         (("three", 3.0), ("cubic", 0.044715), ("k", 0.7978845608))]
    if opset >= 18:
        nodes = [
            h.make_node("ReduceMean", ["x"], ["rm"], axes=[1]),  # GL2004: a stale attribute
            h.make_node("Shape", ["x"], ["shp"]),
            h.make_node("Gather", ["shp", "zero"], ["ax"], axis=0),
            h.make_node("Unsqueeze", ["x", "ax1"], ["unsq"]),  # GL2004 on trt: axes computed at run time
            h.make_node("Unsqueeze", ["ax", "zero1"], ["ax1"]),
            h.make_node("NonZero", ["x"], ["nz"]),  # GL3004
            h.make_node("Pow", ["x", "three"], ["x3"]),  # GL2008: tanh-approximate GELU
            h.make_node("Mul", ["x3", "cubic"], ["cx3"]),
            h.make_node("Add", ["x", "cx3"], ["inner"]),
            h.make_node("Mul", ["inner", "k"], ["scaled"]),
            h.make_node("Tanh", ["scaled"], ["tanh"]),
        ]
        outs = ["rm", "unsq", "nz", "tanh"]
        c += [numpy_helper.from_array(np.array(0, np.int64), "zero"),
              numpy_helper.from_array(np.array([0], np.int64), "zero1")]
        inputs = [vi("x", f, [2, 4])]
    else:
        nodes = [
            h.make_node("GridSample", ["img", "grid"], ["gs"], mode="linear"),  # GL2006: opset-20 spelling
            h.make_node("LayerNormalization", ["x", "scale"], ["ln"]),  # GL2002: before opset 17
        ]
        outs = ["gs", "ln"]
        c += [numpy_helper.from_array(np.ones(4, np.float32), "scale")]
        inputs = [vi("x", f, [2, 4]), vi("img", f, [1, 1, 4, 4]), vi("grid", f, [1, 2, 2, 2])]
    graph = h.make_graph(nodes, "g", inputs, [vi(o, TensorProto.UNDEFINED, None) for o in outs], initializer=c)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=10)


@pytest.mark.parametrize("opset", [16, 25])
def test_type_free_rules_run_while_inference_runs_and_find_the_same(tmp_path, monkeypatch, request, opset):
    """Rules that declare they read no types run before the types arrive; their findings (and
    everything else) equal a run in one process, where every rule runs on the typed model."""
    if rerun_unthreaded(request):
        return
    from graphlint import engine

    path = str(tmp_path / "m.onnx")
    onnx.save(_type_free_zoo(opset), path)
    monkeypatch.setenv("GRAPHLINT_JOBS", "1")
    serial, _ = _lint(path)
    monkeypatch.delenv("GRAPHLINT_JOBS")
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    _inference_outlasts_early_parts(monkeypatch)
    early: list[str] = []
    run = engine.RuleRun.run

    def spy(self, *, type_free_only=False):
        if type_free_only:
            assert self.model.pending
            early.extend(r.id for r in self.todo if engine.type_free(r))
        return run(self, type_free_only=type_free_only)

    monkeypatch.setattr(engine.RuleRun, "run", spy)
    forked, times = _lint(path)
    assert forked == serial
    assert "load:rules that read no types (while inference runs)" in times  # --stats shows it
    fired = {rule for rule, _, _ in serial}
    expected = {"GL2002", "GL2006"} if opset == 16 else {"GL0002", "GL2004", "GL2008", "GL3004"}
    assert expected <= fired, fired
    assert expected <= set(early)
    declared = {r.id for r in load_rules() if not r.reads_types}
    assert set(early) <= declared and declared <= {"GL0002", "GL2002", "GL2004", "GL2006", "GL2008", "GL3004"}
