"""GL2006 gridsample-mode-names: per-opset spelling (engines here) and TensorRT's nearest fallback (cited)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from graphlint.registry import find_rule
from testmodels.export_drift import EngineError, lint, run_openvino, run_ort, run_reference, save, tiny

RS = np.random.RandomState(0)
X = RS.randn(1, 1, 4, 4).astype(np.float32)
GRID = (RS.rand(1, 3, 3, 2) * 2 - 1).astype(np.float32)


def gs(opset: int, mode: str | None) -> onnx.ModelProto:
    attrs = {} if mode is None else {"mode": mode}
    return tiny([helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", **attrs)],
                {"x": (np.float32, [1, 1, 4, 4]), "g": (np.float32, [1, 3, 3, 2])}, {"y": (np.float32, [1, 1, 3, 3])},
                opset)


def test_mode_spelling_is_per_opset(tmp_path):
    feeds = {"x": X, "g": GRID}
    linear = run_ort(gs(16, "bilinear"), feeds)
    np.testing.assert_allclose(run_ort(gs(20, "linear"), feeds), linear, rtol=1e-6)  # same meaning, new name
    assert not np.allclose(run_ort(gs(20, "nearest"), feeds), linear)  # the TensorRT fallback would differ
    for run in (run_ort, run_openvino):
        with pytest.raises(EngineError):
            run(gs(16, "linear"), feeds)
        with pytest.raises(EngineError):
            run(gs(20, "bilinear"), feeds)
    with pytest.raises(EngineError):
        run_reference(gs(20, "bilinear"), feeds)

    for opset, mode, right in ((16, "linear", "bilinear"), (20, "bilinear", "linear"), (20, "bicubic", "cubic")):
        found = lint(save(gs(opset, mode), tmp_path, f"{opset}{mode}.onnx"), "ort", "GL2006")
        assert [(f.node, f.severity.label) for f in found] == [("gs", "error")]
        assert found[0].rewrite.name == "explicit-attribute"
        assert found[0].rewrite.params == {"node": "gs", "attribute": "mode", "value": right}
    for opset, mode in ((16, "bilinear"), (16, None), (20, "linear"), (20, None), (20, "nearest")):
        assert lint(save(gs(opset, mode), tmp_path, f"ok{opset}{mode}.onnx"), "ort", "GL2006") == []


def test_trt_fallback_claim_is_cited(tmp_path):
    # TensorRT is not runnable here: the claim is the cited issue's, and the rule says so.
    rule = find_rule("GL2006")
    assert "NVIDIA/TensorRT#4646" in rule.source and "#4646" in rule.doc()
    path = save(gs(20, "linear"), tmp_path, "gs20.onnx")
    trt = lint(path, "trt", "GL2006")
    assert [(f.node, f.severity.label, f.properties["drift"], f.rewrite.name) for f in trt] == [
        ("gs", "error", "gridsample-20-trt-nearest", "gridsample-mode-names")]
    assert lint(path, "openvino", "GL2006") == [] and lint(path, "ort", "GL2006") == []
    # opset-16 spelling (what an opset-18 export writes) is what the parser matches
    assert lint(save(gs(16, "bilinear"), tmp_path, "gs16.onnx"), "trt", "GL2006") == []
