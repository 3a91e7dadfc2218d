"""GL1001-GL1010 on hand-built ONNX models; verdicts for ort and openvino are checked against the engines."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphlint.lint import LintOptions, lint_paths

F, I64, U8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT8


def _model(nodes, inputs, outputs, *, opset=17, inits=(), extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    opsets = [helper.make_opsetid("", opset), *[helper.make_opsetid(d, v) for d, v in extra_opsets]]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def lint(tmp_path, model, target, name="m.onnx"):
    path = os.path.join(tmp_path, name)
    onnx.save(model, path)
    run = lint_paths([path], LintOptions(targets=[target], select=["target-support"]))
    assert not run.failures, run.failures
    return run.results[0]


def errors(res, rule=None):
    return [f for f in res.findings if f.severity.label == "error" and (rule is None or f.rule_id == rule)]


def ort_loads(model) -> bool:
    import onnxruntime as ort

    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return True
    except Exception:
        return False


def ov_compiles(model, tmp_path) -> bool:
    import openvino as ov

    path = os.path.join(tmp_path, "ov.onnx")
    onnx.save(model, path)
    core = ov.Core()
    try:
        core.compile_model(core.read_model(path), "CPU")
        return True
    except Exception:
        return False


def _add(dtype, opset):
    return _model([helper.make_node("Add", ["a", "b"], ["c"], name="add")],
                  [_vi("a", dtype, [2]), _vi("b", dtype, [2])], [_vi("c", dtype, [2])], opset=opset)


@pytest.mark.parametrize(("opset", "rejected"), [(13, True), (14, False)])
def test_ort_kernel_types_match_the_engine(tmp_path, opset, rejected):
    m = _add(U8, opset)  # uint8 Add kernels exist from Add-14 only
    res = lint(tmp_path, m, "ort")
    assert bool(errors(res)) == rejected == (not ort_loads(m))
    if rejected:
        f = errors(res, "GL1005")[0]
        assert f.node == "add" and "uint8" in f.message
        # cites the table shipped in the package; the basis names its entry for the op
        assert f.properties["source"].startswith("rules/data/support/ort-1.32-cpu.json")
        assert f.properties["basis"] == "support-table:rules/data/support/ort-1.32-cpu.json#ai.onnx/Add"


def test_ort_open_kernel_range_matches_start_version_only(tmp_path):
    # RoiAlign: kernel registered as 16+ but the opset-22 schema has no kernel (session creation fails).
    m = _model([helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], name="roi", output_height=2, output_width=2)],
               [_vi("x", F, [1, 1, 4, 4]), _vi("r", F, [1, 4]), _vi("i", I64, [1])], [_vi("y", F, [1, 1, 2, 2])],
               opset=22)
    res = lint(tmp_path, m, "ort")
    assert not ort_loads(m)
    assert errors(res, "GL1001") and "RoiAlign-22" in errors(res, "GL1001")[0].message


def test_ort_kernel_constructor_check(tmp_path):
    m = _model([helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="lstm", hidden_size=2, layout=1)],
               [_vi("x", F, [1, 3, 2]), _vi("w", F, [1, 8, 2]), _vi("r", F, [1, 8, 2])], [_vi("y", F, None)])
    res = lint(tmp_path, m, "ort")
    assert not ort_loads(m)
    f = errors(res, "GL1004")[0]
    assert "layout=1" in f.message and "lstm_base.h" in f.message


def test_openvino_constraint_matches_the_engine(tmp_path):
    def resize(mode):
        return _model([helper.make_node("Resize", ["x", "", "s"], ["y"], name="rs", mode="linear",
                                        coordinate_transformation_mode=mode)],
                      [_vi("x", F, [1, 1, 4, 4])], [_vi("y", F, [1, 1, 8, 8])], opset=19,
                      inits=[numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")])

    bad, good = resize("half_pixel_symmetric"), resize("half_pixel")
    assert errors(lint(tmp_path, bad, "openvino"), "GL1004") and not ov_compiles(bad, tmp_path)
    assert not errors(lint(tmp_path, good, "openvino")) and ov_compiles(good, tmp_path)


def test_openvino_missing_translator(tmp_path):
    m = _model([helper.make_node("Det", ["x"], ["y"], name="det")], [_vi("x", F, [2, 2])], [_vi("y", F, [])], opset=22)
    res = lint(tmp_path, m, "openvino")
    f = errors(res, "GL1001")[0]
    # cites the frontend's own table at its commit, with the op's line
    assert "no conversion rule" in f.message and f.properties["source"].startswith(
        "https://github.com/openvinotoolkit/openvino/blob/0ae60f0ffec990b581cf29cae47563090e5deca0/"
        "src/frontends/onnx/docs/supported_ops.md#L")
    assert not ov_compiles(m, tmp_path)


def test_trt_restrictions_cite_the_matrix_row(tmp_path):
    k = numpy_helper.from_array(np.array([4000], np.int64), "k")
    m = _model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", sorted=0)],
               [_vi("x", F, [1, 5000])], [_vi("v", F, None), _vi("i", I64, None)], inits=[k])
    res = lint(tmp_path, m, "trt")
    msgs = [f.message for f in errors(res, "GL1004")]
    # sorted=0: the document's "must be 1" is overruled by the importer, which never reads it
    assert not any("sorted=0" in x for x in msgs) and [x for x in msgs if "4000" in x and "3840" in x]
    assert all("https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md#L" in x for x in msgs)
    assert all(f.properties["basis"] == "support-table:rules/data/support/trt-10.15.json#TopK"
               for f in errors(res, "GL1004"))


def test_trt_build_time_constant_inputs(tmp_path):
    # ReduceMean-18 axes computed at run time (from Shape): TensorRT needs an initializer.
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["ax"], axis=0),
             helper.make_node("Unsqueeze", ["ax", "zero1"], ["axes"]),
             helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="rm")]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "zero1")]
    m = _model(nodes, [_vi("x", F, ["n", 4])], [_vi("y", F, None)], opset=18, inits=inits)
    f = errors(lint(tmp_path, m, "trt"), "GL1004")
    assert [x.node for x in f] == ["rm"] and "'axes'" in f[0].message
    # the same ReduceMean with constant axes is fine
    m2 = _model([helper.make_node("ReduceMean", ["x", "zero1"], ["y"], name="rm")], [_vi("x", F, ["n", 4])],
                [_vi("y", F, None)], opset=18, inits=inits[1:])
    assert not errors(lint(tmp_path, m2, "trt"))


def test_trt_version_selects_the_matrix(tmp_path):
    q = [_vi(n, F, [1, 2, 3, 4]) for n in ("q", "k", "v")]
    m = _model([helper.make_node("Attention", ["q", "k", "v"], ["y"], name="att")], q, [_vi("y", F, None)], opset=23)
    assert not errors(lint(tmp_path, m, "trt"), "GL1001")
    assert errors(lint(tmp_path, m, "trt@10.1"), "GL1001")  # no Attention row in the 10.1 matrix


def test_trt_domain_traps(tmp_path):
    ms = [("com.microsoft", 1)]
    rot = _model([helper.make_node("RotaryEmbedding", ["x", "p", "c", "s"], ["y"], name="rope", domain="com.microsoft")],
                 [_vi("x", F, [1, 4, 8]), _vi("p", I64, [1, 4]), _vi("c", F, [4, 4]), _vi("s", F, [4, 4])],
                 [_vi("y", F, None)], extra_opsets=ms)
    f = errors(lint(tmp_path, rot, "trt"), "GL1003")[0]
    assert "position_ids" in f.message and f.rewrite.name == "unfuse-contrib"
    gelu = _model([helper.make_node("Gelu", ["x"], ["y"], name="g", domain="com.microsoft")], [_vi("x", F, [2])],
                  [_vi("y", F, None)], extra_opsets=ms)
    res = lint(tmp_path, gelu, "trt")
    assert not errors(res) and [f.severity.label for f in res.findings if f.rule_id == "GL1003"] == ["warning"]


def test_fused_ops_per_target_and_gl0003_does_not_double_report(tmp_path):
    ms = [("com.microsoft", 1)]
    m = _model([helper.make_node("FastGelu", ["x"], ["y"], name="fg", domain="com.microsoft"),
                helper.make_node("Relu", ["y"], ["z"], name="r")],
               [_vi("x", F, [2])], [_vi("z", F, [2])], extra_opsets=ms)
    path = os.path.join(tmp_path, "fg.onnx")
    onnx.save(m, path)
    run = lint_paths([path], LintOptions(targets=["trt", "ort", "openvino"]))
    by_target = {r.target.name: r for r in run.results}
    trt = by_target["trt"]
    assert [f.rule_id for f in errors(trt)] == ["GL1002"]  # not also GL0003
    assert trt.findings[0].rewrite.to_dict()["params"] == {"node": "fg", "op_type": "FastGelu"}
    assert not errors(by_target["ort"]) and ort_loads(m)
    assert not errors(by_target["openvino"]) and ov_compiles(m, tmp_path)


def test_partition_islands_stats_json_and_sarif(tmp_path, sarif_validator):
    from tests.conftest import run_cli

    # Relu -> Unique -> Det? keep to ops TRT lacks: two separate unsupported islands around a Relu.
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r0"),
             helper.make_node("Bernoulli", ["a"], ["b"], name="bern"),
             helper.make_node("Det", ["b"], ["c"], name="det"),
             helper.make_node("Relu", ["c"], ["d"], name="r1"),
             helper.make_node("Bernoulli", ["d"], ["e"], name="bern2")]
    m = _model(nodes, [_vi("x", F, [2, 2])], [_vi("e", F, None)], opset=17)
    path = os.path.join(tmp_path, "isl.onnx")
    onnx.save(m, path)
    res = lint_paths([path], LintOptions(targets=["trt"])).results[0]
    islands = [f for f in res.findings if f.rule_id == "GL1010"]
    assert [f.node for f in islands] == ["bern", "bern2"]
    assert islands[0].properties["nodes"] == ["bern", "det"] and islands[0].properties["inputs"] == ["a"]
    assert islands[0].properties["outputs"] == ["c"]
    part = res.stats["partition"]
    assert part["unsupported_islands"] == 2 and part["islands"] == 4 and part["supported_pct"] == 40.0
    out = run_cli(path, "--target", "trt", "--format", "json")
    doc = json.loads(out.out)
    assert doc["models"][0]["stats"]["partition"]["supported_nodes"] == 2
    text = run_cli(path, "--target", "trt")
    assert "partition: 40.0% of 5 nodes supported" in text.out
    sarif = json.loads(run_cli(path, "--target", "trt", "--format", "sarif").out)
    sarif_validator(sarif)
    gl110 = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "GL1010"]
    assert len(gl110) == 2 and gl110[0]["properties"]["node"] == "bern"


def test_function_op_newer_than_its_body_is_inlined_like_ort_does(tmp_path):
    """HardSwish-14 has no ORT CPU kernel; ORT inlines its function body. In an opset-18 model (what
    the dynamo exporter writes) the body onnx returns still declares opset 14, which onnx's inliner
    would skip: the table check must expand it at the model's opset, as ORT does."""
    import glob

    from testmodels.fp_classes import models

    path = glob.glob(os.path.join(models(), "hardswish18.onnx"))[0]
    m = onnx.load(path)
    assert m.opset_import[0].version == 18 and "HardSwish" in {n.op_type for n in m.graph.node}
    assert ort_loads(m)
    res = lint_paths([path], LintOptions(targets=["ort"], select=["GL1"]))
    assert not errors(res.results[0])
    # the same on a one-node opset-18 graph (the body's HardSigmoid and Mul have float kernels)
    m18 = _model([helper.make_node("HardSwish", ["x"], ["y"], name="hs")], [_vi("x", F, [2])], [_vi("y", F, [2])],
                 opset=18)
    assert ort_loads(m18) and not errors(lint(tmp_path, m18, "ort"))


@pytest.mark.parametrize(("op", "opset", "runs"), [("Swish", 24, True), ("Swish", 25, False), ("Swish", 26, False),
                                                   ("HardSwish", 26, True), ("Mish", 26, True)])
def test_ort_inlines_a_function_body_only_where_its_ops_are_unchanged(tmp_path, op, opset, runs):
    """Swish-24's body (Constant, CastLike) is written for opset 24; both ops changed at 25, and ORT
    then finds no implementation for Swish(24). HardSwish's and Mish's bodies are the same at 26."""
    m = _model([helper.make_node(op, ["x"], ["y"], name="act")], [_vi("x", F, [2])], [_vi("y", F, [2])], opset=opset)
    assert ort_loads(m) == runs
    errs = errors(lint(tmp_path, m, "ort"))
    assert bool(errs) == (not runs)
    if errs:
        assert "does not inline its function body" in errs[0].message and "CastLike" in errs[0].message


def test_model_local_functions_run_in_ort_but_not_openvino(tmp_path):
    """onnxscript writes helper functions as model-local functions; ONNX Runtime inlines them,
    OpenVINO 2026.4's frontend has no conversion rule for the call (its table records the probe)."""
    fn = helper.make_function("corpus.local", "gated", ["x"], ["y"],
                              [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
                              [helper.make_opsetid("", 18)])
    g = helper.make_graph([helper.make_node("gated", ["x"], ["y"], domain="corpus.local", name="call")], "g",
                          [_vi("x", F, [2])], [_vi("y", F, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("corpus.local", 1)],
                          functions=[fn], ir_version=10)
    assert ort_loads(m) and not ov_compiles(m, tmp_path)
    assert not errors(lint(tmp_path, m, "ort"))
    (f,) = errors(lint(tmp_path, m, "openvino"), "GL1001")
    assert f.node == "call" and "model-local function" in f.message
    assert f.properties["basis"] == "support-table:rules/data/support/openvino-2026.4.json#local_functions"


def _scan_model(outer_ref: bool):
    """A cumulative-sum Scan whose body adds a main-graph value: an initializer, or with
    ``outer_ref`` one computed by a node of the main graph."""
    body_nodes = [helper.make_node("Add", ["s_in", "x_t"], ["s1"])]
    body_nodes.append(helper.make_node("Add", ["s1", "shift" if outer_ref else "bias"], ["s_out"]))
    body_nodes.append(helper.make_node("Identity", ["s_out"], ["y_t"]))
    body = helper.make_graph(body_nodes, "body", [_vi("s_in", F, [2]), _vi("x_t", F, [2])],
                             [_vi("s_out", F, [2]), _vi("y_t", F, [2])])
    scan = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1, name="scan")
    return _model([helper.make_node("Neg", ["s0"], ["shift"]), scan], [_vi("s0", F, [2]), _vi("xs", F, [3, 2])],
                  [_vi("s", F, [2]), _vi("ys", F, [3, 2])], inits=[numpy_helper.from_array(np.ones(2, np.float32), "bias")])


def test_openvino_scan_body_must_not_read_the_enclosing_graph(tmp_path):
    """OpenVINO's Scan translator counts a body's reads of the enclosing graph as missing node
    inputs (scan.cpp: "Number of Scan node inputs ... is less than required"); ONNX Runtime runs it.
    The expanded LinearAttention node tests (opset 27) are built this way."""
    for outer in (False, True):
        m = _scan_model(outer)
        assert ort_loads(m) and ov_compiles(m, tmp_path) == (not outer)
        errs = errors(lint(tmp_path, m, "openvino"), "GL1004")
        assert [f.node for f in errs] == (["scan"] if outer else [])
        assert not errors(lint(tmp_path, m, "ort"))


def test_openvino_converts_untaken_branches_too(tmp_path):
    """An If branch that splits a length-4 input into 5 parts never runs (ONNX Runtime is fine),
    but OpenVINO's frontend converts both branches with their static shapes and refuses the Split
    ("The split number is invalid"). The expanded AffineGrid node tests have such a 3-D branch."""
    def branch(n: int, name: str):
        outs = [f"{name}{i}" for i in range(n)]
        return helper.make_graph([helper.make_node("Split", ["size"], outs, num_outputs=n)], name, [],
                                 [_vi(outs[0], I64, [1])])
    m = _model([helper.make_node("If", ["c"], ["first"], then_branch=branch(4, "t"), else_branch=branch(5, "e"),
                                 name="if")],
               [_vi("c", TensorProto.BOOL, []), _vi("size", I64, [4])], [_vi("first", I64, [1])], opset=18)
    assert ort_loads(m) and not ov_compiles(m, tmp_path)
    (f,) = errors(lint(tmp_path, m, "openvino"), "GL1004")
    assert "static length 4 into num_outputs=5" in f.message and f.properties["basis"].endswith("#ai.onnx/Split")
    # the frontend's chunking: ceil(length / n) each, the rest last; 7 into 3 converts, 6 into 4 does not
    for length, n, ok in ((7, 3, True), (6, 4, False), (8, 4, True)):
        outs = [f"o{i}" for i in range(n)]
        split = _model([helper.make_node("Split", ["x"], outs, num_outputs=n, name="sp")], [_vi("x", I64, [length])],
                       [_vi(o, I64, None) for o in outs], opset=18)
        assert ov_compiles(split, tmp_path) == ok
        assert bool(errors(lint(tmp_path, split, "openvino"), "GL1004")) == (not ok)


def _resize(scales, mode="cubic", opset=13, **attrs):
    x = [1, 3, 4, 4, 4][: len(scales)]
    sc = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    return _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rs", mode=mode, **attrs)],
                  [_vi("x", F, x)], [_vi("y", F, None)], opset=opset, inits=[sc])


@pytest.mark.parametrize("target", ["trt", "trt@10.1"])
def test_trt_cubic_resize_follows_the_importer_source(tmp_path, target):
    # the document lists nearest/linear only; the importer maps cubic to kCUBIC (trt_source_overrides.toml)
    assert not errors(lint(tmp_path, _resize([1, 1, 2, 2]), target), "GL1004")
    # ... but only on the innermost 2 dims when the scales are constant (canUseNDResize(.., 2))
    f = errors(lint(tmp_path, _resize([1, 1, 2, 2, 2]), target), "GL1004")
    assert [x.node for x in f] == ["rs"] and "innermost 2" in f[0].message
    assert "onnxOpImporters.cpp" in f[0].properties["source"]
    # linear may resize 3 inner dims, not 4
    assert not errors(lint(tmp_path, _resize([1, 1, 2, 2, 2], mode="linear"), target), "GL1004")
    f = errors(lint(tmp_path, _resize([1, 2, 2, 2, 2], mode="linear"), target), "GL1004")
    assert f and "innermost 3" in f[0].message


def test_trt_source_types_and_checks_overrule_the_document(tmp_path):
    # NonZero on int64: the document lists FP32/FP16, the importer takes int64 too
    nz = _model([helper.make_node("NonZero", ["x"], ["y"], name="nz")], [_vi("x", I64, [2, 3])], [_vi("y", I64, None)])
    assert not errors(lint(tmp_path, nz, "trt"))
    # HardSwish on bfloat16: the document lists BF16, the importer rejects it
    hs = _model([helper.make_node("HardSwish", ["x"], ["y"], name="hs")], [_vi("x", TensorProto.BFLOAT16, [2])],
                [_vi("y", TensorProto.BFLOAT16, None)])
    f = errors(lint(tmp_path, hs, "trt"), "GL1005")
    assert [x.node for x in f] == ["hs"] and "onnxOpImporters.cpp" in f[0].properties["source"]
    # Mod with fmod=0 on floats (the importer needs integers there)
    md = _model([helper.make_node("Mod", ["a", "b"], ["y"], name="md")], [_vi("a", F, [2]), _vi("b", F, [2])],
                [_vi("y", F, None)])
    assert [x.node for x in errors(lint(tmp_path, md, "trt"), "GL1004")] == ["md"]
    # CumSum with a run-time axis: 10.15's importer takes it, 10.1's asserts an initializer
    cs = _model([helper.make_node("CumSum", ["x", "ax"], ["y"], name="cs")], [_vi("x", F, [2, 3]), _vi("ax", I64, [])],
                [_vi("y", F, None)])
    assert not errors(lint(tmp_path, cs, "trt"), "GL1004")
    assert [x.node for x in errors(lint(tmp_path, cs, "trt@10.1"), "GL1004")] == ["cs"]
