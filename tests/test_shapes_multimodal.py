"""GL3xx dynamic-shape rules and the symbolic shape analysis, on real torch/transformers exports.

Every dynamic-shape claim is checked against ONNX Runtime (and OpenVINO CPU where it applies):
the model runs at the shapes the rule calls fine and fails at the shapes it calls broken.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from _multimodal import lint, load_stats, path

from graphlint.analysis.symbolic import Poly, parse_dim
from graphlint.fix.verify import OPENVINO_F32


def _session(file: str) -> ort.InferenceSession:
    return ort.InferenceSession(file, providers=["CPUExecutionProvider"])


def _clip_feed(text_batch: int, seq: int, mask_seq: int, image_batch: int) -> dict:
    rng = np.random.default_rng(0)
    return {"input_ids": rng.integers(0, 99, (text_batch, seq)).astype(np.int64),
            "pixel_values": rng.standard_normal((image_batch, 3, 32, 32)).astype(np.float32),
            "attention_mask": np.ones((text_batch, mask_seq), np.int64)}


def _fusion_feed(image_batch: int, text_batch: int, seq: int = 7) -> dict:
    rng = np.random.default_rng(0)
    return {"pixel_values": rng.standard_normal((image_batch, 3, 32, 32)).astype(np.float32),
            "input_ids": rng.integers(0, 99, (text_batch, seq)).astype(np.int64)}


# --- symbolic arithmetic ---------------------------------------------------------------

def test_dim_strings_parse_to_canonical_polynomials():
    assert parse_dim("s0 + 16") == parse_dim("16 + s0") == Poly.sym("s0") + Poly.const(16)
    assert parse_dim("2*batch*seq").div_exact(Poly.sym("seq")) == Poly.const(2) * Poly.sym("batch")
    assert parse_dim("text-batch") == Poly.sym("text-batch")  # not arithmetic: an opaque name
    assert str(Poly.sym("seq") * Poly.const(4) + Poly.const(1)) == "4*seq + 1"


# --- the analysis: how many values stay unknown -----------------------------------------

def test_pass_resolves_what_onnx_inference_leaves_unknown_on_clip():
    stats = load_stats(path("clip_legacy.onnx"))
    # ONNX data propagation leaves the attention Reshapes as unk__ dims; the symbolic pass resolves all
    assert stats["shape_unknown_onnx"] > 100
    assert stats["shape_unknown_final"] == 0


def test_pass_covers_ort_contrib_ops_on_fused_clip():
    import onnx

    fused = path("clip_fused.onnx")
    ops = {n.op_type for n in onnx.load(fused).graph.node if n.domain == "com.microsoft"}
    assert {"Attention", "SkipLayerNormalization"} <= ops
    stats = load_stats(fused)
    assert stats["shape_unknown_onnx"] > 50  # ONNX has no shape functions for the contrib ops
    assert stats["shape_unknown_final"] == 0  # the contrib handlers alone, no other inference
    # and the fused model still runs where the analysis says it does
    _session(fused).run(None, _clip_feed(2, 7, 7, 3))


def test_unknown_custom_op_is_reported_without_crashing(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Mystery", ["x"], ["y"], domain="acme", name="mystery_0")
    relu = helper.make_node("Relu", ["y"], ["z"], name="relu_0")
    g = helper.make_graph([node, relu], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme", 1)])
    f = str(tmp_path / "custom.onnx")
    onnx.save(m, f)
    found = lint(f, "ort", "GL3009")
    assert len(found) == 1 and found[0].node == "mystery_0"
    assert found[0].properties["unknown"] >= 2


# --- GL3001 symbolic-dim-mismatch --------------------------------------------------------

def test_mask_with_its_own_sequence_symbol_is_reported_and_breaks_in_ort():
    found = lint(path("clip_mask_mismatch.onnx"), "trt", "GL3001")
    assert len(found) == 1
    f = found[0]
    assert set(f.properties["symbols"]) == {"seq", "mask_seq"}
    assert set(f.properties["inputs"]) == {"input_ids", "attention_mask"}
    assert f.rewrite is not None and f.rewrite.name == "share-symbol"
    sess = _session(path("clip_mask_mismatch.onnx"))
    sess.run(None, _clip_feed(2, 7, 7, 3))  # equal lengths: fine
    with pytest.raises(Exception, match=r"(?i)broadcast|shape|dimension"):
        sess.run(None, _clip_feed(2, 7, 5, 3))  # what the declared axes allow, and what breaks


def test_image_and_text_batches_named_apart_break_the_concat():
    found = lint(path("fusion_batch_mismatch.onnx"), "trt", "GL3001")
    assert [f.op_type for f in found] == ["Concat"]
    assert set(found[0].properties["symbols"]) == {"image_batch", "text_batch"}
    with pytest.raises(Exception, match=r"(?i)concat|dimension|shape"):
        _session(path("fusion_batch_mismatch.onnx")).run(None, _fusion_feed(2, 3))


@pytest.mark.parametrize("name", ["clip_legacy.onnx", "clip_dynamo.onnx", "fusion.onnx", "fusion_dynamo.onnx"])
def test_clean_exports_have_no_mismatch(name):
    assert lint(path(name), "trt", "GL3001") == []


def test_concat_of_patches_and_tokens_on_the_sequence_axis_is_fine():
    # fusion.onnx concatenates [batch, 16, D] image patches and [batch, seq, D] tokens on axis 1
    sess = _session(path("fusion.onnx"))
    for batch, seq in ((1, 3), (4, 11)):
        (out,) = sess.run(None, _fusion_feed(batch, batch, seq))
        assert out.shape == (batch, 8)


# --- GL3003 constant-shape-pins-dynamic-dim -----------------------------------------------

def test_constant_reshape_pins_batch_and_breaks_at_other_sizes_in_ort_and_openvino(tmp_path):
    found = lint(path("fusion_fixed_reshape.onnx"), "trt", "GL3003")
    assert len(found) == 1 and found[0].op_type == "Reshape"
    assert found[0].properties["pinned_value"] == 2
    assert lint(path("fusion.onnx"), "trt", "GL3003") == []
    sess = _session(path("fusion_fixed_reshape.onnx"))
    sess.run(None, _fusion_feed(2, 2))
    with pytest.raises(Exception, match=r"(?i)reshape"):
        sess.run(None, _fusion_feed(3, 3))
    import openvino as ov

    compiled = ov.Core().compile_model(ov.convert_model(path("fusion_fixed_reshape.onnx")), "CPU", OPENVINO_F32)
    (ov2,) = compiled(_fusion_feed(2, 2)).values()
    np.testing.assert_allclose(ov2, sess.run(None, _fusion_feed(2, 2))[0], rtol=1e-4, atol=1e-5)
    try:
        (ov3,) = compiled(_fusion_feed(3, 3)).values()
    except RuntimeError:
        return
    # OpenVINO 2026.4 drops the constant Reshape as a no-op and runs at batch 3: the two
    # engines disagree on the same file, which is the other half of why the rule exists.
    assert ov3.shape == (3, 8)


# --- GL3007 optimization-profile -------------------------------------------------------------

def test_trt_lists_inputs_that_need_a_profile():
    (found,) = lint(path("fusion.onnx"), "trt", "GL3007")  # one note per model, not one per input
    assert sorted(found.properties["inputs"]) == ["input_ids", "pixel_values"]
    assert found.severity.label == "info" and "--shapes pixel_values:MIN,OPT,MAX" in found.message
    assert lint(path("fusion.onnx"), "ort", "GL3007") == []  # ort needs no profile


def test_profile_sweep_reports_first_breaking_value_confirmed_by_ort():
    shapes = ["pixel_values:1x3x32x32,2x3x32x32,8x3x32x32", "input_ids:1x1,2x7,8x64"]
    found = lint(path("fusion_fixed_reshape.onnx"), "trt", "GL3007", shapes)
    assert len(found) == 1
    f = found[0]
    assert f.op_type == "Reshape" and f.properties["first_breaking_value"] == 1
    with pytest.raises(Exception, match=r"(?i)reshape"):
        _session(path("fusion_fixed_reshape.onnx")).run(None, _fusion_feed(1, 1))
    # the clean model holds over the whole range
    assert lint(path("fusion.onnx"), "trt", "GL3007", shapes) == []
    sess = _session(path("fusion.onnx"))
    for b, s in ((1, 1), (8, 64)):
        sess.run(None, _fusion_feed(b, b, s))


def test_profile_that_disagrees_with_the_model_is_an_error():
    found = lint(path("fusion.onnx"), "trt", "GL3007",
                 ["pixel_values:1x3x32,2x3x32,4x3x32", "input_ids:1x1,2x7,8x64", "nope:1x1"])
    msgs = " ".join(f.message for f in found)
    assert "rank 3" in msgs and "'nope'" in msgs
    found = lint(path("fusion.onnx"), "trt", "GL3007",
                 ["pixel_values:1x3x32x32,2x3x32x32,4x3x32x32", "input_ids:1x1,3x7,8x64"])
    assert any("share the dim 'batch'" in f.message for f in found)


def test_profile_via_cli(cli):
    r = cli("check", path("fusion_fixed_reshape.onnx"), "--target", "trt", "--select", "GL3007",
            "--shapes", "pixel_values:1x3x32x32,2x3x32x32,8x3x32x32", "--shapes", "input_ids:1x1,2x7,8x64",
            "--format", "json")
    assert r.code == 1, r.err
    assert "axis 0 = 1" in r.out


# --- GL3002 / GL3008 target-aware ----------------------------------------------------------

def test_npu_needs_static_shapes_and_openvino_cpu_compiles_dynamic():
    found = lint(path("vision.xml"), "openvino@npu", "GL3002")
    assert [f.value for f in found] == ["image"]
    assert lint(path("vision.xml"), "openvino", "GL3002") == []
    assert lint(path("sandwich.onnx"), "openvino@npu", "GL3002") == []  # static input
    found = lint(path("vision.xml"), "openvino@npu", "GL3002", ["image:1x3x32x32"])
    assert found[0].rewrite.params["shape"] == [1, 3, 32, 32]
    import openvino as ov

    core = ov.Core()
    model = core.read_model(path("vision.xml"))
    assert model.inputs[0].get_partial_shape().is_dynamic
    core.compile_model(model, "CPU")  # CPU takes the dynamic batch
    model.reshape({"image": [1, 3, 32, 32]})  # what the NPU needs first
    assert model.inputs[0].get_partial_shape().is_static


def test_pad_to_multiple_only_on_tensor_core_targets():
    found = lint(path("clip_legacy.onnx"), "trt", "GL3008")
    seq = [f for f in found if f.rewrite is not None]
    assert [f.rewrite.params for f in seq] == [{"input": "input_ids", "axis": 1, "multiple": 8}]
    assert lint(path("clip_legacy.onnx"), "ort", "GL3008") == []


def test_pad_to_multiple_reports_every_layer_sharing_an_odd_weight_shape(tmp_path):
    # the rule decides once per weight shape: each layer still gets its own finding and data
    import torch

    from testmodels.common import torch_export

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(12, 12), torch.nn.Linear(12, 12), torch.nn.Linear(12, 16))
    f = torch_export(net, (torch.randn(2, 12),), str(tmp_path / "odd.onnx"), opset=17, input_names=["x"])
    found = [x for x in lint(f, "trt", "GL3008") if x.rewrite is None]
    assert len(found) == 3 and len({x.value for x in found}) == 3
    assert [x.properties["dims"] for x in found] == [{"K (reduction)": 12, "N (output)": 12}] * 2 + [{"K (reduction)": 12}]
    found[0].properties["dims"].clear()
    assert found[1].properties["dims"] == {"K (reduction)": 12, "N (output)": 12}


# --- GL3004 / GL3005 / GL3006 ------------------------------------------------------------------

def test_nonzero_is_data_dependent_on_trt_and_npu(tmp_path):
    import torch

    from testmodels.common import torch_export

    class Pick(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x > 0)

    f = torch_export(Pick(), (torch.randn(2, 5),), str(tmp_path / "nz.onnx"), opset=17, input_names=["x"])
    assert [x.op_type for x in lint(f, "trt", "GL3004")] == ["NonZero"]
    assert lint(f, "openvino@npu", "GL3004")[0].severity.label == "error"
    assert lint(f, "ort", "GL3004") == []
    from testmodels.common import to_openvino

    xml = to_openvino(f, str(tmp_path / "nz.xml"))  # the IR keeps NonZero: same verdict on NPU
    assert [x.op_type for x in lint(xml, "openvino@npu", "GL3004")] == ["NonZero"]
    assert lint(xml, "openvino", "GL3004") == []
    sess = _session(f)
    a = sess.run(None, {"x": np.ones((2, 5), np.float32)})[0]
    b = sess.run(None, {"x": -np.ones((2, 5), np.float32)})[0]
    assert a.shape != b.shape  # same input shape, different output shape: data-dependent


def test_if_branch_rank_mismatch(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    axes = helper.make_tensor("ax", TensorProto.INT64, [1], [0])
    else_g = helper.make_graph([helper.make_node("Unsqueeze", ["x", "ax"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 2, 3])], [axes])
    node = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []), x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    f = str(tmp_path / "if.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f)
    found = lint(f, "trt", "GL3005")
    assert len(found) == 1 and "rank 2" in found[0].message and "rank 3" in found[0].message
    sess = _session(f)  # ONNX Runtime accepts it: the ranks really differ per branch
    xs = np.zeros((2, 3), np.float32)
    assert sess.run(None, {"c": np.array(True), "x": xs})[0].ndim == 2
    assert sess.run(None, {"c": np.array(False), "x": xs})[0].ndim == 3


def test_input_used_as_shape_tensor(tmp_path):
    import torch

    from testmodels.common import torch_export

    class Tiles(torch.nn.Module):
        def forward(self, x, n):
            return x.reshape(n, -1)

    f = torch_export(Tiles(), (torch.randn(4, 6), torch.tensor(2)), str(tmp_path / "shape_in.onnx"), opset=17,
                     input_names=["x", "n"])
    found = lint(f, "trt", "GL3006")
    assert [x.value for x in found] == ["n"]
    assert lint(path("fusion.onnx"), "trt", "GL3006") == []


def test_reshape_that_folds_the_batch_into_another_axis(tmp_path):
    import torch

    from testmodels.common import torch_export

    class Fold(torch.nn.Module):
        def forward(self, x):
            return x.reshape(1, -1, 4).sum(dim=1)  # the bug: 1 where x.shape[0] belongs

    class Keep(torch.nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0], -1, 4).sum(dim=1)

    axes = {"x": {0: "batch"}}
    bad = torch_export(Fold(), (torch.randn(1, 3, 4),), str(tmp_path / "fold.onnx"), opset=17, input_names=["x"],
                       dynamic_axes=axes)
    good = torch_export(Keep(), (torch.randn(1, 3, 4),), str(tmp_path / "keep.onnx"), opset=17,
                        input_names=["x"], dynamic_axes=axes)
    found = lint(bad, "ort", "GL3003")
    assert len(found) == 1 and found[0].severity.label == "warning" and found[0].properties["symbol"] == "batch"
    assert lint(good, "ort", "GL3003") == []
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    assert _session(bad).run(None, {"x": x})[0].shape == (1, 4)  # two samples in, one row out
    assert _session(good).run(None, {"x": x})[0].shape == (2, 4)


# --- derived symbols: strided Conv over named input dims --------------------------------------

def test_position_table_pins_the_patch_grid_of_a_dynamic_image(tmp_path):
    """A ViT exported with height/width dynamic: the 17-row position table pins the patch count
    that a stride-8 Conv makes of them. ONNX Runtime fails at 64x64. GL3003 says so as an error when
    the given shapes include such a size; without shapes it is a warning that names the sizes that
    run (every engine runs the model at its export size, and whether others will be fed is unknown)
    and offers to pin them; shapes that stay at the working size give no finding. Unnamed dims: a
    warning."""
    import glob
    import os

    import onnx

    from testmodels.fp_classes import models

    path = glob.glob(os.path.join(models(), "broken_vit_dynhw.onnx"))[0]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    sess.run(None, {"x": np.zeros((1, 3, 32, 32), np.float32)})
    with pytest.raises(Exception, match=r"(?i)broadcast"):
        sess.run(None, {"x": np.zeros((1, 3, 64, 64), np.float32)})
    (f,) = lint(path, "ort", "GL3003", shapes=["x:1x3x32x32,1x3x32x32,1x3x64x64"])
    assert f.severity.label == "error" and "'(height - 8)//8'" in f.message and "17" in f.message
    assert f.properties["basis"].startswith("document:https://github.com/onnx/onnx/blob/v")
    assert "given shapes include sizes where it fails" in f.message
    assert lint(path, "ort", "GL3003", shapes=["x:1x3x32x32,2x3x32x32,4x3x32x32"]) == []
    (w,) = lint(path, "ort", "GL3003")
    assert w.severity.label == "warning" and w.properties["unknown"] == ["fed sizes"]
    assert "runs only at height = width = 32..39" in w.message
    assert w.rewrite.name == "fix-input-shape" and w.rewrite.params["shape"][2:] == [32, 32]
    m = onnx.load(path)
    for d in m.graph.input[0].type.tensor_type.shape.dim[2:]:
        d.dim_param = ""  # what exporters write when they were not told the dims' names
    unnamed = str(tmp_path / "unnamed.onnx")
    onnx.save(m, unnamed)
    (w,) = lint(unnamed, "ort", "GL3003")
    assert w.severity.label == "warning" and w.properties["unknown"] == ["value"] and "unknown" in w.message


def test_declared_number_where_a_dynamic_dim_flows_does_not_hide_the_pin(tmp_path):
    """torch.export's value_info can keep the batch it specialized to (1) while the input still
    says ``batch`` (held-out khmersm): the walk computes past the declared 1, so the Reshape whose
    target bakes it in is found, and ONNX Runtime fails there at batch 2."""
    import onnx
    from onnx import TensorProto, helper

    d = 4
    nodes = [
        helper.make_node("Gather", ["emb", "x"], ["e"]),  # [batch, seq, d]
        helper.make_node("Add", ["e", "pos"], ["a"]),  # declared [1, seq, d] below
        helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0, 2]),
        helper.make_node("Shape", ["x"], ["seq"], start=1, end=2),
        helper.make_node("Concat", ["seq", "one_d"], ["target"], axis=0),
        helper.make_node("Reshape", ["t", "target"], ["y"]),  # [seq, 1, d]: the batch baked in
    ]
    inits = [helper.make_tensor("emb", TensorProto.FLOAT, [10, d], [0.1] * 10 * d),
             helper.make_tensor("pos", TensorProto.FLOAT, [1, 1, d], [0.5] * d),
             helper.make_tensor("one_d", TensorProto.INT64, [2], [1, d])]
    declared = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, "seq", d]),
                helper.make_tensor_value_info("t", TensorProto.FLOAT, ["seq", 1, d])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT64, ["batch", "seq"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 1, d])], inits,
                              value_info=declared)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    bad = str(tmp_path / "specialized.onnx")
    onnx.save(model, bad)
    (f,) = lint(bad, "ort", "GL3003")
    assert f.severity.label == "error" and f.properties["pinned_value"] == 1 and f.properties["symbol"] == "4*batch"
    sess = _session(bad)
    assert sess.run(None, {"x": np.zeros((1, 3), np.int64)})[0].shape == (3, 1, d)
    # at batch 2 the Reshape fails as written; ORT's graph optimizations trust the declared shapes
    # and run it with the batch folded into the sequence axis instead: a wrong result, not an error
    assert sess.run(None, {"x": np.zeros((2, 3), np.int64)})[0].shape == (6, 1, d)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(bad, opts, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=r"(?i)reshape"):
        plain.run(None, {"x": np.zeros((2, 3), np.int64)})
    del model.graph.value_info[:]  # without the declared 1 the pin was always visible: same finding
    onnx.save(model, bad)
    assert [g.properties["pinned_value"] for g in lint(bad, "ort", "GL3003")] == [1]
