"""The loader's two shape-inference paths (forked child vs in-process) give the same model.

Large models run ONNX shape inference and onnx.checker in a forked child while the parent
builds the IR, then merge what inference added. These tests force each path on small
models with subgraphs whose inputs only inference types (a Loop body), If branches, and a
model strict inference rejects, and require identical protos, IR types, issues and findings.
"""

from __future__ import annotations

import os
import select
import sys

import numpy as np
import onnx
import pytest
from fork_support import rerun_unthreaded
from onnx import TensorProto, helper

from graphlint import forked as forking
from graphlint.lint import LintOptions, lint_paths
from graphlint.load import load_model, onnx_loader, shape_infer

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
    monkeypatch.setenv("GRAPHLINT_JOBS", "1")
    serial = load_model(path)
    monkeypatch.delenv("GRAPHLINT_JOBS")
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    forked = load_model(path)
    return serial, forked


def _types(model) -> list:
    return [(g.path, name, v.dtype, v.shape) for g in model.graph.graphs() for name, v in sorted(g.values.items())]


@pytest.mark.parametrize("broken", [False, True])
def test_forked_inference_matches_in_process(tmp_path, monkeypatch, broken, request):
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"), broken)
    serial, forked = _load_both(path, monkeypatch)
    assert "onnx_checker" in forked.precomputed and "onnx_checker" not in serial.precomputed
    assert forked.proto.SerializeToString(deterministic=True) == serial.proto.SerializeToString(deterministic=True)
    assert _types(forked) == _types(serial)
    body = forked.graph.nodes[0].subgraphs["body"]
    assert body.values["acc_in"].dtype == "float32"  # typed only by inference, merged from the child
    assert [(i.kind, i.message) for i in forked.issues] == [(i.kind, i.message) for i in serial.issues]
    assert any(i.kind == "shape-inference" for i in forked.issues) == broken


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
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    assert findings() == serial
    serial_m, forked_m = _load_both(path, monkeypatch)
    assert _types(forked_m) == _types(serial_m)
    assert any(n.op_type == "If" and n.subgraphs for n in forked_m.graph.nodes)
    assert "onnx_checker" in forked_m.precomputed  # the fork path really ran


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
    serial, forked = _load_both(path, monkeypatch)
    assert forked.precomputed["onnx_checker"] is None
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


def test_deferred_types(tmp_path, monkeypatch, request):
    """defer_types returns while the children still run: declared inputs and constants are
    typed already, everything else once ready() (idempotent) has applied inference."""
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"))
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    complete = load_model(path)
    deferred = load_model(path, defer_types=True)
    assert deferred.pending and not complete.pending
    values = deferred.graph.values
    assert (values["x"].dtype, values["x"].shape) == ("float32", (6,))  # declared input
    assert (values["shape"].dtype, values["shape"].shape) == ("int64", (2,))  # initializer
    assert values["r"].dtype is None and "onnx_checker" not in deferred.precomputed
    deferred.ready()
    deferred.ready()
    assert not deferred.pending and _types(deferred) == _types(complete)
    assert "onnx_checker" in deferred.background  # onnx.checker's verdict comes when asked for
    assert deferred.precomputed_value("onnx_checker", "missing") is None
    assert deferred.precomputed == complete.precomputed
    assert [(i.kind, i.message) for i in deferred.issues] == [(i.kind, i.message) for i in complete.issues]
    assert {"wait for shape inference", "merge inferred types"} <= set(deferred.timings)


def test_cancel_kills_deferred_children(tmp_path, monkeypatch, request):
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"))
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    model = load_model(path, defer_types=True)
    pids = [p.pid for p in forking._LIVE]
    assert len(pids) == 2 and model.pending
    forking.cancel_all()
    assert not forking._LIVE
    for pid in pids:
        with pytest.raises(ChildProcessError):  # killed and reaped
            os.waitpid(pid, os.WNOHANG)


def test_checker_verdict_waits_in_the_background(tmp_path, monkeypatch, request):
    """A deferred load leaves onnx.checker's child running in the background once inference is
    done: GL0001 (run after the other rules) waits for its verdict, and a model nobody asks
    kills it."""
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"), broken=True)
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    expected = shape_infer.checker_verdict(onnx.load(path))
    assert expected  # the broken loop fails the checker
    model = load_model(path, defer_types=True)
    model.ready()
    assert set(model.background) == {"onnx_checker"} and "onnx_checker" not in model.precomputed
    assert model.precomputed_value("onnx_checker") == expected
    assert not model.background and not forking._LIVE

    unread = load_model(path, defer_types=True)
    unread.ready()
    (child,) = forking._LIVE
    unread.drop_background()
    assert not forking._LIVE and not unread.background
    with pytest.raises(ChildProcessError):  # killed and reaped
        os.waitpid(child.pid, os.WNOHANG)

    ids = [f.rule_id for f in lint_paths([path], LintOptions(targets=["ort"], select=["GL0001"])).findings()]
    assert "GL0001" in ids and not forking._LIVE


@pytest.mark.parametrize("scratch", [True, False])
@pytest.mark.parametrize("broken", [False, True])
def test_child_reads_the_file_itself(tmp_path, monkeypatch, broken, scratch):
    """The forked children read the model by path, through onnx's file-to-file inference (or,
    with no scratch file, through the bytes): the same types and the same strict-inference
    issues as inference on the bytes."""
    if not scratch:
        monkeypatch.setattr(onnx_loader, "_scratch_file", lambda: None)
    elif not onnx_loader._PROC_FD:
        pytest.skip("file-to-file inference needs /proc/self/fd")
    path = _loop_model(str(tmp_path / "loop.onnx"), broken)
    with open(path, "rb") as f:
        key = onnx_loader.file_key(f.fileno())
        data = f.read()
    got_key, (types, issues) = onnx_loader.infer_types_at(path)
    want_types, want_issues = onnx_loader.infer_types(data)
    assert got_key == key
    assert types == want_types and types is not None
    assert [(i.kind, i.message) for i in issues] == [(i.kind, i.message) for i in want_issues]
    assert bool(issues) == broken
    assert onnx_loader.checker_verdict_at(path) == (key, onnx_loader.checker_verdict(data))


def test_unwritten_scratch_file_falls_back_to_bytes(tmp_path, monkeypatch):
    """onnx's file-to-file inference does not check its write: an empty result (full disk)
    must not read as a model without types; the child infers from the bytes instead."""
    if not onnx_loader._PROC_FD:
        pytest.skip("file-to-file inference needs /proc/self/fd")
    path = _loop_model(str(tmp_path / "loop.onnx"), broken=True)
    monkeypatch.setattr(onnx_loader, "_c_infer_shapes_path", lambda *args: None)  # writes nothing
    _, (types, issues) = onnx_loader.infer_types_at(path)
    with open(path, "rb") as f:
        want_types, want_issues = onnx_loader.infer_types(f.read())
    assert types == want_types and types is not None
    assert [(i.kind, i.message) for i in issues] == [(i.kind, i.message) for i in want_issues]


def test_children_results_for_another_file_version_are_redone(tmp_path, monkeypatch, request):
    """When the file a child read is not the one the parent parsed (replaced in between), the
    child's answers are dropped and redone in-process on what the parent parsed."""
    if rerun_unthreaded(request):
        return
    path = _loop_model(str(tmp_path / "loop.onnx"), broken=True)
    monkeypatch.setenv("GRAPHLINT_JOBS", "1")
    serial = load_model(path)
    monkeypatch.delenv("GRAPHLINT_JOBS")
    monkeypatch.setattr(shape_infer, "FORK_MIN_BYTES", 0)
    read, redone = onnx_loader.read, []
    monkeypatch.setattr(onnx_loader, "read", lambda p: (read(p)[0], (-1, -1, -1, -1)))  # "another version"
    infer = onnx_loader.infer_types
    monkeypatch.setattr(onnx_loader, "infer_types", lambda data: redone.append(1) or infer(data))
    forked = load_model(path)
    assert redone == [1]  # in this process: the child's types were not used
    assert _types(forked) == _types(serial)
    assert [(i.kind, i.message) for i in forked.issues] == [(i.kind, i.message) for i in serial.issues]
    assert forked.precomputed["onnx_checker"] == shape_infer.checker_verdict(forked.proto)
    assert not forking._LIVE


def test_gated_child_waits_for_release(request):
    """A gated child (onnx.checker's) does nothing until released or joined, and exits quietly
    when let go without a release."""
    if rerun_unthreaded(request):
        return
    r, w = os.pipe()
    child = forking.start(lambda: os.write(w, b"ran") and "done", gated=True)
    assert not select.select([r], [], [], 0.3)[0]  # still waiting at the gate
    child.release()
    assert os.read(r, 3) == b"ran" and child.join() == "done"
    assert forking.start(lambda: "joined", gated=True).join() == "joined"  # join releases
    never = forking.start(lambda: os.write(w, b"x"), gated=True)
    never._close_gate()  # as if the parent had died: the child sees EOF and exits
    assert never.join() is forking.DIED
    assert not select.select([r], [], [], 0)[0]
    os.close(r)
    os.close(w)


@pytest.mark.parametrize("own_value_info", [False, True])
def test_guessed_order_of_the_inferred_types(tmp_path, monkeypatch, request, own_value_info):
    """While inference runs, the loader guesses which values its types come for (node outputs,
    then inputs and outputs) and checks the guess name by name; a wrong guess (here: value_info
    of the file's own, listed first and backwards) falls back to looking each name up."""
    if rerun_unthreaded(request):
        return
    path = str(tmp_path / "m.onnx")
    make_models.build(path, nodes=400, hidden=8, n_if=2)
    if own_value_info:
        m = onnx.load(path)
        outs = [o for n in m.graph.node for o in n.output if o and o not in {v.name for v in m.graph.output}]
        m.graph.value_info.extend(onnx.ValueInfoProto(name=o) for o in reversed(outs[:50]))
        onnx.save(m, path)
    monkeypatch.setattr(forking.Pending, "done", lambda self: False)  # the guess is made while waiting
    guesses: list[bool] = []
    apply = onnx_loader._Converter.apply_types

    def spy(conv, types):
        graph, _ = conv.typed[0]
        guessed, names = conv.guessed.get(graph, (None, None))
        guesses.append(guessed is not None and [v.name for v in guessed] == names == types.graphs[0][0])
        apply(conv, types)

    monkeypatch.setattr(onnx_loader._Converter, "apply_types", spy)
    serial, forked = _load_both(path, monkeypatch)
    assert _types(forked) == _types(serial)
    assert guesses == [False, not own_value_info]  # in-process: no guess; forked: right for the plain file
