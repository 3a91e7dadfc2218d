"""GL5xx layout rules: OpenVINO IR layouts (checked with PrePostProcessor and CPU compile) and ONNX Transposes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from _multimodal import lint, path

from graphlint.fix.verify import OPENVINO_F32


def test_missing_layout_on_ir_and_the_suggested_snippet_works(tmp_path):
    import openvino as ov
    from openvino.preprocess import PrePostProcessor

    found = lint(path("vision.xml"), "openvino", "GL5001")
    assert [f.value for f in found] == ["image"]
    rw = found[0].rewrite
    assert rw.name == "set-layout" and rw.params["layout"] == "NCHW" and "PrePostProcessor" in rw.params["ppp"]
    assert lint(path("vision_layout.xml"), "openvino", "GL5001") == []

    core = ov.Core()
    # without a model layout, asking PrePostProcessor for an NHWC tensor silently does nothing:
    # the input stays NCHW, so the app's NHWC frames are misread (or rejected when shapes differ)
    ppp = PrePostProcessor(core.read_model(path("vision.xml")))
    ppp.input("image").tensor().set_layout(ov.Layout("NHWC"))
    assert str(ppp.build().inputs[0].get_partial_shape()) == "[?,3,32,32]"
    # run the suggested snippet (paths adapted), then the same conversion works and matches the ONNX model
    snippet = rw.params["ppp"].replace("'model.xml'", repr(path("vision.xml")))
    snippet = snippet.replace("'model_with_layout.xml'", repr(str(tmp_path / "fixed.xml")))
    exec(compile(snippet, "snippet", "exec"), {})
    assert lint(str(tmp_path / "fixed.xml"), "openvino", "GL5001") == []
    ppp = PrePostProcessor(core.read_model(str(tmp_path / "fixed.xml")))
    ppp.input("image").tensor().set_layout(ov.Layout("NHWC"))
    built = ppp.build()
    assert str(built.inputs[0].get_partial_shape()) == "[?,32,32,3]"  # now the conversion is inserted
    compiled = core.compile_model(built, "CPU", OPENVINO_F32)
    x = np.random.default_rng(0).random((2, 3, 32, 32), dtype=np.float32)
    (got,) = compiled(x.transpose(0, 2, 3, 1)).values()
    ref = ort.InferenceSession(path("vision.onnx"), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_layout_contradicting_shape():
    found = lint(path("vision_badlayout.xml"), "openvino", "GL5002")
    assert len(found) == 1 and found[0].properties["suggested_layout"] == "NCHW"
    assert lint(path("vision_layout.xml"), "openvino", "GL5002") == []
    assert lint(path("vision.xml"), "openvino", "GL5002") == []


def test_nhwc_input_transposed_in_graph():
    found = lint(path("vision_uint8.onnx"), "ort", "GL5003")
    assert len(found) == 1 and found[0].op_type == "Transpose" and found[0].properties["layout"] == "NHWC"
    assert lint(path("vision.onnx"), "ort", "GL5003") == []
    sess = ort.InferenceSession(path("vision_uint8.onnx"), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].shape[1:] == [32, 32, 3]


def test_transpose_sandwich_folds_without_changing_results(tmp_path):
    found = lint(path("sandwich.onnx"), "ort", "GL5004")
    assert len(found) == 1
    first, second = found[0].rewrite.params["nodes"]
    assert lint(path("vision.onnx"), "ort", "GL5004") == []
    assert lint(path("clip_legacy.onnx"), "ort", "GL5004") == []
    # remove both Transposes by hand and compare in ONNX Runtime: the rewrite is exact
    m = onnx.load(path("sandwich.onnx"))
    nodes = {n.name: n for n in m.graph.node}
    a, b = nodes[first], nodes[second]
    for n in m.graph.node:
        n.input[:] = [a.input[0] if i == a.output[0] else i for i in n.input]
    out_name = b.output[0]
    for n in m.graph.node:
        n.output[:] = [out_name if o == b.input[0] else o for o in n.output]
    m.graph.node.remove(a)
    m.graph.node.remove(b)
    f = str(tmp_path / "folded.onnx")
    onnx.save(m, f)
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    ref = ort.InferenceSession(path("sandwich.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(f, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert lint(f, "ort", "GL5004") == []
