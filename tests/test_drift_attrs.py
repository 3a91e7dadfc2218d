"""GL2009 attribute-semantics: attribute values whose meaning depends on opset or engine."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from testmodels.export_drift import EngineError, lint, run_openvino, run_ort, run_reference, save, tiny

RS = np.random.RandomState(0)


def mod(fmod: int | None, opset: int = 13) -> onnx.ModelProto:
    attrs = {} if fmod is None else {"fmod": fmod}
    return tiny([helper.make_node("Mod", ["a", "b"], ["y"], name="mod", **attrs)],
                {"a": (np.float32, [4]), "b": (np.float32, [4])}, {"y": (np.float32, [4])}, opset)


def test_mod_fmod0_float(tmp_path):
    feeds = {"a": np.array([-3.5, 3.5, -1.0, 2.0], np.float32), "b": np.full(4, 2.0, np.float32)}
    with pytest.raises(EngineError, match="fmod"):
        run_ort(mod(None), feeds)
    with pytest.raises(EngineError):
        run_openvino(mod(None), feeds)
    floor_mod = run_reference(mod(None), feeds)  # the reference computes Python's floor-mod ...
    c_mod = run_ort(mod(1), feeds)  # ... while fmod=1 is C's remainder: they differ on negatives
    np.testing.assert_allclose(floor_mod, np.mod(feeds["a"], 2.0))
    np.testing.assert_allclose(c_mod, np.fmod(feeds["a"], 2.0))
    assert not np.allclose(floor_mod, c_mod)

    found = lint(save(mod(None), tmp_path, "m.onnx"), "ort", "GL2009")
    assert [(f.node, f.severity.label, f.properties["drift"]) for f in found] == [("mod", "error", "mod-fmod-float")]
    assert found[0].rewrite.params == {"node": "mod", "attribute": "fmod", "value": 1}
    assert not found[0].rewrite.safe  # changes results on negatives: not applied unless asked
    assert lint(save(mod(1), tmp_path, "m1.onnx"), "ort", "GL2009") == []
    ints = tiny([helper.make_node("Mod", ["a", "b"], ["y"])], {"a": (np.int64, [2]), "b": (np.int64, [2])},
                {"y": (np.int64, [2])}, 13)
    assert lint(save(ints, tmp_path, "mi.onnx"), "ort", "GL2009") == []  # fmod=0 is right for integers


def pool(dilations: list[int] | None) -> onnx.ModelProto:
    attrs = {"kernel_shape": [2, 2]} | ({"dilations": dilations} if dilations else {})
    out = [1, 1, 3, 3] if not dilations or dilations == [1, 1] else [1, 1, 2, 2]
    return tiny([helper.make_node("MaxPool", ["x"], ["y"], name="mp", **attrs)], {"x": (np.float32, [1, 1, 4, 4])},
                {"y": (np.float32, out)}, 13)


def test_pool_dilations_matter(tmp_path):
    x = RS.randn(1, 1, 4, 4).astype(np.float32)
    dil = run_ort(pool([2, 2]), {"x": x})
    np.testing.assert_allclose(dil[0, 0, 0, 0], x[0, 0, ::2, ::2][:2, :2].max())  # every other pixel
    assert dil.shape != run_ort(pool(None), {"x": x}).shape
    path = save(pool([2, 2]), tmp_path, "d.onnx")
    found = lint(path, "trt", "GL2009")
    assert [(f.node, f.severity.label, f.properties["attr_value"]) for f in found] == [("mp", "error", [2, 2])]
    assert lint(path, "ort", "GL2009") == []  # a TensorRT restriction: other targets run it
    assert lint(save(pool([1, 1]), tmp_path, "o.onnx"), "trt", "GL2009") == []


def test_topk_unsorted_is_no_drift_on_trt(tmp_path):
    """TopK sorted=0 leaves the order unspecified. operators.md says TensorRT needs sorted=1, but
    neither its TopK checker nor its importer reads the attribute (rules/data/trt_source_overrides.toml):
    the layer returns sorted values, which sorted=0 permits, so no target gets a finding."""
    topk = tiny([helper.make_node("TopK", ["x", "k"], ["v", "i"], sorted=0, name="tk")], {"x": (np.float32, [6])},
                {"v": (np.float32, [3]), "i": (np.int64, [3])}, 13, {"k": np.array([3], np.int64)})
    x = np.array([1, 5, 2, 4, 3, 0], np.float32)
    assert sorted(run_ort(topk, {"x": x}).tolist()) == [3, 4, 5]  # same set, order unspecified
    path = save(topk, tmp_path, "tk.onnx")
    for target in ("trt", "trt@10.1", "openvino", "ort"):
        assert lint(path, target, "GL2") == [], target


def bn(training: int) -> onnx.ModelProto:
    c = 3
    consts = {"s": np.ones(c, np.float32), "b": np.zeros(c, np.float32), "m": np.full(c, 5.0, np.float32),
              "v": np.full(c, 4.0, np.float32)}
    outs = ["y", "rm", "rv"] if training else ["y"]  # training mode must also output the running stats
    return tiny([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], outs, training_mode=training,
                                  name="bn")], {"x": (np.float32, [4, c, 2])},
                {o: (np.float32, [4, c, 2] if o == "y" else [c]) for o in outs}, 15, consts)


def test_batchnorm_training_mode(tmp_path):
    x = RS.randn(4, 3, 2).astype(np.float32)
    infer, train = run_ort(bn(0), {"x": x}), run_ort(bn(1), {"x": x})
    np.testing.assert_allclose(infer, (x - 5.0) / np.sqrt(4.0 + 1e-5), rtol=1e-4)  # running statistics
    assert np.abs(train - infer).max() > 1.0  # batch statistics instead
    found = lint(save(bn(1), tmp_path, "bn.onnx"), "trt", "GL2009")
    assert [(f.node, f.severity.label, f.rewrite.params["value"]) for f in found] == [("bn", "warning", 0)]
    assert lint(save(bn(0), tmp_path, "bn0.onnx"), "trt", "GL2009") == []


def test_dropout_training_input(tmp_path):
    def dropout(training: bool) -> onnx.ModelProto:
        return tiny([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="do", seed=0)],
                    {"x": (np.float32, [1000])}, {"y": (np.float32, [1000])}, 13,
                    {"r": np.array(0.5, np.float32), "t": np.array(training)})

    x = np.ones(1000, np.float32)
    np.testing.assert_array_equal(run_ort(dropout(False), {"x": x}), x)
    zeros = int((run_ort(dropout(True), {"x": x}) == 0).sum())
    assert 350 < zeros < 650  # about half the activations dropped at "inference"
    found = lint(save(dropout(True), tmp_path, "d.onnx"), "trt", "GL2009")
    assert [(f.node, f.rewrite.name) for f in found] == [("do", "fold-constants")]
    assert lint(save(dropout(False), tmp_path, "d0.onnx"), "trt", "GL2009") == []


def test_pad_wrap_on_openvino(tmp_path):
    pad = tiny([helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap", name="pad")], {"x": (np.float32, [3, 4])},
               {"y": (np.float32, [3, 6])}, 19, {"p": np.array([0, 1, 0, 1], np.int64)})
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run_ort(pad, {"x": x})[0], [3, 0, 1, 2, 3, 0])
    with pytest.raises(EngineError):
        run_openvino(pad, {"x": x})
    path = save(pad, tmp_path, "pad.onnx")
    assert [(f.node, f.severity.label) for f in lint(path, "openvino", "GL2009")] == [("pad", "error")]
    assert lint(path, "ort", "GL2009") == []
