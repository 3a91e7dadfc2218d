"""GL2003 softmax-flatten-semantics: opset<13 Softmax is 2-D; engines disagree on it today."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, version_converter

from testmodels.export_drift import lint, run_openvino, run_ort, run_reference, save, tiny

X = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)


def softmax(opset: int, op: str = "Softmax", axis: int | None = 1, shape=(2, 3, 4)) -> onnx.ModelProto:
    attrs = {} if axis is None else {"axis": axis}
    return tiny([helper.make_node(op, ["x"], ["y"], name="sm", **attrs)], {"x": (np.float32, list(shape))},
                {"y": (np.float32, list(shape))}, opset)


def flat_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """The opset<13 meaning: normalize over the flattened dims [axis:]."""
    f = x.reshape(int(np.prod(x.shape[:axis])), -1)
    e = np.exp(f - f.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)).reshape(x.shape)


def test_opset11_softmax_engines_disagree(tmp_path):
    ort11, ort13 = run_ort(softmax(11), {"x": X}), run_ort(softmax(13), {"x": X})
    np.testing.assert_allclose(ort11, flat_softmax(X, 1), rtol=1e-5)  # onnxruntime follows the spec ...
    assert np.abs(ort11 - ort13).max() > 0.1  # ... so the meaning changes at 13
    ov11 = run_openvino(softmax(11), {"x": X})
    np.testing.assert_allclose(ov11, ort13, rtol=1e-5)  # OpenVINO computes per-axis even at opset 11
    np.testing.assert_allclose(run_reference(softmax(11), {"x": X}), ort13, rtol=1e-5)  # and so does onnx.reference

    path = save(softmax(11), tmp_path, "s11.onnx")
    trt = lint(path, "trt", "GL2003")
    assert [(f.node, f.severity.label, f.rewrite.name) for f in trt] == [
        ("sm", "warning", "softmax-keep-2d-semantics")]
    ov = lint(path, "openvino", "GL2003")
    assert [(f.node, f.severity.label) for f in ov] == [("sm", "error")]  # wrong results on that target today

    # the rewrite's meaning (Flatten + Softmax + Reshape) is the same on every engine and opset
    wrapped = tiny([helper.make_node("Flatten", ["x"], ["f"], axis=1), helper.make_node("Softmax", ["f"], ["s"], axis=1),
                    helper.make_node("Shape", ["x"], ["shp"]), helper.make_node("Reshape", ["s", "shp"], ["y"])],
                   {"x": (np.float32, [2, 3, 4])}, {"y": (np.float32, [2, 3, 4])}, 11)
    for run in (run_ort, run_openvino, run_reference):
        np.testing.assert_allclose(run(wrapped, {"x": X}), ort11, rtol=1e-5)
    assert lint(save(wrapped, tmp_path, "w.onnx"), "openvino", "GL2003") == []
    # onnx.version_converter keeps the meaning too (inserts the same wrapping)
    np.testing.assert_allclose(run_ort(version_converter.convert_version(softmax(11), 13), {"x": X}), ort11,
                               rtol=1e-5)


@pytest.mark.parametrize("op", ["LogSoftmax", "Hardmax"])
def test_family_members_drift_too(op, tmp_path):
    a, b = run_ort(softmax(11, op), {"x": X}), run_ort(softmax(13, op), {"x": X})
    assert not np.allclose(a, b)
    assert [f.node for f in lint(save(softmax(11, op), tmp_path, "m.onnx"), "ort", "GL2003")] == ["sm"]


def test_no_finding_where_meanings_agree(tmp_path):
    # last axis, rank 2, or opset 13: flattened and per-axis meanings coincide
    last = softmax(11, axis=2)
    np.testing.assert_allclose(run_ort(last, {"x": X}), run_ort(softmax(13, axis=2), {"x": X}), rtol=1e-6)
    for i, m in enumerate([last, softmax(11, axis=-1), softmax(11, axis=None, shape=(2, 3)), softmax(13)]):
        assert lint(save(m, tmp_path, f"ok{i}.onnx"), "openvino", "GL2003") == []
    # default axis (1) on rank 3 does drift
    assert [f.properties["axis"] for f in lint(save(softmax(11, axis=None), tmp_path, "d.onnx"), "ort", "GL2003")] \
        == [1]


def test_unknown_rank(tmp_path):
    def unranked(axis: int) -> onnx.ModelProto:
        return tiny([helper.make_node("Softmax", ["x"], ["y"], axis=axis, name="sm")], {"x": (np.float32, None)},
                    {"y": (np.float32, None)}, 11)

    assert lint(save(unranked(-1), tmp_path, "a.onnx"), "ort", "GL2003") == []  # last axis at any rank
    found = lint(save(unranked(1), tmp_path, "b.onnx"), "ort", "GL2003")
    assert [(f.node, f.properties.get("rank")) for f in found] == [("sm", None)]


def test_unknown_rank_is_a_warning_that_says_so(tmp_path):
    """With the rank unknown, whether axis is the last one (both meanings agree) is unknown too."""
    m = tiny([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)], {"x": (np.float32, None)},
             {"y": (np.float32, None)}, 11)
    for target in ("openvino", "ort"):
        (f,) = lint(save(m, tmp_path, "u.onnx"), target, "GL2003")
        assert f.severity.label == "warning" and f.properties["unknown"] == ["rank"]
        assert "unknown rank" in f.message and "basis" not in f.properties


def test_attention_scores_of_a_real_opset11_export_are_clean():
    """torch at opset 11 exports attention's softmax(dim=-1) as Softmax(axis=3) on a rank-4 input whose
    rank ONNX inference leaves open (a Reshape to a computed shape): graphlint's shape pass knows it."""
    import glob
    import os

    from testmodels.fp_classes import models

    path = glob.glob(os.path.join(models(), "bert11.onnx"))[0]
    sm = [n for n in onnx.load(path).graph.node if n.op_type == "Softmax"]
    assert sm and all(a.i == 3 for n in sm for a in n.attribute if a.name == "axis")
    assert onnx.load(path).opset_import[0].version == 11
    for target in ("openvino", "ort", "trt"):
        assert lint(path, target, "GL2003") == []


def test_classifier_head_with_unit_trailing_dims_is_clean(tmp_path):
    """Softmax-1 axis=1 on [N, C, 1, 1] (the caffe2 SqueezeNet of onnx's model zoo): the flattened dims
    [1:] hold axis 1's values alone, so the spec, onnxruntime and OpenVINO agree and nothing is reported."""
    head = np.random.RandomState(1).randn(2, 5, 1, 1).astype(np.float32)
    m = softmax(9, shape=(2, 5, 1, 1))
    ort9, ov9 = run_ort(m, {"x": head}), run_openvino(m, {"x": head})
    np.testing.assert_allclose(ort9, flat_softmax(head, 1), rtol=1e-5)
    np.testing.assert_allclose(ov9, ort9, rtol=1e-5)
    path = save(m, tmp_path, "head.onnx")
    for target in ("openvino", "ort", "trt"):
        assert lint(path, target, "GL2003") == []
    # one dim after the axis that is not 1 and the meanings differ again: an error where OpenVINO runs it
    assert [f.severity.label for f in lint(save(softmax(9, shape=(2, 5, 1, 3)), tmp_path, "w.onnx"), "openvino",
                                           "GL2003")] == ["error"]


def test_dims_after_the_axis_unknown_is_a_warning_that_says_so(tmp_path):
    """Rank 4 known (a Reshape to a 4-element run-time shape), its dims not: they may all be 1."""
    m = tiny([helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Softmax", ["r"], ["y"], axis=1,
                                                                           name="sm")],
             {"x": (np.float32, [2, 6]), "s": (np.int64, [4])}, {"y": (np.float32, None)}, 11)
    (f,) = lint(save(m, tmp_path, "u.onnx"), "openvino", "GL2003")
    assert f.severity.label == "warning" and f.properties["unknown"] == ["shape"] and f.properties["rank"] == 4
    assert "not all are known" in f.message and "basis" not in f.properties
