"""GL2008 gelu-tanh-approximation: Gelu-20's default vs the tanh subgraph, shown with onnxruntime."""

from __future__ import annotations

import numpy as np
from onnx import helper

from testmodels.export_drift import exports, lint, run_ort, save, tiny
from testmodels.export_drift import file_name as fname

X = np.linspace(-4, 4, 401, dtype=np.float32)


def gelu20(approximate: str | None):
    attrs = {} if approximate is None else {"approximate": approximate}
    return tiny([helper.make_node("Gelu", ["x"], ["y"], **attrs)], {"x": (np.float32, [401])},
                {"y": (np.float32, [401])}, 20)


def test_tanh_subgraph_matches_only_approximate_tanh(tmp_path):
    import onnx

    exact, tanh = run_ort(gelu20(None), {"x": X}), run_ort(gelu20("tanh"), {"x": X})
    gap = np.abs(exact - tanh).max()
    assert 1e-4 < gap < 1e-3  # what a fusion that drops approximate='tanh' changes

    # the real export (torch, dynamo, opset 18) computes the tanh form
    path = f"{exports()}/{fname('gelu_tanh', 18, True)}"
    x = X[:80].reshape(2, 5, 8)
    sub = run_ort(onnx.load(path), {"x": x}).reshape(-1)
    np.testing.assert_allclose(sub, tanh[:80], atol=1e-6)
    assert np.abs(sub - exact[:80]).max() > 1e-4

    found = lint(path, "trt", "GL2008")
    assert len(found) == 1 and found[0].op_type == "Tanh" and found[0].severity.label == "info"
    assert found[0].rewrite.name == "fuse-gelu" and found[0].rewrite.params["approximate"] == "tanh"
    assert len(found[0].rewrite.params["nodes"]) == 4
    # an erf GELU (exact) or a plain Tanh is not this pattern
    plain = tiny([helper.make_node("Tanh", ["x"], ["y"])], {"x": (np.float32, [4])}, {"y": (np.float32, [4])}, 17)
    assert lint(save(plain, tmp_path, "t.onnx"), "trt", "GL2008") == []
    assert lint(save(gelu20(None), tmp_path, "g.onnx"), "trt", "GL2008") == []
    # reported wherever the target's opset range reaches Gelu-20 (TensorRT 10.1 reads up to 20)
    assert len(lint(path, "trt@10.1", "GL2008")) == 1 and len(lint(path, "openvino", "GL2008")) == 1
