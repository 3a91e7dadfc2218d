"""GL2004 attribute-became-input: stale attributes past their opset, shown with three engines."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from testmodels.export_drift import (
    EngineError,
    lint,
    openvino_subprocess,
    run_openvino,
    run_ort,
    run_reference,
    save,
    tiny,
)

X = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)


def one(op: str, opset: int, inputs=("x",), out_shape=None, consts=None, **attrs) -> onnx.ModelProto:
    return tiny([helper.make_node(op, list(inputs), ["y"], name="n", **attrs)], {"x": (np.float32, [2, 3, 4])},
                {"y": (np.float32, out_shape)}, opset, consts)


def test_stale_axes_attribute_at_18(tmp_path):
    stale = one("ReduceMean", 18, axes=[1])
    right = one("ReduceMean", 18, inputs=("x", "axes"), consts={"axes": np.array([1], np.int64)})
    want = X.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(run_ort(right, {"x": X}), want, rtol=1e-5)
    with pytest.raises(EngineError, match="Unrecognized attribute: axes"):
        run_ort(stale, {"x": X})  # onnxruntime refuses it
    ov = run_openvino(stale, {"x": X})  # OpenVINO ignores the attribute and reduces every axis
    assert ov.size == 1 and np.isclose(ov.reshape(-1)[0], X.mean(), atol=1e-5)

    found = lint(save(stale, tmp_path, "r.onnx"), "openvino", "GL2004")
    assert [(f.node, f.severity.label, f.properties["attributes"]) for f in found] == [("n", "error", ["axes"])]
    assert found[0].rewrite.name == "attribute-to-input" and found[0].rewrite.params["input"] == 1
    assert "ignores the attribute" in found[0].message  # the engine note for the active target
    assert lint(save(right, tmp_path, "ok.onnx"), "openvino", "GL2004") == []
    assert lint(save(one("ReduceMean", 17, axes=[1]), tmp_path, "r17.onnx"), "ort", "GL2004") == []


@pytest.mark.parametrize(("op", "opset", "attrs"), [
    ("ReduceSum", 13, {"axes": [1]}),
    ("Squeeze", 13, {"axes": [0]}),
    ("Split", 13, {"split": [1, 2], "axis": 1}),
    ("Slice", 10, {"starts": [0], "ends": [1], "axes": [0]}),
    ("TopK", 10, {"k": 2}),
])
def test_other_stale_attributes_rejected(op, opset, attrs, tmp_path):
    m = one(op, opset, **attrs)
    with pytest.raises(EngineError):
        run_ort(m, {"x": X})
    found = lint(save(m, tmp_path, "m.onnx"), "ort", "GL2004")
    assert [f.node for f in found] == ["n"]


def test_stale_clip_attributes_at_11(tmp_path):
    stale = one("Clip", 11, min=0.0, max=1.0)
    old = one("Clip", 10, min=0.0, max=1.0)
    np.testing.assert_allclose(run_ort(old, {"x": X}), np.clip(X, 0, 1))
    with pytest.raises(EngineError):
        run_ort(stale, {"x": X})
    with pytest.raises(EngineError):
        run_reference(stale, {"x": X})
    np.testing.assert_allclose(run_openvino(stale, {"x": X}), X)  # OpenVINO silently does not clip
    assert [f.properties["attributes"] for f in lint(save(stale, tmp_path, "c.onnx"), "ort", "GL2004")] == [
        ["min", "max"]]
    assert lint(save(old, tmp_path, "c10.onnx"), "ort", "GL2004") == []


def test_stale_pad_attribute_at_11(tmp_path):
    stale = one("Pad", 11, pads=[0, 0, 1, 0, 0, 1])
    with pytest.raises(EngineError, match="input size"):
        run_ort(stale, {"x": X})
    assert run_reference(stale, {"x": X}).shape == (2, 3, 6)  # the reference pads by the attribute
    assert openvino_subprocess(stale) < 0  # OpenVINO's converter dies on a signal (segfault)
    found = lint(save(stale, tmp_path, "p.onnx"), "openvino", "GL2004")
    assert [f.node for f in found] == ["n"] and "crashes" in found[0].message


def test_trt_needs_constant_axes(tmp_path):
    # axes computed at run time: onnxruntime is fine, TensorRT's parser needs an initializer
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["g"]),
             helper.make_node("Sub", ["g", "three"], ["axes"]),  # 3 - 3 = 0 ... any computed value
             helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="rm")]
    m = tiny(nodes, {"x": (np.float32, [2, 3, 4])}, {"y": (np.float32, None)}, 18,
             {"i": np.array([1], np.int64), "three": np.array([3], np.int64)})
    np.testing.assert_allclose(run_ort(m, {"x": X}), X.mean(0, keepdims=True), rtol=1e-5)
    path = save(m, tmp_path, "dyn.onnx")
    # the parser's operator table says so (GL1004, with the row); GL2004 is about stale attributes only
    (trt,) = lint(path, "trt", "GL1004")
    assert trt.node == "rm" and trt.severity.label == "error" and "computed at run time" in trt.message
    assert lint(path, "trt", "GL2004") == [] and lint(path, "ort", "GL1004") == []


def test_stale_dft_axis_at_20(tmp_path):
    def dft(opset: int) -> onnx.ModelProto:
        return tiny([helper.make_node("DFT", ["x"], ["y"], axis=1, name="dft")], {"x": (np.float32, [1, 4, 1])},
                    {"y": (np.float32, [1, 4, 2])}, opset)

    x = np.arange(4, dtype=np.float32).reshape(1, 4, 1)
    np.testing.assert_allclose(run_ort(dft(17), {"x": x})[0, :, 0], np.fft.fft(x[0, :, 0]).real, atol=1e-4)
    with pytest.raises(EngineError, match="axis"):
        run_ort(dft(20), {"x": x})
    assert [f.node for f in lint(save(dft(20), tmp_path, "d20.onnx"), "ort", "GL2004")] == ["dft"]
    assert lint(save(dft(17), tmp_path, "d17.onnx"), "ort", "GL2004") == []
