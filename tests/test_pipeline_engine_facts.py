"""Engine facts behind the export-pipeline findings, each shown by the engines on the committed
pipeline models (testmodels/pipelines/) and, where the mechanism is general, on a minimal model.

* optimum merged decoders: onnx's strict inference *with data propagation* fails inside the If's
  branches although the checker and strict inference without it pass, and ONNX Runtime runs both
  branches: no GL0001 finding (graphlint/load/inference.py).
* OpenVINO's CPU plugin compiles no If whose output has a dynamic rank (node.cpp:108); the 2026.4
  ONNX frontend makes an empty constant a scalar (2024.6 keeps its shape), so optimum's merged T5
  decoder (empty dummy encoder caches in the cached branch) is refused by 2026.4, and DeBERTa-v3's
  scripted ``build_rpos`` (rank 3 or 4) by both.
* onnxruntime-genai builds convert and run in OpenVINO, but the IR ``save_model`` writes of them
  cannot be read back: GroupQueryAttention is an internal op written as opset 'extension'.
* optimum's ViT declares height/width dynamic while its position table fixes them: every engine runs
  it at the config size; ONNX Runtime fails at another size (GL3003: a warning, an error when the
  given shapes include such a size).
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphlint.lint import LintOptions, lint_paths
from graphlint.shapes_spec import parse_profiles
from testmodels import engine_versions as ev
from tests.conftest import earlier_engine_python

HERE = os.path.dirname(os.path.abspath(__file__))
PIPELINES = os.path.join(os.path.dirname(HERE), "testmodels", "pipelines")
LLAMA_MERGED = os.path.join(PIPELINES, "optimum_text", "llama", "legacy", "decoder_model_merged.onnx")
T5_MERGED = os.path.join(PIPELINES, "optimum_text", "t5", "decoder_model_merged.onnx")
DEBERTA = os.path.join(PIPELINES, "optimum_text", "deberta_v3", "model.onnx")
GENAI = os.path.join(PIPELINES, "genai", "llama_fp32", "model.onnx")
VIT = os.path.join(PIPELINES, "optimum_vision", "vit", "model.onnx")


def findings(path: str, target: str, rule: str | None = None, shapes: list[str] | None = None) -> list:
    opts = LintOptions(targets=[target], rule_options={"shapes": parse_profiles(shapes or [])})
    run = lint_paths([path], opts)
    assert not run.failures, run.failures
    return [f for r in run.results for f in r.findings if rule is None or f.rule_id == rule]


def errors(path: str, target: str) -> list:
    return [f for f in findings(path, target) if f.severity.label == "error"]


def merged_feeds(path: str, use_cache: bool, past: int) -> dict[str, np.ndarray]:
    """What optimum's runtime feeds a merged decoder: the first step (no cache) or a later one."""
    model = onnx.load(path, load_external_data=False)
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value or d.dim_param for d in vi.type.tensor_type.shape.dim]
        name = vi.name
        if name == "use_cache_branch":
            feeds[name] = np.array([use_cache], bool)
        elif name == "input_ids":
            feeds[name] = rng.integers(0, 64, (1, 1 if use_cache else 4)).astype(np.int64)
        elif name == "attention_mask":
            feeds[name] = np.ones((1, past + (1 if use_cache else 4)), np.int64)
        elif name.startswith("past_key_values"):
            feeds[name] = rng.standard_normal((1, dims[1], past, dims[3])).astype(np.float32)
    return feeds


def test_merged_decoder_data_propagation_is_not_a_model_problem():
    model = onnx.load(LLAMA_MERGED)
    with pytest.raises(onnx.shape_inference.InferenceError, match="already exists"):
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)  # the spec's own check passes
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(LLAMA_MERGED, providers=["CPUExecutionProvider"])
    for use_cache, past in ((False, 0), (True, 4)):
        logits = sess.run(None, merged_feeds(LLAMA_MERGED, use_cache, past))[0]
        assert np.isfinite(logits).all()
    for target in ("ort", "openvino"):
        assert findings(LLAMA_MERGED, target, "GL0001") == []


def _if_model(then_out: onnx.NodeProto) -> onnx.ModelProto:
    """If(b): then_out (named 't') else x (rank 2); the If output is the graph output."""
    then_g = helper.make_graph([then_out], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    g = helper.make_graph(
        [helper.make_node("If", ["b"], ["y"], then_branch=then_g, else_branch=else_g, name="if")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
         helper.make_tensor_value_info("b", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _ov_compiles(path: str) -> str | None:
    try:
        ov.Core().compile_model(path, "CPU")
        return None
    except RuntimeError as e:
        return str(e)


@pytest.mark.parametrize(("shape", "refused"), [((0, 4), True), ((2, 4), False)])
def test_openvino_if_of_an_empty_constant_branch_has_dynamic_rank(tmp_path, shape, refused):
    """The frontend makes an empty (0, 4) constant a scalar: against a rank-2 branch, the If's
    output rank is dynamic and the CPU plugin refuses it; a (2, 4) constant keeps rank 2."""
    const = helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.zeros(shape, np.float32)))
    path = str(tmp_path / "if.onnx")
    onnx.save(_if_model(const), path)
    said = _ov_compiles(path)
    assert (said is not None and "doesn't support If operation with dynamic rank" in said) == refused
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.ones((3, 4), np.float32), "b": np.array(True)})[0].shape == shape
    got = [f for f in errors(path, "openvino") if f.rule_id == "GL1004"]
    assert [f.node for f in got] == (["if"] if refused else [])
    assert not errors(path, "ort")


def test_openvino_2024_6_makes_only_a_1d_empty_constant_a_scalar(tmp_path):
    """OpenVINO 2024.6's frontend makes an empty constant a scalar only at rank 1: against the rank-2
    branch, an If of a (0,) constant is refused, one of a (0, 4) constant compiles, and graphlint's
    openvino@2024.6 table (its generator probes the frontend) says so; the merged T5 decoder compiles
    there, while DeBERTa-v3's If of rank 3 or 4 is refused by both releases."""
    paths = []
    for shape in ((0,), (0, 4)):
        const = helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.zeros(shape, np.float32)))
        paths.append(str(tmp_path / f"if{len(shape)}.onnx"))
        onnx.save(_if_model(const), paths[-1])
    got = ev.ask("openvino", [*paths, T5_MERGED, DEBERTA], python=earlier_engine_python("openvino"))
    assert [got[p]["verdict"] for p in (*paths, T5_MERGED, DEBERTA)] == [
        "compile-error", "accepted", "accepted", "compile-error"]
    assert all("doesn't support If operation with dynamic rank" in got[p]["text"] for p in (paths[0], DEBERTA))
    assert [f.node for f in errors(paths[0], "openvino@2024.6") if f.rule_id == "GL1004"] == ["if"]
    assert [f.rule_id for f in errors(paths[1], "openvino@2024.6")] == []
    assert [f.rule_id for f in errors(T5_MERGED, "openvino@2024.6")] == []
    assert {f.rule_id for f in errors(DEBERTA, "openvino@2024.6")} == {"GL1004"}


def test_openvino_refuses_merged_seq2seq_decoder_and_deberta_v3():
    for path in (T5_MERGED, DEBERTA):
        said = _ov_compiles(path)
        assert said is not None and "doesn't support If operation with dynamic rank" in said, path
        got = [f for f in errors(path, "openvino") if f.rule_id == "GL1004"]
        assert got and all(f.op_type == "If" and "rank the engine cannot infer" in f.message for f in got), path
        assert not errors(path, "ort"), path
    sess = ort.InferenceSession(T5_MERGED, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    assert "use_cache_branch" in names and "encoder_hidden_states" in names


def test_genai_ir_with_group_query_attention_cannot_be_read_back(tmp_path):
    core = ov.Core()
    compiled = core.compile_model(core.read_model(GENAI), "CPU")  # the ONNX file converts and compiles
    assert compiled is not None and not errors(GENAI, "openvino")
    xml = str(tmp_path / "genai.xml")
    ov.save_model(ov.convert_model(GENAI), xml, compress_to_fp16=False)
    with pytest.raises(RuntimeError, match=r"Cannot create GroupQueryAttention layer .* unsupported opset: extension"):
        core.read_model(xml)
    got = [f for f in errors(xml, "openvino") if f.rule_id == "GL0006"]
    assert got and all(f.op_type == "GroupQueryAttention" and f.properties["basis"].endswith("#ir-internal-op")
                       for f in got)


def test_vit_position_table_pin_follows_the_fed_sizes():
    sess = ort.InferenceSession(VIT, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    sess.run(None, {name: np.zeros((2, 3, 32, 32), np.float32)})  # the config size, any batch
    with pytest.raises(Exception, match=r"(?i)broadcast"):
        sess.run(None, {name: np.zeros((1, 3, 64, 64), np.float32)})
    (w,) = findings(VIT, "ort", "GL3003")
    assert w.severity.label == "warning" and "runs only at" in w.message and w.rewrite is not None
    (e,) = findings(VIT, "ort", "GL3003", shapes=[f"{name}:1x3x32x32,1x3x32x32,1x3x64x64"])
    assert e.severity.label == "error"
    assert findings(VIT, "ort", "GL3003", shapes=[f"{name}:1x3x32x32,4x3x32x32,8x3x32x32"]) == []


def test_openvino_cannot_fold_equal_of_two_run_time_dims(tmp_path):
    """DeBERTa's scripted build_rpos, reduced: If(dim0 != dim1) of one input's two dynamic dims,
    branches of rank 0 and 2. OpenVINO's bounds of both dims are [0, inf), so Equal never folds and
    the If's output rank is dynamic (the CPU plugin refuses it); with the dims static it folds."""
    def model(dims):
        s = numpy_helper.from_array(np.array([0], np.int64), "i0")
        t = numpy_helper.from_array(np.array([1], np.int64), "i1")
        then_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["f"], keepdims=0)], "then", [],
                                   [helper.make_tensor_value_info("f", TensorProto.FLOAT, None)])  # rank 0
        else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                                   [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])  # rank 2
        nodes = [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "i0"], ["d0"]),
                 helper.make_node("Gather", ["sh", "i1"], ["d1"]), helper.make_node("Equal", ["d0", "d1"], ["eq"]),
                 helper.make_node("Not", ["eq"], ["ne"]), helper.make_node("Squeeze", ["ne"], ["c"]),
                 helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [s, t])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])

    for dims, refused in ((["n", "m"], True), ([3, 3], False)):
        path = str(tmp_path / f"eq_{refused}.onnx")
        onnx.save(model(dims), path)
        said = _ov_compiles(path)
        assert (said is not None and "dynamic rank" in said) == refused, (dims, said)
        assert [f.node for f in errors(path, "openvino") if f.rule_id == "GL1004"] == (["if"] if refused else [])


@pytest.mark.parametrize(("path", "refused"), [(T5_MERGED, True), (DEBERTA, True), (LLAMA_MERGED, False)])
def test_openvino_ir_if_of_bodies_with_different_ranks(tmp_path, path, refused):
    """The same refusal on the IR ov.save_model writes (ranks compared on the bodies' Results)."""
    xml = str(tmp_path / "model.xml")
    ov.save_model(ov.convert_model(path), xml, compress_to_fp16=False)
    said = _ov_compiles(xml)
    assert (said is not None and "doesn't support If operation with dynamic rank" in said) == refused
    got = [f for f in errors(xml, "openvino") if f.rule_id == "GL1004"]
    assert bool(got) == refused and all(f.op_type == "If" for f in got)
