"""graphlint fix passes on real exports: each result is checked here again, independently of the verifier."""

from __future__ import annotations

import os
import shutil

import numpy as np
import onnx
import openvino as ov
import pytest

from graphlint.fix.verify import OPENVINO_F32
from testmodels.fix_models import model
from tests.fixhelp import ops, ort_outputs, run_fix, steps

MS = "com.microsoft"


@pytest.fixture(scope="module")
def bert() -> str:
    return model("bert_fused")


def _bert_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    mask = np.ones((3, 12), np.int64)
    mask[1, 9:] = 0
    mask[2, 5:] = 0
    return {"input_ids": rng.integers(0, 100, (3, 12)), "attention_mask": mask,
            "token_type_ids": rng.integers(0, 2, (3, 12))}


@pytest.mark.parametrize("target", ["trt", "openvino"])
def test_unfuse_bert_loses_every_fused_op(bert, tmp_path, target):
    assert any(d == MS for d, _ in ops(bert))
    out = str(tmp_path / "bert.fixed.onnx")
    rep = run_fix(bert, out, target=target, rewrites=["unfuse-contrib"])
    assert steps(rep)["unfuse-contrib"] == "applied"
    assert rep.outcome.engine == "onnxruntime"
    assert not any(d == MS for d, _ in ops(out)), ops(out)
    assert all(o.domain != MS for o in onnx.load(out).opset_import)
    onnx.checker.check_model(out, full_check=True)
    # Other shapes and a padded batch than the verifier used: the unfused graph is still the fused one.
    feeds = _bert_feeds()
    ref, new = ort_outputs(bert, feeds), ort_outputs(out, feeds)
    for k in ref:
        np.testing.assert_allclose(new[k], ref[k], rtol=1e-4, atol=1e-5)
    # And OpenVINO CPU compiles and agrees.
    compiled = ov.Core().compile_model(out, "CPU", OPENVINO_F32)
    res = compiled(feeds)
    np.testing.assert_allclose(res[compiled.outputs[0]], ref["last_hidden_state"], rtol=1e-3, atol=1e-4)
    assert max(rep.outcome.max_abs_diff.values()) < 1e-4


def test_unfuse_other_contrib_ops(tmp_path):
    src = model("contrib_zoo")
    out = str(tmp_path / "zoo.onnx")
    rep = run_fix(src, out, rewrites=["unfuse-contrib"], select=["GL0"])
    step = rep.outcome.steps[0]
    assert step.status == "applied", step.reason
    assert not step.skipped
    for op in ("FastGelu", "QuickGelu", "Gelu", "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization",
               "Attention", "MultiHeadAttention"):
        assert any(op in c for c in step.changes), op
    assert ops(out) <= {("ai.onnx", o) for o in ("MatMul", "Add", "Mul", "Div", "Sub", "Erf", "Tanh", "Sigmoid",
                                                  "Sqrt", "ReduceMean", "Split", "Reshape", "Transpose", "Softmax",
                                                  "Shape", "Gather", "Range", "Greater", "Less", "Cast",
                                                  "Unsqueeze", "Identity", "Pow")}
    rng = np.random.default_rng(3)
    mask = np.ones((2, 6), np.int32)
    mask[0, 4:] = 0
    feeds = {"x": rng.standard_normal((2, 6, 16)).astype(np.float32), "key_padding_mask": mask}
    ref, new = ort_outputs(src, feeds), ort_outputs(out, feeds)
    np.testing.assert_allclose(new["y"], ref["y"], rtol=1e-4, atol=1e-5)


def test_opset11_interpolate_upgraded_keeps_outputs(tmp_path):
    src = model("interp11")
    out = str(tmp_path / "interp.onnx")
    rep = run_fix(src, out, rewrites=[("opset-upgrade", {"opset": 17}), "softmax-keep-2d-semantics"])
    assert steps(rep)["opset-upgrade"] == "applied"
    m = onnx.load(out)
    assert next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) == 17
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(ort_outputs(out, {"x": x})["y"], ort_outputs(src, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_uint8_input_becomes_float(tmp_path):
    src = model("uint8_input")
    out = str(tmp_path / "u8.onnx")
    rep = run_fix(src, out, rewrites=["input-cast-normalize"], unsafe_fixes=True)
    assert steps(rep)["input-cast-normalize"] == "applied"
    inp = onnx.load(out).graph.input[0]
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    img = np.random.default_rng(0).integers(0, 256, (1, 3, 16, 16)).astype(np.uint8)
    ref = ort_outputs(src, {"image": img})["features"]
    new = ort_outputs(out, {"image": img.astype(np.float32) / 255.0})["features"]
    np.testing.assert_array_equal(new, ref)  # Mul 255 + Round recovers the exact pixels


def test_uint8_model_side_keeps_raw_pixels(tmp_path):
    src = model("uint8_input")
    out = str(tmp_path / "u8m.onnx")
    run_fix(src, out, rewrites=[("input-cast-normalize", {"side": "model"})])
    img = np.random.default_rng(1).integers(0, 256, (1, 3, 16, 16)).astype(np.uint8)
    np.testing.assert_array_equal(ort_outputs(out, {"image": img.astype(np.float32)})["features"],
                                  ort_outputs(src, {"image": img})["features"])


def test_double_and_int64_narrowed(tmp_path):
    src = model("double_io")
    out = str(tmp_path / "d.onnx")
    rep = run_fix(src, out, rewrites=["double-to-float", "int64-to-int32"])
    assert steps(rep) == {"int64-to-int32": "applied", "double-to-float": "applied"}
    m = onnx.load(out)
    types = {v.name: v.type.tensor_type.elem_type for v in [*m.graph.input, *m.graph.output]}
    assert types == {"x": onnx.TensorProto.FLOAT, "ids": onnx.TensorProto.INT32, "y": onnx.TensorProto.FLOAT}
    assert all(t.data_type != onnx.TensorProto.DOUBLE for t in m.graph.initializer)
    x = np.random.default_rng(0).standard_normal((2, 4))
    ids = np.array([3, 9])
    ref = ort_outputs(src, {"x": x, "ids": ids})["y"]
    new = ort_outputs(out, {"x": x.astype(np.float32), "ids": ids.astype(np.int32)})["y"]
    np.testing.assert_allclose(new, ref, rtol=1e-5, atol=1e-6)


def test_ir_layouts_are_rt_info_only_and_bin_intact(tmp_path):
    src = model("ir_nolayout")
    out = str(tmp_path / "net.xml")
    rep = run_fix(src, out, target="openvino", layouts={"pixel_values": "NCHW", "logits": "NCHW"})
    assert steps(rep) == {"set-layout": "applied"}
    with open(src[:-4] + ".bin", "rb") as a, open(out[:-4] + ".bin", "rb") as b:
        assert a.read() == b.read()
    m = ov.Core().read_model(out)
    assert str(ov.layout_helpers.get_layout(m.input("pixel_values"))) == "[N,C,H,W]"
    assert str(ov.layout_helpers.get_layout(m.output(0))) == "[N,C,H,W]"
    ov.Core().compile_model(m, "CPU")


def test_ir_static_shape_for_npu(tmp_path):
    src = model("ir_nolayout")
    out = str(tmp_path / "npu.xml")
    rep = run_fix(src, out, target="openvino@npu", shapes=["pixel_values:1x3x16x16"],
                  layouts={"pixel_values": "NCHW"})
    assert steps(rep) == {"fix-input-shape": "applied", "set-layout": "applied"}
    m = ov.Core().read_model(out)
    assert m.input(0).get_partial_shape().is_static
    assert list(m.input(0).get_shape()) == [1, 3, 16, 16]
    assert str(ov.layout_helpers.get_layout(m.input(0))) == "[N,C,H,W]"


def test_fold_constants_and_dead_nodes_after_fixing_shapes(tmp_path):
    import torch

    class Net(torch.nn.Module):
        def forward(self, x):
            y = x.permute(0, 2, 3, 1).relu().permute(0, 3, 1, 2)  # a Transpose pair that cancels
            return y.reshape(x.shape[0], -1) * 2.0  # Shape -> Gather -> Concat: a shape subgraph

    src = str(tmp_path / "net.onnx")
    from testmodels.common import torch_export

    torch_export(Net(), (torch.randn(2, 3, 4, 4),), src, opset=17, input_names=["x"], output_names=["y"],
                 dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    before = ops(src)
    assert ("ai.onnx", "Shape") in before and ("ai.onnx", "Transpose") in before
    out = str(tmp_path / "folded.onnx")
    rep = run_fix(src, out, shapes=["x:2x3x4x4"],
                  rewrites=["fold-constants", "remove-dead-nodes", "fold-transpose-pairs"])
    st = steps(rep)
    assert st["fix-input-shape"] == st["fold-constants"] == st["fold-transpose-pairs"] == "applied", rep.to_dict()
    after = ops(out)
    assert ("ai.onnx", "Shape") not in after and ("ai.onnx", "Transpose") not in after
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(ort_outputs(out, {"x": x})["y"], ort_outputs(src, {"x": x})["y"])


def test_external_data_stays_external(tmp_path, bert):
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    src = str(src_dir / "m.onnx")
    onnx.save_model(onnx.load(bert), src, save_as_external_data=True, location="m.onnx.data", size_threshold=1024)
    out = str(tmp_path / "fixed.onnx")
    rep = run_fix(src, out, rewrites=["unfuse-contrib"])
    assert rep.written == [out, out + ".data"]
    loaded = onnx.load(out, load_external_data=False)
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in loaded.graph.initializer)
    assert os.path.getsize(out) < os.path.getsize(out + ".data")
    feeds = _bert_feeds()
    ref = ort_outputs(src, feeds)
    shutil.rmtree(src_dir)  # the output does not depend on the input's data file
    np.testing.assert_allclose(ort_outputs(out, feeds)["last_hidden_state"], ref["last_hidden_state"],
                               rtol=1e-4, atol=1e-5)


def test_topological_order_and_pruning_from_networkx():
    """topo_sort puts nodes inserted out of order after their inputs and keeps an ordered graph
    as it is; a cycle is an error, not a silent no-op. prune drops what no output reads."""
    import networkx as nx
    from onnx import TensorProto as T
    from onnx import helper as h

    from graphlint.fix import graphutil as gu

    nodes = [h.make_node("Relu", ["b"], ["c"], name="late"), h.make_node("Neg", ["x"], ["a"], name="first"),
             h.make_node("Abs", ["a"], ["b"], name="second"), h.make_node("Exp", ["x"], ["dead"], name="unused")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2])],
                     [h.make_tensor_value_info("c", T.FLOAT, [2])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    gu.topo_sort(model.graph)
    assert [n.name for n in model.graph.node] == ["first", "second", "late", "unused"]
    gu.topo_sort(model.graph)  # already in order: unchanged
    assert [n.name for n in model.graph.node] == ["first", "second", "late", "unused"]
    assert gu.prune(model) == ["unused"]
    assert [n.name for n in model.graph.node] == ["first", "second", "late"]
    model.graph.node[0].input[0] = "c"  # first <- late: a cycle
    with pytest.raises(nx.NetworkXUnfeasible):
        gu.topo_sort(model.graph)
