"""GL2001 resize-coordinate-drift: each claim shown with onnxruntime / onnx.reference, then linted."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, version_converter

from testmodels.export_drift import EngineError, lint, run_openvino, run_ort, run_reference, save, tiny

X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
SCALES = np.array([1, 1, 2, 2], np.float32)


def resize10(mode: str = "linear") -> onnx.ModelProto:
    return tiny([helper.make_node("Resize", ["x", "scales"], ["y"], mode=mode, name="up")],
                {"x": (np.float32, [1, 1, 4, 4])}, {"y": (np.float32, [1, 1, 8, 8])}, 10, {"scales": SCALES})


def resize13(ctm: str, mode: str = "linear", sizes=None, **attrs) -> onnx.ModelProto:
    ins = ["x", "", "", "sizes"] if sizes is not None else ["x", "", "scales"]
    consts = {"sizes": np.array(sizes, np.int64)} if sizes is not None else {"scales": SCALES}
    out = list(sizes) if sizes is not None else [1, 1, 8, 8]
    node = helper.make_node("Resize", ins, ["y"], mode=mode, coordinate_transformation_mode=ctm, name="rs", **attrs)
    return tiny([node], {"x": (np.float32, [1, 1, 4, 4])}, {"y": (np.float32, out)}, 13, consts)


def test_resize10_upgrade_shifts_results(tmp_path):
    old = resize10()
    before = run_ort(old, {"x": X})
    converted = version_converter.convert_version(old, 13)
    after = run_ort(converted, {"x": X})
    # Resize-10 is asymmetric: 0, .5, 1, ...; the converted node computes half_pixel: 0, .25, .75, ...
    np.testing.assert_allclose(before[0, 0, 0, :3], [0, 0.5, 1.0])
    np.testing.assert_allclose(after[0, 0, 0, :3], [0, 0.25, 0.75])
    # nearest too: Resize-10 nearest is asymmetric + floor (onnxruntime and OpenVINO agree)
    near, s = resize10("nearest"), np.array([1, 1, 1, 1.7], np.float32)
    near.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(s, "scales"))
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 1, 6)
    near.graph.input[0].type.tensor_type.shape.dim[3].dim_value = 6
    near.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 1
    del near.graph.output[0].type.tensor_type.shape.dim[:]
    floor = tiny([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                                   coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
                 {"x": (np.float32, [1, 1, 1, 6])}, {"y": (np.float32, None)}, 13, {"scales": s})
    n10 = run_ort(near, {"x": x})
    np.testing.assert_array_equal(n10, run_ort(floor, {"x": x}))
    np.testing.assert_array_equal(n10, run_openvino(near, {"x": x}))
    assert not np.array_equal(n10, run_ort(version_converter.convert_version(near, 13), {"x": x}))

    found = lint(save(old, tmp_path, "r10.onnx"), "ort", "GL2001")
    assert [(f.rule_id, f.node) for f in found] == [("GL2001", "up")]
    rw = found[0].rewrite
    assert rw.name == "resize-coordinate-mode" and rw.safe
    assert rw.params == {"node": "up", "mode": "asymmetric", "opset": 11}
    assert found[0].properties["drift"] == "resize-10-asymmetric" and found[0].properties["effect"] == "silent"

    # the suggested rewrite, applied by hand before converting, keeps Resize-10's numbers
    fixed = version_converter.convert_version(old, 13)
    fixed.graph.node[-1].attribute.append(helper.make_attribute("coordinate_transformation_mode", "asymmetric"))
    np.testing.assert_allclose(run_ort(fixed, {"x": X}), before)
    assert lint(save(fixed, tmp_path, "fixed.onnx"), "ort", "GL2001") == []


def test_pytorch_half_pixel_differs_on_length_1(tmp_path):
    import torch

    hp = run_ort(resize13("half_pixel", sizes=[1, 1, 1, 3]), {"x": X})
    php = run_ort(resize13("pytorch_half_pixel", sizes=[1, 1, 1, 3]), {"x": X})
    ref = run_reference(resize13("pytorch_half_pixel", sizes=[1, 1, 1, 3]), {"x": X})
    want = torch.nn.functional.interpolate(torch.tensor(X), size=(1, 3), mode="bilinear", align_corners=False)
    np.testing.assert_allclose(hp, want.numpy(), rtol=1e-5)
    np.testing.assert_allclose(php, ref, rtol=1e-5)
    assert np.abs(php - hp).max() > 5.0  # 0.17 vs 6.17: the length-1 axis samples row 0
    # with no length-1 output the two modes agree, and the rule stays quiet
    same_a = run_ort(resize13("pytorch_half_pixel"), {"x": X})
    np.testing.assert_allclose(same_a, run_ort(resize13("half_pixel"), {"x": X}))

    found = lint(save(resize13("pytorch_half_pixel", sizes=[1, 1, 1, 3]), tmp_path, "p.onnx"), "trt", "GL2001")
    assert [(f.node, f.properties["axes"]) for f in found] == [("rs", [2])]
    assert found[0].rewrite.params["mode"] == "half_pixel" and not found[0].rewrite.safe
    assert lint(save(resize13("pytorch_half_pixel"), tmp_path, "q.onnx"), "trt", "GL2001") == []


def test_tf_half_pixel_for_nn_removed_at_13(tmp_path):
    m = resize13("tf_half_pixel_for_nn", mode="nearest", nearest_mode="floor")
    ort_out = run_ort(m, {"x": X})  # onnxruntime still runs it (with a deprecation warning)
    with pytest.raises(EngineError, match="tf_half_pixel_for_nn"):
        run_reference(m, {"x": X})  # the reference rejects it
    found = lint(save(m, tmp_path, "t.onnx"), "ort", "GL2001")
    assert [f.node for f in found] == ["rs"]
    rw = found[0].rewrite
    assert rw.params == {"node": "rs", "mode": "half_pixel", "nearest_mode": "round_prefer_ceil"} and rw.safe
    # the suggested replacement is exactly equivalent, on both engines
    eq = resize13("half_pixel", mode="nearest", nearest_mode="round_prefer_ceil")
    np.testing.assert_array_equal(run_ort(eq, {"x": X}), ort_out)
    np.testing.assert_array_equal(run_reference(eq, {"x": X}), ort_out)
    # at opset 11 the mode is still defined: no finding
    m11 = onnx.ModelProto()
    m11.CopyFrom(m)
    m11.opset_import[0].version = 11
    m11.graph.node[0].input[1] = "roi"
    m11.graph.initializer.append(onnx.numpy_helper.from_array(np.zeros(0, np.float32), "roi"))
    assert lint(save(m11, tmp_path, "t11.onnx"), "ort", "GL2001") == []


def test_target_modes_documented_for_trt(tmp_path):
    # cubic and antialias are valid ONNX that onnxruntime runs (and they change the numbers) ...
    cubic = resize13("half_pixel", mode="cubic")
    lin = resize13("half_pixel", mode="linear")
    assert np.abs(run_ort(cubic, {"x": X}) - run_ort(lin, {"x": X})).max() > 1e-3
    path = save(cubic, tmp_path, "c.onnx")
    # ... and TensorRT's document lists nearest/linear only, but its importer maps cubic to kCUBIC
    # (on the innermost 2 dims, as here): the source decides (rules/data/trt_source_overrides.toml
    # resize-cubic), so no error on trt either
    found = [f for f in lint(path, "trt", "GL") if f.severity.label == "error"]
    assert found == []
    assert lint(path, "ort", "GL2001") == [] and lint(path, "openvino", "GL2001") == []

    anti = tiny([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1, name="aa")],
                {"x": (np.float32, [1, 1, 4, 4])}, {"y": (np.float32, [1, 1, 2, 2])}, 18,
                {"scales": np.array([1, 1, 0.5, 0.5], np.float32)})
    plain = tiny([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", name="aa")],
                 {"x": (np.float32, [1, 1, 4, 4])}, {"y": (np.float32, [1, 1, 2, 2])}, 18,
                 {"scales": np.array([1, 1, 0.5, 0.5], np.float32)})
    assert not np.allclose(run_ort(anti, {"x": X}), run_ort(plain, {"x": X}))
    found = [f for f in lint(save(anti, tmp_path, "aa.onnx"), "trt", "GL") if f.severity.label == "error"]
    assert [f.rule_id for f in found] == ["GL1004"] and "antialias" in found[0].message


def test_half_pixel_symmetric_refused_by_openvino(tmp_path):
    m = tiny([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                               coordinate_transformation_mode="half_pixel_symmetric", name="hps")],
             {"x": (np.float32, [1, 1, 4, 4])}, {"y": (np.float32, [1, 1, 6, 6])}, 19,
             {"scales": np.array([1, 1, 1.5, 1.5], np.float32)})
    run_ort(m, {"x": X})  # onnxruntime runs it
    with pytest.raises(EngineError):
        run_openvino(m, {"x": X})  # OpenVINO's frontend refuses it
    path = save(m, tmp_path, "hps.onnx")
    for target in ("openvino", "trt"):
        found = lint(path, target, "GL2001")
        assert [(f.node, f.severity.label, f.properties["attr_value"]) for f in found] == [
            ("hps", "error", "half_pixel_symmetric")], target
        assert found[0].rewrite.params["mode"] == "half_pixel" and not found[0].rewrite.safe
    assert lint(path, "ort", "GL2001") == []
