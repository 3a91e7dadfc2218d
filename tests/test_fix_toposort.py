"""The topological-sort pass on what onnxruntime's fp16 converter writes (input Casts appended last)."""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from graphlint.lint import LintOptions, lint_paths
from testmodels.fp_classes import models
from tests.fixhelp import ort_outputs, run_fix, steps


@pytest.fixture(scope="module")
def fp16_model() -> str:
    return glob.glob(os.path.join(models(), "vit_fp16.onnx"))[0]


def test_fp16_converter_output_is_sorted_and_keeps_results(fp16_model, tmp_path):
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(fp16_model)
    (f,) = [f for f in lint_paths([fp16_model], LintOptions(targets=["ort"], select=["GL0001"])).findings()]
    assert f.severity.label == "warning" and f.rewrite.name == "topological-sort"

    out = str(tmp_path / "sorted.onnx")
    report = run_fix(fp16_model, out, target="ort", select=["GL0001"])
    assert steps(report) == {"topological-sort": "applied"}
    assert report.outcome.max_abs_diff and max(report.outcome.max_abs_diff.values()) == 0.0
    onnx.checker.check_model(out, full_check=True)  # the ONNX checker accepts the result
    moved = report.outcome.steps[0].changes[0]
    assert "moved 1 node(s)" in moved and "graph_input_cast0" in moved
    x = {"x": np.random.RandomState(0).rand(2, 3, 32, 32).astype(np.float32)}
    a, b = ort_outputs(fp16_model, x), ort_outputs(out, x)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert [f for f in lint_paths([out], LintOptions(targets=["ort"], select=["GL0001"])).findings()] == []


def test_subgraph_reading_a_later_outer_value_is_sorted(tmp_path):
    """An If whose branch reads an outer value produced after the If: the If moves after its producer."""
    branch = helper.make_graph([helper.make_node("Neg", ["a"], ["o"])], "then", [],
                               [helper.make_tensor_value_info("o", T.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Abs", ["a"], ["o2"])], "else", [],
                              [helper.make_tensor_value_info("o2", T.FLOAT, [2])])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other, name="if"),
             helper.make_node("Relu", ["x"], ["a"], name="producer")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [2]),
                                       helper.make_tensor_value_info("c", T.BOOL, [])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    path = str(tmp_path / "if.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    out = str(tmp_path / "if_sorted.onnx")
    report = run_fix(path, out, target="ort", rewrites=["topological-sort"])
    assert steps(report)["topological-sort"] == "applied"
    assert [n.name for n in onnx.load(out).graph.node] == ["producer", "if"]
    onnx.checker.check_model(out, full_check=True)
