"""OpenVINO's ONNX frontend on control flow, each fact shown by the engine on a minimal model.

* If: ``ov::op::v8::If`` merges its branches' shapes unless the condition folds (through interval
  bounds of dims), so branches of different rank give a value of dynamic rank, and the Conv
  translator refuses it ("The input data tensor's rank has to be known (static)", conv.cpp). The
  silero VAD v5/v6 exports are built this way (``x.squeeze(-1) if x.shape[-1] == 1 else x``).
* If (2): the condition must be a scalar or 1-D (ONNX allows any one-element tensor).
* If (3): the CPU plugin compiles no node whose output has a dynamic rank ("CPU plug-in doesn't
  support If operation with dynamic rank", node.cpp), so such an If fails compile_model even when
  nothing reads it; the frontend makes an empty constant a scalar, so a branch returning one (the
  dummy encoder caches of optimum's merged seq2seq decoders) differs in rank from the other, and
  torch.jit.script's rank-3-or-4 ``build_rpos`` in DeBERTa-v2/v3 does the same.
* Loop: a body output that is a body input unchanged (paddle2onnx writes them for loop-invariant
  weights) fails the frontend's canonical-inputs check when the model is read from a file.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.test_support_rules import _model, _vi, errors, lint, ort_loads, ov_compiles

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value), name))


def _dim_cond(axis: int, c: int, op: str = "Equal"):
    return [helper.make_node("Shape", ["y"], ["s"]), _const("i", np.int64(axis)),
            helper.make_node("Gather", ["s", "i"], ["g"], axis=0), _const("c", np.int64(c)),
            helper.make_node(op, ["g", "c"], ["e"])]


def _if_conv(cond, *, pre=None, shape=(1, 4, "T"), same_rank=False, inputs=()):
    """x -> pre -> y; If(e): Squeeze(y, -1) (rank 2) else Identity(y) (rank 3); Conv on the If output."""
    axes = numpy_helper.from_array(np.array([-1], np.int64), "m1")
    then_op = helper.make_node("Identity", ["y"], ["t"]) if same_rank else helper.make_node("Squeeze", ["y", "m1"], ["t"])
    then_g = helper.make_graph([then_op], "then", [], [_vi("t", F, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["y"], ["f"])], "else", [], [_vi("f", F, None)])
    nodes = [*(pre or [helper.make_node("Identity", ["x"], ["y"])]), *cond,
             helper.make_node("If", ["e"], ["z"], then_branch=then_g, else_branch=else_g, name="if"),
             helper.make_node("Conv", ["z", "w"], ["out"], name="conv")]
    w = numpy_helper.from_array(np.ones((4, 4, 1), np.float32), "w")
    return _model(nodes, [_vi("x", F, list(shape)), *inputs], [_vi("out", F, None)], inits=[axes, w])


_PAD5 = [_const("pp", np.array([0, 0, 0, 0, 0, 5], np.int64)), helper.make_node("Pad", ["x", "pp"], ["y"])]
_CASES = {
    # condition, other model settings, whether OpenVINO refuses the Conv
    "graph-input condition": ([helper.make_node("Identity", ["b"], ["e"])], {"inputs": [_vi("b", B, [])]}, True),
    "dynamic dim == 1": (_dim_cond(2, 1), {}, True),
    "dynamic dim == 0 (its lower bound)": (_dim_cond(2, 0), {}, True),
    "dynamic dim == -1 (folds: below the bound)": (_dim_cond(2, -1), {}, False),
    "dim padded by 5 == 1 (folds)": (_dim_cond(2, 1), {"pre": _PAD5}, False),
    "static dim == 1 (folds)": (_dim_cond(2, 1), {"shape": (1, 4, 6)}, False),
    "branches of the same rank": ([helper.make_node("Identity", ["b"], ["e"])],
                                  {"inputs": [_vi("b", B, [])], "same_rank": True}, False),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_openvino_conv_refuses_an_if_output_of_dynamic_rank(tmp_path, case):
    cond, kw, refused = _CASES[case]
    m = _if_conv(cond, **kw)
    assert ov_compiles(m, tmp_path) == (not refused)
    errs = errors(lint(tmp_path, m, "openvino"), "GL1004")
    # the Conv translator refuses the input (at read_model), the CPU plugin the If itself (at compile_model)
    assert sorted(f.node for f in errs) == (["conv", "if"] if refused else [])
    for f in errs:
        assert "rank the engine cannot infer" in f.message
        assert f.properties["basis"].endswith("#ai.onnx/Conv" if f.node == "conv" else "#ai.onnx/If")
    assert not errors(lint(tmp_path, m, "ort"))  # ONNX Runtime checks ranks when it runs a branch


def test_openvino_if_rank_follows_nested_ifs_and_shapes_of_dynamic_rank(tmp_path):
    """The silero pattern one level deeper: an If whose condition reads the rank of the first If's
    output (Size of its Shape) and whose branches are that output and an Unsqueeze of it."""
    first = _if_conv(_dim_cond(2, 1))
    g = first.graph
    g.node.pop()  # the Conv moves behind a second If
    axes0 = numpy_helper.from_array(np.array([0], np.int64), "a0")
    then_g = helper.make_graph([helper.make_node("Unsqueeze", ["z", "a0"], ["t2"])], "then2", [], [_vi("t2", F, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["z"], ["f2"])], "else2", [], [_vi("f2", F, None)])
    g.node.extend([helper.make_node("Shape", ["z"], ["zs"]), helper.make_node("Size", ["zs"], ["zr"]),
                   _const("three", np.int64(3)), helper.make_node("Equal", ["zr", "three"], ["e2"]),
                   helper.make_node("Not", ["e2"], ["ne2"]),
                   helper.make_node("If", ["ne2"], ["z2"], then_branch=then_g, else_branch=else_g, name="if2"),
                   helper.make_node("Relu", ["z2"], ["r"]), helper.make_node("Conv", ["r", "w"], ["out"], name="conv")])
    g.initializer.append(axes0)
    assert not ov_compiles(first, tmp_path)
    # both Ifs have outputs of dynamic rank (the CPU plugin compiles neither), and the Conv reads one
    assert sorted(f.node for f in errors(lint(tmp_path, first, "openvino"), "GL1004")) == ["conv", "if", "if2"]


def _loop(passthrough: bool):
    """A 3-step Loop carrying (a, w): a += w, and w returned as it came in (or through an Identity)."""
    nodes = [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["a", "w"], ["a_out"])]
    w_out = "w"
    if not passthrough:
        nodes.append(helper.make_node("Identity", ["w"], ["w_o"]))
        w_out = "w_o"
    body = helper.make_graph(nodes, "body", [_vi("i", I64, []), _vi("c", B, []), _vi("a", F, [2]), _vi("w", F, [2])],
                             [_vi("c_out", B, []), _vi("a_out", F, [2]), _vi(w_out, F, [2])])
    inits = [numpy_helper.from_array(np.array(3, np.int64), "M"), numpy_helper.from_array(np.array(True), "cond")]
    return _model([helper.make_node("Loop", ["M", "cond", "a0", "w0"], ["a_fin", "w_fin"], body=body, name="loop")],
                  [_vi("a0", F, [2]), _vi("w0", F, [2])], [_vi("a_fin", F, [2]), _vi("w_fin", F, [2])],
                  opset=13, inits=inits)


@pytest.mark.parametrize("passthrough", [False, True])
def test_openvino_loop_body_must_not_return_an_input_unchanged(tmp_path, passthrough):
    import onnxruntime as ort
    import openvino as ov

    m = _loop(passthrough)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    a, w = sess.run(None, {"a0": np.ones(2, np.float32), "w0": np.ones(2, np.float32)})
    assert a.tolist() == [4.0, 4.0] and w.tolist() == [1.0, 1.0]
    # read from a file (read_model(path), convert_model(path), ovc) it fails; from memory it converts
    assert ov_compiles(m, tmp_path) == (not passthrough)
    ov.Core().compile_model(ov.Core().read_model(m.SerializeToString(), b""), "CPU")
    errs = errors(lint(tmp_path, m, "openvino"), "GL1004")
    assert [f.node for f in errs] == (["loop"] if passthrough else [])
    if passthrough:
        assert "returns its input 'w' unchanged" in errs[0].message
        assert errs[0].properties["basis"].endswith("#ai.onnx/Loop")
    onnx.checker.check_model(m)
    assert ort_loads(m) and not errors(lint(tmp_path, m, "ort"))


def _if_on(cond_shape):
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [], [_vi("t", F, [2])])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["f"])], "else", [], [_vi("f", F, [2])])
    return _model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")],
                  [_vi("c", B, cond_shape), _vi("x", F, [2])], [_vi("y", F, [2])], opset=13)


@pytest.mark.parametrize("cond_shape", [[], [1], [1, 1]])
def test_openvino_if_condition_must_be_scalar_or_1d(tmp_path, cond_shape):
    """ONNX takes any one-element condition; ov::op::v8::If only rank 0 or 1 (openwakeword's hey_jarvis
    export: GreaterOrEqual on a [1, 1] score, Cast, If)."""
    import onnxruntime as ort

    m = _if_on(cond_shape)
    onnx.checker.check_model(m, full_check=True)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"c": np.ones(cond_shape, bool), "x": np.ones(2, np.float32)})
    assert y.tolist() == [-1.0, -1.0]
    assert ov_compiles(m, tmp_path) == (len(cond_shape) <= 1)
    errs = errors(lint(tmp_path, m, "openvino"), "GL1004")
    assert [(f.node, f.properties["basis"].rsplit("#", 1)[-1]) for f in errs] == (
        [("if", "ai.onnx/If")] if len(cond_shape) > 1 else [])
    assert not errors(lint(tmp_path, m, "ort"))
