"""GL2005 groupnorm-scale-per-group: GroupNormalization-18 vs 21, shown with three engines."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, version_converter

from testmodels.export_drift import EngineError, lint, run_openvino, run_ort, run_reference, save, tiny

X = np.random.RandomState(0).randn(1, 4, 3, 3).astype(np.float32)
G_SCALE, G_BIAS = np.array([1.0, 2.0], np.float32), np.array([0.5, -0.5], np.float32)


def gn(opset: int, scale: np.ndarray, bias: np.ndarray, groups: int = 2, channels: int = 4) -> onnx.ModelProto:
    shape = [1, channels, 3, 3]
    return tiny([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, name="gn")],
                {"x": (np.float32, shape)}, {"y": (np.float32, shape)}, opset, {"s": scale, "b": bias})


def by_hand(x: np.ndarray, groups: int, scale_c: np.ndarray, bias_c: np.ndarray) -> np.ndarray:
    g = x.reshape(x.shape[0], groups, -1)
    n = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    return n * scale_c.reshape(1, -1, 1, 1) + bias_c.reshape(1, -1, 1, 1)


def test_groupnorm18_scale_is_per_group(tmp_path):
    want = by_hand(X, 2, np.repeat(G_SCALE, 2), np.repeat(G_BIAS, 2))
    old = gn(18, G_SCALE, G_BIAS)
    for run in (run_ort, run_openvino, run_reference):
        np.testing.assert_allclose(run(old, {"x": X}), want, atol=1e-4)
    # the same per-group tensors at opset 21 are refused everywhere ...
    for run in (run_ort, run_openvino, run_reference):
        with pytest.raises(EngineError):
            run(gn(21, G_SCALE, G_BIAS), {"x": X})
    # ... including what onnx.version_converter makes of the opset-18 model
    with pytest.raises(EngineError):
        run_ort(version_converter.convert_version(old, 21), {"x": X})
    # per-channel tensors at 21 (the rewrite) give the opset-18 numbers
    new = gn(21, np.repeat(G_SCALE, 2), np.repeat(G_BIAS, 2))
    np.testing.assert_allclose(run_ort(new, {"x": X}), want, atol=1e-4)

    found = lint(save(old, tmp_path, "gn18.onnx"), "trt", "GL2005")
    assert [(f.node, f.severity.label, f.rewrite.name, f.properties["channels"]) for f in found] == [
        ("gn", "warning", "groupnorm-per-channel", 4)]
    assert lint(save(new, tmp_path, "gn21.onnx"), "trt", "GL2005") == []
    bad = lint(save(gn(21, G_SCALE, G_BIAS), tmp_path, "bad21.onnx"), "ort", "GL2005")
    assert [(f.node, f.severity.label) for f in bad] == [("gn", "error")]


def test_one_channel_per_group_is_not_drift(tmp_path):
    s, b = np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.zeros(4, np.float32)
    np.testing.assert_allclose(run_ort(gn(18, s, b, groups=4), {"x": X}), run_ort(gn(21, s, b, groups=4), {"x": X}),
                               atol=1e-5)
    assert lint(save(gn(18, s, b, groups=4), tmp_path, "g.onnx"), "ort", "GL2005") == []
