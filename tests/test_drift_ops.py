"""GL2002 op-outside-its-opsets: deprecated ops and ops used before they exist, shown with real engines."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from testmodels.export_drift import EngineError, lint, run_openvino, run_ort, run_reference, save, tiny

X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)


def upsample(opset: int) -> onnx.ModelProto:
    return tiny([helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest", name="up")],
                {"x": (np.float32, [1, 1, 4, 4])}, {"y": (np.float32, [1, 1, 8, 8])}, opset,
                {"scales": np.array([1, 1, 2, 2], np.float32)})


def test_upsample_deprecated_at_10(tmp_path):
    ok9 = run_ort(upsample(9), {"x": X})
    with pytest.raises(EngineError, match="deprecated"):
        run_ort(upsample(13), {"x": X})  # onnxruntime refuses Upsample past opset 9
    np.testing.assert_array_equal(run_reference(upsample(13), {"x": X}), ok9)  # the reference runs it
    np.testing.assert_array_equal(run_openvino(upsample(13), {"x": X}), ok9)  # so does OpenVINO

    found = lint(save(upsample(13), tmp_path, "u13.onnx"), "ort", "GL2002")
    assert [(f.node, f.severity.label, f.rewrite.name) for f in found] == [("up", "error", "upsample-to-resize")]
    assert "deprecated" in found[0].message and found[0].properties["basis"] == \
        "engine-fact:rules/data/drift.toml#upsample-deprecated"
    assert lint(save(upsample(9), tmp_path, "u9.onnx"), "ort", "GL2002") == []
    # OpenVINO and TensorRT take it: a spec-only warning that says who rejects it
    for target in ("openvino", "trt"):
        (w,) = lint(save(upsample(13), tmp_path, "u13.onnx"), target, "GL2002")
        assert w.severity.label == "warning" and "ONNX Runtime 1.32" in w.message and "onnx.checker" in w.message

    # Upsample's meaning is Resize(asymmetric, floor): the rewrite target gives the same numbers
    resize = tiny([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
                  {"x": (np.float32, [1, 1, 4, 4])}, {"y": (np.float32, [1, 1, 8, 8])}, 13,
                  {"scales": np.array([1, 1, 2, 2], np.float32)})
    np.testing.assert_array_equal(run_ort(resize, {"x": X}), ok9)


def layernorm(opset: int) -> onnx.ModelProto:
    return tiny([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, name="ln")],
                {"x": (np.float32, [2, 8])}, {"y": (np.float32, [2, 8])}, opset,
                {"s": np.ones(8, np.float32), "b": np.zeros(8, np.float32)})


def test_layernorm_before_17_is_nonstandard(tmp_path):
    x = np.random.RandomState(0).randn(2, 8).astype(np.float32)
    want = run_ort(layernorm(17), {"x": x})
    np.testing.assert_allclose(run_ort(layernorm(16), {"x": x}), want, atol=1e-5)  # onnxruntime runs it
    np.testing.assert_allclose(run_openvino(layernorm(16), {"x": x}), want, atol=1e-5)  # so does OpenVINO
    for opset in (11, 13):  # what onnxruntime.transformers.optimizer writes into older-opset graphs
        np.testing.assert_allclose(run_ort(layernorm(opset), {"x": x}), want, atol=1e-5)
        np.testing.assert_allclose(run_openvino(layernorm(opset), {"x": x}), want, atol=1e-5)
    with pytest.raises(onnx.checker.ValidationError, match="LayerNormalization"):
        onnx.checker.check_model(layernorm(16))  # but it is not ONNX
    onnx.checker.check_model(layernorm(17))

    found = lint(save(layernorm(16), tmp_path, "ln16.onnx"), "trt", "GL2002")
    assert [(f.node, f.rewrite.name, f.rewrite.params) for f in found] == [
        ("ln", "opset-upgrade", {"node": "ln", "opset": 17})]
    assert lint(save(layernorm(17), tmp_path, "ln17.onnx"), "trt", "GL2002") == []
    # every engine runs it: a warning on every target, naming who tolerates it and who rejects it
    for target in ("ort", "openvino", "trt"):
        (w,) = lint(save(layernorm(13), tmp_path, "ln13.onnx"), target, "GL2002")
        assert w.severity.label == "warning" and "Spec-only" in w.message and "onnx.checker" in w.message
        assert "basis" not in w.properties


def test_gelu_before_20_rejected(tmp_path):
    def gelu(opset: int) -> onnx.ModelProto:
        return tiny([helper.make_node("Gelu", ["x"], ["y"], name="g")], {"x": (np.float32, [4])},
                    {"y": (np.float32, [4])}, opset)

    x = np.linspace(-2, 2, 4).astype(np.float32)
    want = run_ort(gelu(20), {"x": x})
    with pytest.raises(EngineError):
        run_ort(gelu(18), {"x": x})
    np.testing.assert_allclose(run_openvino(gelu(18), {"x": x}), want, atol=1e-5)  # OpenVINO runs it
    assert [(f.node, f.severity.label) for f in lint(save(gelu(18), tmp_path, "g18.onnx"), "ort", "GL2002")] == [
        ("g", "error")]
    assert [f.severity.label for f in lint(save(gelu(18), tmp_path, "g18.onnx"), "openvino", "GL2002")] == [
        "warning"]
    assert lint(save(gelu(20), tmp_path, "g20.onnx"), "ort", "GL2002") == []


def test_groupnorm_before_18_rejected(tmp_path):
    def gn(opset: int) -> onnx.ModelProto:
        return tiny([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, name="gn")],
                    {"x": (np.float32, [1, 2, 3])}, {"y": (np.float32, [1, 2, 3])}, opset,
                    {"s": np.ones(2, np.float32), "b": np.zeros(2, np.float32)})

    x = np.random.RandomState(1).randn(1, 2, 3).astype(np.float32)
    want = run_ort(gn(18), {"x": x})
    with pytest.raises(EngineError):
        run_ort(gn(17), {"x": x})
    np.testing.assert_allclose(run_openvino(gn(17), {"x": x}), want, atol=1e-4)  # OpenVINO runs it
    assert [f.node for f in lint(save(gn(17), tmp_path, "gn17.onnx"), "ort", "GL2002")] == ["gn"]
    assert [f.severity.label for f in lint(save(gn(17), tmp_path, "gn17.onnx"), "openvino", "GL2002")] == [
        "warning"]


def test_scatter_deprecated_at_11(tmp_path):
    def scatter(opset: int) -> onnx.ModelProto:
        return tiny([helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=0, name="sc")],
                    {"x": (np.float32, [3])}, {"y": (np.float32, [3])}, opset,
                    {"i": np.array([1], np.int64), "u": np.array([5.0], np.float32)})

    x = np.zeros(3, np.float32)
    np.testing.assert_array_equal(run_ort(scatter(10), {"x": x}), [0, 5, 0])
    with pytest.raises(EngineError):
        run_ort(scatter(11), {"x": x})
    np.testing.assert_array_equal(run_openvino(scatter(11), {"x": x}), [0, 5, 0])  # OpenVINO runs it
    assert [f.node for f in lint(save(scatter(11), tmp_path, "s11.onnx"), "ort", "GL2002")] == ["sc"]
    assert lint(save(scatter(10), tmp_path, "s10.onnx"), "ort", "GL2002") == []
