"""rules/data/validity.toml: what ONNX Runtime and OpenVINO do with each class of onnx.checker
complaint, shown on the real engines, and GL0001's severity per target following it."""

from __future__ import annotations

import ast
import os

import numpy as np
import onnx
import pytest
from graphlint_rules._validity import classify, fact, table
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from graphlint.fix.verify import OPENVINO_F32
from testmodels.export_drift import EngineError, lint, run_ort, save
from tests.conftest import ROOT

VERDICTS = {"rejects", "tolerates", "wrong-results", "support-table"}
_NP = {T.FLOAT: np.float32, T.INT64: np.int64, T.STRING: object}


def _vi(name: str, elem: int = T.FLOAT, shape: list | None = (2, 3)) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def _model(nodes, inputs, outputs, *, opset: int = 17, inits=(), value_info=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    out = {}
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 2 for d in tt.shape.dim] if tt.HasField("shape") else [2, 3]
        out[vi.name] = np.ones(shape, _NP.get(tt.elem_type, np.float32))
    return out


def run_openvino(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """Read, compile and run on the CPU plugin, inputs in graph order (OpenVINO may name a Parameter
    after the Cast it absorbed, so feeding by name is not reliable)."""
    import tempfile

    import openvino as ov

    with tempfile.TemporaryDirectory() as d:
        try:
            core = ov.Core()
            compiled = core.compile_model(core.read_model(save(model, d, "m.onnx")), "CPU", OPENVINO_F32)
            compiled([feeds[vi.name] for vi in model.graph.input])
        except Exception as e:
            raise EngineError(f"openvino: {e}") from None


def engines(model: onnx.ModelProto) -> dict[str, bool]:
    """{engine: runs it}: ONNX Runtime session + run, OpenVINO read + compile + run on CPU."""
    res = {}
    for name, run in (("ort", run_ort), ("openvino", run_openvino)):
        try:
            run(model, _feeds(model))
            res[name] = True
        except EngineError:
            res[name] = False
    return res


def gl0001(model: onnx.ModelProto, tmp_path, target: str) -> list:
    return lint(save(model, str(tmp_path), f"m-{target}.onnx"), target, "GL0001")


def assert_follows_table(model: onnx.ModelProto, tmp_path, cid: str) -> None:
    """The engines do what the table says, and GL0001's severity on each target follows it."""
    entry = fact(cid)
    seen = engines(model)
    for name, runs in seen.items():
        want = entry["verdict"][name]
        if want != "support-table":
            assert runs == (want == "tolerates"), f"{cid}: {name} {'runs' if runs else 'rejects'} it, table: {want}"
    for target in ("ort", "openvino", "trt"):
        found = [f for f in gl0001(model, tmp_path, target) if f.properties.get("complaint") == cid]
        assert found, f"{cid}: GL0001 did not classify the complaint on {target}"
        verdict = entry["verdict"].get(target)
        want = "error" if verdict in ("rejects", "wrong-results") else "warning"
        assert {f.severity.label for f in found} == {want}, (target, [f.message for f in found])
        for f in found:
            if want == "error":
                assert f.properties["basis"] == f"engine-fact:rules/data/validity.toml#{cid}"
            elif verdict is None:
                assert f.properties["unknown"] == ["engine behaviour"] and "unknown" in f.message
            else:
                assert "Spec-only" in f.message and "unknown" not in f.properties


def test_table_is_complete():
    with open(os.path.join(ROOT, "tests", "test_validity_table.py"), encoding="utf-8") as fh:
        tests = {n.name for n in ast.parse(fh.read()).body if isinstance(n, ast.FunctionDef)}
    ids = [e["id"] for e in table()["complaint"]]
    assert len(ids) == len(set(ids))
    for e in table()["complaint"]:
        assert set(e["verdict"]) <= {"ort", "openvino", "trt"} and set(e["verdict"].values()) <= VERDICTS, e["id"]
        assert e["what"] and e["source"] and "shared/" not in e["source"], e["id"]
        path, _, name = e["evidence"].partition("::")
        assert path == "tests/test_validity_table.py" and name in tests, e["evidence"]
        if "trt" in e["verdict"] and e["verdict"]["trt"] != "support-table":
            # TensorRT cannot run here: its verdicts come from the parser's source at a pinned commit
            assert "onnx/onnx-tensorrt" in e["source"] and "96e781103cfc" in e["source"], e["id"]


def test_unsorted_graph_runs_everywhere(tmp_path):
    m = _model([helper.make_node("Relu", ["a"], ["y"], name="late_reader"), helper.make_node("Neg", ["x"], ["a"])],
               [_vi("x")], [_vi("y")])
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(m)
    assert_follows_table(m, tmp_path, "unsorted")
    (f,) = gl0001(m, tmp_path, "ort")  # strict inference's untyped-input complaint is folded into it
    assert f.node == "late_reader" and f.rewrite.name == "topological-sort" and f.properties["count"] == 2
    assert classify("Input 0 expected to have type but instead is null", unsorted=False) is None


def test_undefined_input_is_rejected(tmp_path):
    m = _model([helper.make_node("Add", ["x", "ghost"], ["y"])], [_vi("x")], [_vi("y")])
    assert_follows_table(m, tmp_path, "undefined-input")


def test_unproduced_graph_output_is_rejected(tmp_path):
    # what onnxruntime's optimizer leaves of optimum's merged T5 decoder: outputs, no nodes
    m = _model([helper.make_node("Relu", ["x"], ["a"])], [_vi("x")], [_vi("a"), _vi("logits")])
    assert_follows_table(m, tmp_path, "output-not-produced")


def test_duplicate_output(tmp_path):
    m = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["a"]),
                helper.make_node("Abs", ["a"], ["y"])], [_vi("x")], [_vi("y")])
    assert_follows_table(m, tmp_path, "duplicate-output")


def test_op_outside_its_opset_follows_the_support_tables(tmp_path):
    # Trilu became standard at opset 14. In an opset-13 graph OpenVINO runs it (its translator is
    # registered from version 1) and ONNX Runtime does not (its ai.onnx kernel starts at 14): the
    # support tables say the same, so GL1001 is the error on ort and GL0001 a warning everywhere.
    k = numpy_helper.from_array(np.array(0, np.int64), "k")
    m = _model([helper.make_node("Trilu", ["x", "k"], ["y"], name="tri")], [_vi("x")], [_vi("y")], opset=13,
               inits=[k])
    with pytest.raises(onnx.checker.ValidationError, match="No Op registered for Trilu"):
        onnx.checker.check_model(m)
    assert engines(m) == {"ort": False, "openvino": True}
    for target in ("ort", "openvino", "trt"):
        (f,) = gl0001(m, tmp_path, target)
        assert f.severity.label == "warning" and f.properties["complaint"] == "op-not-in-opset", target
    assert "GL1001 reports it" in gl0001(m, tmp_path, "ort")[0].message
    assert "Spec-only" in gl0001(m, tmp_path, "openvino")[0].message
    assert [f.node for f in lint(save(m, str(tmp_path), "t.onnx"), "ort", "GL1001")] == ["tri"]
    assert lint(save(m, str(tmp_path), "t.onnx"), "openvino", "GL1001") == []
    # ops GL2002 knows (LayerNormalization below 17) are left to it: no second finding here
    ln = _model([helper.make_node("LayerNormalization", ["x", "s"], ["y"], axis=-1)], [_vi("x")], [_vi("y")],
                opset=14, inits=[numpy_helper.from_array(np.ones(3, np.float32), "s")])
    assert gl0001(ln, tmp_path, "ort") == []


def test_deprecated_op(tmp_path):
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")
    m = _model([helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")], [_vi("x", shape=[1, 1, 2, 2])],
               [_vi("y", shape=[1, 1, 4, 4])], opset=13, inits=[scales])
    with pytest.raises(onnx.checker.ValidationError) as err:
        onnx.checker.check_model(m)
    assert classify(str(err.value))["id"] == "op-deprecated"
    assert engines(m) == {"ort": False, "openvino": True}
    # Upsample is GL2002's (it says what each engine does); GL0001 does not repeat it
    assert gl0001(m, tmp_path, "ort") == []


def test_declared_shape_conflicts_are_tolerated(tmp_path):
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    for out in (_vi("y", shape=[2, 5]), _vi("y", shape=[2, 3, 1])):
        assert_follows_table(_model(relu, [_vi("x")], [out]), tmp_path, "shape-conflict")
    # in value_info too, and one finding for all of them
    m = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])], [_vi("x")],
               [_vi("y", shape=[2, 7])], value_info=[_vi("a", shape=[5, 3])])
    (f,) = gl0001(m, tmp_path, "openvino")
    assert f.properties["count"] == 2 and f.severity.label == "warning"
    # dim_value -1 (what some converters write for "unknown"): every engine runs it, and graphlint
    # reads it as unknown (inference sees it cleared; GL0007 reports only dims below -1)
    neg = _model(relu, [_vi("x")], [_vi("y", shape=[2, -1])])
    assert engines(neg) == {"ort": True, "openvino": True}
    for target in ("ort", "openvino", "trt"):
        found = lint(save(neg, str(tmp_path), f"neg-{target}.onnx"), target, "GL0")
        assert [f.message for f in found if f.severity.label == "error"] == [], target


def test_declared_type_conflict(tmp_path):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y", T.INT64)])
    assert_follows_table(m, tmp_path, "type-conflict")


def test_node_errors_engines_agree_on(tmp_path):
    cases = {
        "incompatible-dims": _model([helper.make_node("Add", ["x", "z"], ["y"])],
                                    [_vi("x", shape=[1, 4]), _vi("z", shape=[3, 5])], [_vi("y", shape=[None, None])]),
        "unsupported-input-type": _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", T.STRING)],
                                         [_vi("y", T.STRING, [None, None])]),
        "missing-required-attribute": _model([helper.make_node("Concat", ["x", "x"], ["y"])], [_vi("x")],
                                             [_vi("y", shape=[None, None])]),
    }
    short = numpy_helper.from_array(np.ones(3, np.float32), "z")
    short.dims[:] = [4]
    cases["initializer-size"] = _model([helper.make_node("Add", ["x", "z"], ["y"])], [_vi("x", shape=[4])],
                                       [_vi("y", shape=[4])], inits=[short])
    for cid, m in cases.items():
        assert_follows_table(m, tmp_path, cid)


def test_schema_errors_only_onnxruntime_rejects(tmp_path):
    cases = {
        "unknown-attribute": _model([helper.make_node("Relu", ["x"], ["y"], foo=1)], [_vi("x")], [_vi("y")]),
        "attribute-type": _model([helper.make_node("Softmax", ["x"], ["y"], axis=1.5)], [_vi("x")], [_vi("y")]),
        "input-count": _model([helper.make_node("Relu", ["x", "x"], ["y"])], [_vi("x")], [_vi("y")]),
    }
    for cid, m in cases.items():
        assert_follows_table(m, tmp_path, cid)


def test_graph_io_without_shape(tmp_path):
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    assert engines(_model(relu, [_vi("x", shape=None)], [_vi("y")])) == {"ort": True, "openvino": False}
    both = _model(relu, [_vi("x", shape=None)], [_vi("y", shape=None)])
    found = {t: {f.properties["complaint"]: f.severity.label for f in gl0001(both, tmp_path, t)}
             for t in ("ort", "openvino", "trt")}
    assert found["ort"] == {"input-missing-shape": "warning", "output-missing-shape": "warning"}
    assert found["openvino"] == {"input-missing-shape": "error", "output-missing-shape": "warning"}
    assert found["trt"] == {"input-missing-shape": "warning", "output-missing-shape": "warning"}


def test_unreadable_weights_are_rejected(tmp_path):
    from tests.models import external_data_model

    sub = tmp_path / "m"
    sub.mkdir()
    np.ones(16, np.float32).tofile(tmp_path / "outside.bin")
    np.ones(2, np.float32).tofile(sub / "short.bin")
    os.symlink(tmp_path / "outside.bin", sub / "link.bin")
    for loc in ("../outside.bin", str(tmp_path / "outside.bin"), "missing.bin", "short.bin", "link.bin"):
        path = external_data_model(str(sub), loc)
        m = onnx.load(path, load_external_data=False)
        with pytest.raises(EngineError):
            _run_file(path, "ort")
        with pytest.raises(EngineError):
            _run_file(path, "openvino")
        for target in ("ort", "openvino", "trt"):
            (f,) = lint(path, target, "GL0005")
            follows = loc == "link.bin" and target == "trt"  # the parser opens symlinks inside the folder
            assert f.severity.label == ("warning" if follows else "error"), (loc, target)
            if not follows:
                assert f.properties["basis"] == "engine-fact:rules/data/validity.toml#weights-unreadable"
        assert m.graph.initializer[0].data_location == T.EXTERNAL


def _run_file(path: str, engine: str) -> None:
    """Load a model file that has external data (engines resolve it next to the file)."""
    try:
        if engine == "ort":
            import onnxruntime as ort

            ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        else:
            import openvino as ov

            core = ov.Core()
            core.compile_model(core.read_model(path), "CPU")
    except Exception as e:
        raise EngineError(str(e)) from None


def test_cycle_is_rejected(tmp_path):
    m = _model([helper.make_node("Relu", ["b"], ["a"], name="n1"), helper.make_node("Relu", ["a"], ["b"], name="n2"),
                helper.make_node("Add", ["x", "a"], ["y"], name="add")], [_vi("x")], [_vi("y")])
    assert_follows_table(m, tmp_path, "cycle")
    # out of order but acyclic is the tolerated class, not this one
    sortable = _model([helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Neg", ["x"], ["a"])], [_vi("x")],
                      [_vi("y")])
    assert {f.properties["complaint"] for f in gl0001(sortable, tmp_path, "ort")} == {"unsorted"}


def test_external_data_is_left_to_gl0005(tmp_path):
    """onnx.checker cannot open external data beside a model it is handed without its folder; that
    is no problem of the model (both engines run it) and GL0005 checks every location itself."""
    from tests.models import external_data_model

    np.ones(16, np.float32).tofile(tmp_path / "good.bin")
    path = external_data_model(str(tmp_path), "good.bin")
    _run_file(path, "ort")
    _run_file(path, "openvino")
    assert fact("external-data-location")["owner"] == "GL0005"
    for target in ("ort", "openvino", "trt"):
        assert lint(path, target, "GL0") == []


def test_declared_types_hiding_a_type_mismatch(tmp_path):
    """A float16 conversion that leaves a Cast to float in place but declares its output float16:
    strict inference only sees the declared-vs-inferred conflict, yet the Mul behind it gets a float
    and a float16 input, which both engines refuse (the type-conflict class alone OpenVINO ignores)."""
    w = numpy_helper.from_array(np.ones((2, 3), np.float16), "w")
    m = _model([helper.make_node("Cast", ["x"], ["a"], to=T.FLOAT), helper.make_node("Mul", ["a", "w"], ["y"])],
               [_vi("x", T.FLOAT16)], [_vi("y", T.FLOAT16)], value_info=[_vi("a", T.FLOAT16)], inits=[w])
    assert engines(m) == {"ort": False, "openvino": False}
    assert_follows_table(m, tmp_path, "inconsistent-types")
    # the declared type alone (the Cast's output feeds nothing that cares): OpenVINO runs it
    ok = _model([helper.make_node("Cast", ["x"], ["a"], to=T.FLOAT), helper.make_node("Neg", ["a"], ["y"])],
                [_vi("x", T.FLOAT16)], [_vi("y")], value_info=[_vi("a", T.FLOAT16)])
    assert engines(ok) == {"ort": False, "openvino": True}
    assert {f.properties["complaint"] for f in gl0001(ok, tmp_path, "openvino")} == {"type-conflict"}


def test_rotary_cache_batch_is_held_by_onnxruntime_only(tmp_path):
    """RotaryEmbedding-23 without position_ids: the caches must have x's batch. torch's dynamo
    exporter builds them for batch 1 (llama); onnxruntime fails at batch 2, OpenVINO broadcasts."""
    from testmodels.export_drift import run_ort as ort_run

    x = helper.make_tensor_value_info("x", T.FLOAT, ["batch", 2, "seq", 8])
    caches = [helper.make_tensor_value_info(n, T.FLOAT, [1, "seq", 4]) for n in ("c", "s")]
    m = helper.make_model(helper.make_graph([helper.make_node("RotaryEmbedding", ["x", "c", "s"], ["y"], name="rope")],
                                            "g", [x, *caches], [helper.make_tensor_value_info("y", T.FLOAT, None)]),
                          opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    for batch, ok in ((1, True), (2, False)):
        feeds = {"x": np.ones((batch, 2, 3, 8), np.float32), "c": np.ones((1, 3, 4), np.float32),
                 "s": np.zeros((1, 3, 4), np.float32)}
        if ok:
            ort_run(m, feeds)
        else:
            with pytest.raises(EngineError, match="cos_cache"):
                ort_run(m, feeds)
        run_openvino(m, feeds)  # OpenVINO runs both
    path = save(m, str(tmp_path), "rope.onnx")
    (err,) = lint(path, "ort", "GL3003")
    assert err.severity.label == "error" and err.properties["pinned_value"] == 1
    assert err.properties["basis"] == "engine-fact:rules/data/validity.toml#rotary-cache-shape"
    (warn,) = lint(path, "openvino", "GL3003")
    assert warn.severity.label == "warning" and "Spec-only" in warn.message


def test_declared_types_hiding_a_type_mismatch_behind_a_large_weight(tmp_path):
    # the second inference runs on a copy without the weights' data (large initializers become
    # typed graph inputs): the mismatch behind a 64 KB float16 weight is still found
    w = numpy_helper.from_array(np.ones((128, 256), np.float16), "w")
    m = _model([helper.make_node("Cast", ["x"], ["a"], to=T.FLOAT), helper.make_node("MatMul", ["a", "w"], ["y"])],
               [_vi("x", T.FLOAT16, [2, 128])], [_vi("y", T.FLOAT16, [2, 256])],
               value_info=[_vi("a", T.FLOAT16, [2, 128])], inits=[w])
    assert engines(m) == {"ort": False, "openvino": False}
    assert_follows_table(m, tmp_path, "inconsistent-types")
