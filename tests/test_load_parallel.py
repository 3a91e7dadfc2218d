"""The loader's two shape-inference paths (a forked child vs in-process) give the same model.

Large models run ONNX shape inference and then onnx.checker in a forked child while the parent
parses and builds the IR. These tests force each path on small models with subgraphs whose
inputs only inference types (a Loop body), If branches, and a model strict inference rejects,
and require identical protos, IR types, issues and findings.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from fork_support import rerun_unthreaded
from onnx import TensorProto, helper

from graphlint import procs
from graphlint.lint import LintOptions, lint_paths
from graphlint.load import inference, load_model, load_with_background, onnx_loader

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import make_models

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the parallel path needs os.fork")


def _loop_model(path: str, broken: bool = False) -> str:
    """y = Loop(3) { acc = acc + x } with body inputs left untyped, so inference types them."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body",
        [helper.make_value_info("i", onnx.TypeProto()), helper.make_value_info("cond_in", onnx.TypeProto()),
         helper.make_value_info("acc_in", onnx.TypeProto())],
        [helper.make_value_info("cond_out", onnx.TypeProto()), helper.make_value_info("acc_out", onnx.TypeProto())],
    )
    nodes = [
        helper.make_node("Loop", ["n", "", "x"], ["y"], name="loop", body=body),
        helper.make_node("Reshape", ["y", "shape"], ["r"], name="reshape"),
        helper.make_node("Add", ["r", "bias"], ["z"], name="add"),
    ]
    bias = np.zeros(3 if not broken else 4, np.float32)  # [2, 3] + [4] cannot broadcast: strict inference fails
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array(3, np.int64), "n"),
         onnx.numpy_helper.from_array(np.array([2, 3], np.int64), "shape"),
         onnx.numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _load_both(path: str, monkeypatch) -> tuple:
    serial, none = load_with_background(path, child=False)
    assert not none
    monkeypatch.setattr(inference, "FORK_MIN_BYTES", 0)
    forked, background = load_with_background(path)
    assert set(background) == {"onnx_checker"}  # the child really ran
    return serial, forked, background["onnx_checker"]


def _types(model) -> list:
    return [(g.path, name, v.dtype, v.shape) for g in model.graph.graphs() for name, v in sorted(g.values.items())]


def _reaped(child: procs.Child) -> bool:
    return child._process is not None and not child._process.is_alive()


@pytest.mark.parametrize("broken", [False, True])
def test_forked_inference_matches_in_process(tmp_path, monkeypatch, broken, request):
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"), broken)
    serial, forked, verdict = _load_both(path, monkeypatch)
    assert forked.proto.SerializeToString(deterministic=True) == serial.proto.SerializeToString(deterministic=True)
    assert _types(forked) == _types(serial)
    body = forked.graph.nodes[0].subgraphs["body"]
    assert body.values["acc_in"].dtype == "float32"  # typed only by inference, sent back by the child
    assert [(i.kind, i.message) for i in forked.issues] == [(i.kind, i.message) for i in serial.issues]
    assert any(i.kind == "shape-inference" for i in forked.issues) == broken
    assert (verdict.result() is not None) == broken
    assert not procs._LIVE  # the child ended once its last answer was read


def test_bench_model_findings_identical(tmp_path, monkeypatch, request):
    """A transformer-like bench model with If subgraphs: same findings on both paths."""
    if rerun_unthreaded(request):
        return
    path = str(tmp_path / "m.onnx")
    make_models.build(path, nodes=400, hidden=8, n_if=2)

    def findings() -> list:
        run = lint_paths([path], LintOptions(targets=["trt", "ort"]))
        return [(f.rule_id, f.message, f.target) for f in run.findings()]

    monkeypatch.setenv("GRAPHLINT_JOBS", "1")
    serial = findings()
    monkeypatch.delenv("GRAPHLINT_JOBS")
    monkeypatch.setattr(inference, "FORK_MIN_BYTES", 0)
    assert findings() == serial
    serial_m, forked_m, verdict = _load_both(path, monkeypatch)
    verdict.cancel()
    assert _types(forked_m) == _types(serial_m)
    assert any(n.op_type == "If" and n.subgraphs for n in forked_m.graph.nodes)


def _untyped_output_model(path: str) -> str:
    """A custom-domain node holding a graph attribute (its body must still become a subgraph)
    and a main-graph output without a type: onnx.checker rejects the file as it is but
    accepts it once inference typed the output, which is what GL0001 reports."""
    body = helper.make_graph([helper.make_node("Neg", ["x"], ["nx"], name="body_neg")], "body", [],
                             [helper.make_tensor_value_info("nx", TensorProto.FLOAT, [6])])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Frob", ["r"], ["f"], name="frob", domain="com.example", body=body),
             helper.make_node("Relu", ["r"], ["y"], name="relu2")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                              [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_checker_verdict_is_about_the_inferred_model(tmp_path, monkeypatch, request):
    if rerun_unthreaded(request):
        return
    path = _untyped_output_model(str(tmp_path / "untyped.onnx"))
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(path)
    serial, forked, verdict = _load_both(path, monkeypatch)
    assert verdict.result() is None
    for model in (serial, forked):
        assert model.graph.values["y"].dtype == "float32"
        assert model.proto.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
        assert model.graph.nodes[1].subgraphs["body"].values["nx"].shape == (6,)
    assert _types(forked) == _types(serial)

    def rule_ids() -> list:
        return [f.rule_id for f in lint_paths([path], LintOptions(targets=["ort"])).findings()]

    monkeypatch.setenv("GRAPHLINT_JOBS", "1")
    serial_ids = rule_ids()
    monkeypatch.delenv("GRAPHLINT_JOBS")
    assert "GL0001" not in serial_ids and "GL0004" in serial_ids
    assert rule_ids() == serial_ids


def test_checker_verdict_waits_in_the_background(tmp_path, monkeypatch, request):
    """onnx.checker runs in the child after inference: GL0001 (run after the other rules) waits
    for its verdict, and a verdict nobody asks for has its child killed."""
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"), broken=True)
    monkeypatch.setattr(inference, "FORK_MIN_BYTES", 0)
    expected = inference.checker_verdict(onnx.load(path))
    assert expected  # the broken loop fails the checker
    _, background = load_with_background(path)
    assert background["onnx_checker"].result() == expected
    assert not procs._LIVE

    _, unread = load_with_background(path)
    (child,) = procs._LIVE
    unread["onnx_checker"].cancel()
    assert not procs._LIVE and _reaped(child)

    ids = [f.rule_id for f in lint_paths([path], LintOptions(targets=["ort"], select=["GL0001"])).findings()]
    assert "GL0001" in ids and not procs._LIVE


def test_cancel_all_kills_the_children(tmp_path, monkeypatch, request):
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"))
    monkeypatch.setattr(inference, "FORK_MIN_BYTES", 0)
    load_with_background(path)
    (child,) = procs._LIVE
    procs.cancel_all()
    assert not procs._LIVE and _reaped(child)


@pytest.mark.parametrize("broken", [False, True])
def test_child_reads_the_file_itself(tmp_path, broken):
    """The child reads the model by path, through onnx's file-to-file inference: the same types
    and the same strict-inference issues as inference on the bytes."""
    path = _loop_model(str(tmp_path / "loop.onnx"), broken)
    with open(path, "rb") as f:
        key = inference.file_key(f.fileno())
        data = f.read()
    got_key, (types, issues) = inference.infer_types_at(path)
    want_types, want_issues = inference.infer_types(data)
    assert got_key == key
    assert types == want_types and types is not None
    assert [(i.kind, i.message) for i in issues] == [(i.kind, i.message) for i in want_issues]
    assert bool(issues) == broken
    assert inference.checker_verdict_at(path) == (key, inference.checker_verdict(data))


def test_unwritten_scratch_file_falls_back_to_bytes(tmp_path, monkeypatch):
    """onnx's file-to-file inference does not check its write: an empty result (full disk)
    must not read as a model without types; the child infers from the bytes instead."""
    path = _loop_model(str(tmp_path / "loop.onnx"), broken=True)
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes_path", lambda src, dst, *a, **k: open(dst, "wb").close())
    _, (types, issues) = inference.infer_types_at(path)
    with open(path, "rb") as f:
        want_types, want_issues = inference.infer_types(f.read())
    assert types == want_types and types is not None
    assert [(i.kind, i.message) for i in issues] == [(i.kind, i.message) for i in want_issues]


def test_children_results_for_another_file_version_are_redone(tmp_path, monkeypatch, request):
    """When the file the child read is not the one the parent parsed (replaced in between), the
    child's answers are dropped and redone in-process on what the parent parsed."""
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"), broken=True)
    serial = load_model(path)
    monkeypatch.setattr(inference, "FORK_MIN_BYTES", 0)
    read, redone = onnx_loader.read, []
    monkeypatch.setattr(onnx_loader, "read", lambda p: (read(p)[0], (-1, -1, -1, -1)))  # "another version"
    infer = inference.infer_types
    monkeypatch.setattr(inference, "infer_types", lambda data: redone.append(1) or infer(data))
    forked, background = load_with_background(path)
    assert redone == [1]  # in this process: the child's types were not used
    assert _types(forked) == _types(serial)
    assert [(i.kind, i.message) for i in forked.issues] == [(i.kind, i.message) for i in serial.issues]
    assert background["onnx_checker"].result() == inference.check(forked.proto)
    assert not procs._LIVE


def _two_chains(path: str) -> str:
    """Two unconnected chains (two components; Relu/Neg both supported) and a Loop."""
    nodes = [helper.make_node("Relu", ["a"], ["a1"], name="ra"), helper.make_node("Neg", ["a1"], ["ya"], name="na"),
             helper.make_node("Relu", ["b"], ["b1"], name="rb"), helper.make_node("Neg", ["b1"], ["yb"], name="nb")]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("a", "b", "ya", "yb")]
    graph = helper.make_graph(nodes, "g", vi[:2], vi[2:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_structure_work_runs_on_the_frozen_structure_while_the_child_infers(tmp_path, monkeypatch, request):
    """What the loader computes while it waits for the child's types (``meanwhile``) sees the
    graph and nodes already read-only and gives what the analysis computes on the loaded model."""
    if rerun_unthreaded(request):
        return
    from graphlint.analysis.partition import components

    path = _two_chains(str(tmp_path / "chains.onnx"))
    monkeypatch.setattr(inference, "FORK_MIN_BYTES", 0)
    seen = {}

    def probe(main):
        for obj, attr in ((main, "name"), (main.nodes[0], "name")):
            with pytest.raises(AttributeError, match="read-only"):
                setattr(obj, attr, "x")
        seen["nodes"] = len(main.nodes)
        return components(main)

    model, background = load_with_background(path, meanwhile={"components": probe})
    background["onnx_checker"].cancel()
    early = background["components"].result()
    assert seen == {"nodes": 4}
    assert [[n.name for n in c] for c in early] == [["ra", "na"], ["rb", "nb"]]
    assert [list(map(id, c)) for c in early] == [list(map(id, c)) for c in components(model.graph)]
    _, none = load_with_background(path, child=False, meanwhile={"components": probe})
    assert not none  # without a child nothing runs early: the analysis computes it


def test_partition_stats_identical_with_structure_work(tmp_path, monkeypatch, request):
    """The partition summary (islands of an all-supported graph are its components) and findings
    are the same whether the loader computed the components or the analysis did."""
    if rerun_unthreaded(request):
        return
    path = _two_chains(str(tmp_path / "chains.onnx"))

    def outcome() -> tuple:
        run = lint_paths([path], LintOptions(targets=["trt", "ort"]))
        return [r.stats.get("partition") for r in run.results], [(f.rule_id, f.message) for f in run.findings()]

    serial = outcome()
    monkeypatch.setattr(inference, "FORK_MIN_BYTES", 0)
    assert outcome() == serial
    assert serial[0][0]["islands"] == 2
