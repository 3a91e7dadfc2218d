"""GL4xx input-contract rules on real exports; the range claims are checked by running ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from _multimodal import lint, path


def _run(file: str, feed: dict) -> np.ndarray:
    sess = ort.InferenceSession(file, providers=["CPUExecutionProvider"])
    return sess.run(None, feed)[0]


def _image(batch: int = 2) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (batch, 32, 32, 3), dtype=np.uint8)


def test_uint8_image_normalized_without_div255_is_an_error_and_really_wrong():
    found = lint(path("vision_uint8_nodiv.onnx"), "ort", "GL4001")
    assert len(found) == 1 and found[0].op_type == "Sub"
    assert found[0].rewrite.name == "input-cast-normalize"
    assert lint(path("vision_uint8.onnx"), "ort", "GL4001") == []
    # same weights (seeded): the float NCHW model fed the normalized image is the reference
    img = _image()
    mean = np.array([0.481, 0.458, 0.408], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.269, 0.261, 0.276], np.float32).reshape(1, 3, 1, 1)
    x = (img.transpose(0, 3, 1, 2).astype(np.float32) / 255.0 - mean) / std
    ref = _run(path("vision.onnx"), {"image": x.astype(np.float32)})
    good = _run(path("vision_uint8.onnx"), {"image": img})
    bad = _run(path("vision_uint8_nodiv.onnx"), {"image": img})
    np.testing.assert_allclose(good, ref, rtol=1e-4, atol=1e-4)
    assert np.abs(bad - ref).max() > 10 * np.abs(ref).max()  # runs fine, silently far off


def test_graph_that_divides_by_255_states_its_range_contract():
    found = lint(path("vision_float_div255.onnx"), "ort", "GL4002")
    assert len(found) == 1 and found[0].properties["expected_range"] == [0, 255]
    assert "0..255" in found[0].message
    assert [f.value for f in lint(path("vision_uint8.onnx"), "ort", "GL4002")] == ["image"]
    assert lint(path("vision.onnx"), "ort", "GL4002") == []
    # feeding the [0,1] floats a pipeline usually produces gives different results than 0..255
    x = np.random.default_rng(1).random((1, 3, 32, 32), dtype=np.float32)
    a = _run(path("vision_float_div255.onnx"), {"image": x * 255})
    b = _run(path("vision_float_div255.onnx"), {"image": x})
    assert not np.allclose(a, b, atol=1e-3)


def test_uint8_inside_the_network_on_trt_only():
    found = lint(path("vision_uint8_nodiv.onnx"), "trt", "GL4004")
    assert [f.op_type for f in found] == ["Transpose"]
    assert lint(path("vision_uint8.onnx"), "trt", "GL4004") == []  # Cast right at the input
    assert lint(path("vision_uint8_nodiv.onnx"), "ort", "GL4004") == []


def test_float64_and_large_int64_on_trt(tmp_path):
    import torch

    from testmodels.common import torch_export

    class Double(torch.nn.Module):
        def forward(self, x, ids):
            return x * 2.0, ids + 2**40

    f = torch_export(Double(), (torch.randn(2, 3, dtype=torch.float64), torch.tensor([1, 2])),
                     str(tmp_path / "double.onnx"), opset=17, input_names=["x", "ids"], output_names=["y", "z"])
    found = lint(f, "trt", "GL4003")
    names = {x.rewrite.name for x in found}
    assert names == {"double-to-float", "int64-to-int32"}
    assert any(x.value == "x" for x in found)
    assert lint(f, "ort", "GL4003") == []
    assert lint(path("clip_legacy.onnx"), "trt", "GL4003") == []
    sess = ort.InferenceSession(f, providers=["CPUExecutionProvider"])
    y, z = sess.run(None, {"x": np.ones((2, 3)), "ids": np.array([1, 2])})
    assert y.dtype == np.float64  # double end to end: TensorRT would compute it in float32
    assert z.max() > np.iinfo(np.int32).max  # values a narrowing engine would clamp


def test_string_input_cannot_bind_on_trt(tmp_path):
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "g",
                          [helper.make_tensor_value_info("s", TensorProto.STRING, ["n"])],
                          [helper.make_tensor_value_info("t", TensorProto.STRING, ["n"])])
    f = str(tmp_path / "str.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f)
    assert {x.value for x in lint(f, "trt", "GL4005")} == {"s", "t"}
    assert lint(f, "ort", "GL4005") == []
    assert _run(f, {"s": np.array(["a", "b"], dtype=object)}).tolist() == ["a", "b"]
    assert lint(path("clip_legacy.onnx"), "trt", "GL4005") == []


def test_output_declared_static_while_graph_is_dynamic(tmp_path):
    m = onnx.load(path("vision.onnx"))
    dim = m.graph.output[0].type.tensor_type.shape.dim[0]
    dim.Clear()
    dim.dim_value = 1
    f = str(tmp_path / "static_out.onnx")
    onnx.save(m, f)
    found = lint(f, "ort", "GL4006")
    assert len(found) == 1 and found[0].value == "logits"
    assert found[0].properties["computed"] == "[batch, 10]"
    assert lint(path("vision.onnx"), "ort", "GL4006") == []
    # ONNX Runtime returns what the graph computes, not the declaration
    out = _run(f, {"image": np.zeros((3, 3, 32, 32), np.float32)})
    assert out.shape == (3, 10)


def test_unnamed_leading_dim(tmp_path):
    m = onnx.load(path("vision.onnx"))
    m.graph.input[0].type.tensor_type.shape.dim[0].Clear()
    f = str(tmp_path / "unnamed.onnx")
    onnx.save(m, f)
    found = lint(f, "ort", "GL4007")
    assert [x.value for x in found] == ["image"] and "no name" in found[0].message
    assert lint(path("vision.onnx"), "ort", "GL4007") == []


def test_float_input_without_in_graph_normalization_but_metadata_saying_so(tmp_path):
    m = onnx.load(path("vision.onnx"))
    onnx.helper.set_model_props(m, {"image_mean": "0.481,0.458,0.408", "image_std": "0.269,0.261,0.276"})
    f = str(tmp_path / "meta.onnx")
    onnx.save(m, f)
    found = lint(f, "ort", "GL4002")
    assert len(found) == 1 and found[0].properties["metadata_key"] == "image_mean"
    assert lint(path("vision.onnx"), "ort", "GL4002") == []  # no metadata, no claim
