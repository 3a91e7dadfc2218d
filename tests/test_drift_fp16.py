"""GL2007 fp16-decomposed-normalization: fp16 overflow shown with onnx.reference, target-aware lint."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from testmodels.export_drift import lint, run_ort, run_reference, save, tiny

X = (np.random.RandomState(0).randn(2, 8) * 400).astype(np.float32)  # |x - mean| well above 256


def decomposed_ln(dtype) -> onnx.ModelProto:
    nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["m"], name="mean"),
             helper.make_node("Sub", ["x", "m"], ["d"], name="sub"),
             helper.make_node("Pow", ["d", "two"], ["p"], name="sq"),
             helper.make_node("ReduceMean", ["p", "axes"], ["v"], name="var"),
             helper.make_node("Add", ["v", "eps"], ["ve"], name="addeps"),
             helper.make_node("Sqrt", ["ve"], ["s"], name="sqrt"),
             helper.make_node("Div", ["d", "s"], ["y"], name="div")]
    return tiny(nodes, {"x": (dtype, [2, 8])}, {"y": (dtype, [2, 8])}, 18,
                {"axes": np.array([-1], np.int64), "two": np.array(2.0, dtype), "eps": np.array(1e-5, dtype)})


def fused_ln(dtype) -> onnx.ModelProto:
    return tiny([helper.make_node("LayerNormalization", ["x", "sc"], ["y"], axis=-1, name="ln")],
                {"x": (dtype, [2, 8])}, {"y": (dtype, [2, 8])}, 18, {"sc": np.ones(8, dtype)})


def test_decomposed_layernorm_overflows_in_fp16(tmp_path):
    want = (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(run_reference(decomposed_ln(np.float32), {"x": X}), want, atol=1e-4)
    x16 = X.astype(np.float16)
    fp16 = run_reference(decomposed_ln(np.float16), {"x": x16})
    assert np.abs(fp16).max() == 0  # (x - mean)^2 overflowed to inf: every row normalized to 0
    # the fused op (the rewrite target) keeps its statistics in fp32 on onnxruntime
    np.testing.assert_allclose(run_ort(fused_ln(np.float16), {"x": x16}).astype(np.float32), want, atol=5e-3)

    path = save(decomposed_ln(np.float32), tmp_path, "ln.onnx")
    gpu = lint(path, "openvino@gpu", "GL2007")
    assert [(f.node, f.severity.label) for f in gpu] == [("sq", "warning")]
    rw = gpu[0].rewrite
    assert rw.name == "fuse-layernorm"
    assert rw.params["nodes"] == ["mean", "sub", "sq", "var", "addeps", "sqrt", "div"]
    assert rw.params["axis"] == [-1] and abs(rw.params["epsilon"] - 1e-5) < 1e-9
    assert [f.severity.label for f in lint(path, "openvino@npu", "GL2007")] == ["warning"]
    assert [f.severity.label for f in lint(path, "trt", "GL2007")] == ["info"]  # fp16 is a build flag there
    assert lint(path, "openvino", "GL2007") == [] and lint(path, "ort", "GL2007") == []  # fp32 CPU targets
    assert lint(save(fused_ln(np.float32), tmp_path, "f.onnx"), "openvino@gpu", "GL2007") == []


def test_unstable_softmax_overflows_in_fp16(tmp_path):
    def manual(dtype, stable: bool) -> onnx.ModelProto:
        nodes = []
        src = "x"
        if stable:
            nodes += [helper.make_node("ReduceMax", ["x", "axes"], ["mx"]), helper.make_node("Sub", ["x", "mx"], ["z"])]
            src = "z"
        nodes += [helper.make_node("Exp", [src], ["e"], name="exp"),
                  helper.make_node("ReduceSum", ["e", "axes"], ["s"], name="sum"),
                  helper.make_node("Div", ["e", "s"], ["y"], name="div")]
        return tiny(nodes, {"x": (dtype, [2, 4])}, {"y": (dtype, [2, 4])}, 18, {"axes": np.array([-1], np.int64)})

    x = np.array([[1, 2, 3, 12], [0, 0, 0, 0]], np.float32)
    ref32 = run_reference(manual(np.float32, False), {"x": x})
    assert np.isfinite(ref32).all()
    ref16 = run_reference(manual(np.float16, False), {"x": x.astype(np.float16)})
    assert np.isnan(ref16[0]).any()  # exp(12) > 65504 -> inf / inf
    np.testing.assert_allclose(run_reference(manual(np.float16, True), {"x": x.astype(np.float16)}).astype(np.float32),
                               ref32, atol=2e-3)

    found = lint(save(manual(np.float32, False), tmp_path, "u.onnx"), "openvino@gpu", "GL2007")
    assert [(f.node, f.rewrite.name) for f in found] == [("exp", "keep-fp32")]
    assert lint(save(manual(np.float32, True), tmp_path, "s.onnx"), "openvino@gpu", "GL2007") == []
