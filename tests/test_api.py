"""The library API (docs/api.md) on what export scripts hold: a torch.onnx.ONNXProgram straight from
the dynamo exporter, an onnx.ModelProto in memory, bytes, an openvino.Model from ov.convert_model,
a path; and graphlint.testing.assert_deployable."""

from __future__ import annotations

import json
import os

import jsonschema
import numpy as np
import onnx
import onnxruntime as ort
import pytest

import graphlint
from graphlint.rule import Finding
from graphlint.testing import assert_deployable
from tests.conftest import SARIF_SCHEMA
from tests.models import relu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "testmodels", "examples", "tiny_vlm.onnx")


def _program(mode: str):
    """A dynamo export (torch.onnx.ONNXProgram, opset 20) of a 4-D grid sample."""
    import torch

    class Net(torch.nn.Module):
        def forward(self, x, grid):
            return torch.nn.functional.grid_sample(torch.relu(x), grid, mode=mode, align_corners=False)

    return torch.onnx.export(Net(), (torch.randn(1, 2, 4, 5), torch.rand(1, 4, 5, 2) * 2 - 1), dynamo=True)


def test_onnx_program_from_the_dynamo_exporter():
    """GridSample-20 names bilinear 'linear', which TensorRT's parser does not recognize (it samples
    nearest instead: GL2006, rules/data/drift.toml): an error for trt; nearest is fine; ONNX
    Runtime runs both."""
    import torch

    for mode, fails_on_trt in (("nearest", False), ("bilinear", True)):
        program = _program(mode)
        assert isinstance(program, torch.onnx.ONNXProgram)
        sess = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = {"x": np.ones((1, 2, 4, 5), np.float32), "grid": np.zeros((1, 4, 5, 2), np.float32)}
        sess.run(None, dict(zip([i.name for i in sess.get_inputs()], feeds.values(), strict=True)))
        assert graphlint.check(program, "ort").ok
        report = graphlint.check(program, "trt")
        assert report.ok != fails_on_trt, [f.message for f in report.errors]
        if fails_on_trt:
            assert {(f.rule_id, f.op_type) for f in report.errors} == {("GL2006", "GridSample")}
            with pytest.raises(AssertionError, match="GL2006"):
                assert_deployable(program, "trt")
        else:
            assert assert_deployable(program, "trt").ok


def test_model_proto_and_bytes_in_memory_one_report_for_several_targets():
    model = relu_model()
    for given in (model, model.SerializeToString()):
        report = graphlint.check(given, ["trt", "ort", "openvino"])
        assert report.ok and {r.target.name for r in report.run.results} == {"trt", "ort", "openvino"}
    report = graphlint.check(onnx.load(EXAMPLE), "trt")
    assert report.errors and not report.ok
    assert all(isinstance(f, Finding) for f in report.findings)
    doc = json.loads(report.to_sarif())
    with open(SARIF_SCHEMA) as f:
        jsonschema.Draft4Validator(json.load(f)).validate(doc)
    assert len(doc["runs"][0]["results"]) == len(report.findings)
    assert json.loads(report.to_json())["summary"]
    text = report.to_text()
    assert f"Found {len(report.errors)} error" in text
    assert report.to_html().lstrip().lower().startswith("<!doctype html")


def test_openvino_model_from_convert_model():
    import openvino as ov

    ovm = ov.convert_model(EXAMPLE)
    report = graphlint.check(ovm, "openvino")
    assert not report.failures
    assert {r.model.dialect for r in report.run.results} == {"openvino"}  # linted as IR, not as ONNX
    assert any(f.rule_id == "GL5001" for f in report.run.findings())  # IR inputs without a layout


def test_path_select_and_the_pytest_helper():
    report = graphlint.check(EXAMPLE, "trt", select=["GL4"])
    assert report.findings and all(f.rule_id.startswith("GL4") for f in report.findings)
    assert assert_deployable(relu_model(), "ort").ok
    with pytest.raises(TypeError, match=r"graphlint\.check takes"):
        graphlint.check(object(), "ort")


def test_fix_returns_the_verified_model_and_leaves_the_input_alone():
    """graphlint.fix_model on an optimum ViT export (GL3003's pin, an unsafe rewrite: named explicitly) and on
    an in-memory graph out of topological order (a safe one, verified in ONNX Runtime)."""
    vit_path = os.path.join(ROOT, "testmodels", "pipelines", "optimum_vision", "vit", "model.onnx")
    vit = onnx.load(vit_path)
    before = vit.SerializeToString()
    result = graphlint.fix_model(vit, "ort", select=["GL3003"], unsafe_fixes=True)
    assert result.changed and [p["pass"] for p in result.passes if p["status"] == "applied"] == ["fix-input-shape"]
    dims = [d.dim_value or d.dim_param for d in result.model.graph.input[0].type.tensor_type.shape.dim]
    assert dims[2:] == [32, 32] and isinstance(dims[0], str)  # the batch stays dynamic
    assert vit.SerializeToString() == before
    assert graphlint.check(result.model, "ort", select=["GL3003"]).findings == []

    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Neg", ["a"], ["y"]), helper.make_node("Relu", ["x"], ["a"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    unsorted = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    result = graphlint.fix_model(unsorted, "ort")
    assert result.verified_with == "onnxruntime" and result.max_abs_diff == {"y": 0.0}
    assert [n.op_type for n in result.model.graph.node] == ["Relu", "Neg"]
    onnx.checker.check_model(result.model, full_check=True)
