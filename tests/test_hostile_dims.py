"""Dimensions below -1 and shapes of more than 2^63 - 1 elements (GL0007), judged by the engines.

GL0007 is an error for a target exactly where that engine, run here, cannot take the model:
ONNX Runtime and OpenVINO on a graph input, OpenVINO's IR reader on a bad ``<dim>``; a warning
where it tolerates the dims (TensorRT cannot run here: its parser's handling is cited in
rules/data/targets/trt-*.toml). Every analysis survives such models (all rules, every target),
and ONNX's own shape inference, which aborts the process on a negative dim (onnx#8481), is kept
from them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from graphlint.fix.verify import OPENVINO_F32
from graphlint.load.openvino_loader import refused_dim
from tests.conftest import findings_every_target, run_cli
from tests.hostile_support import add_ir, line_of, lint_cli, lint_sarif, sarif_root, write_ir
from tests.sarif_github import check_github_sarif

TARGETS = ("ort", "openvino", "trt")
BIG = 2**40  # two of these: 2^80 elements


def vi(name: str, dims) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, T.FLOAT, dims)


def relu2(x_dims, y_dims=(1, 4), t_dims=None) -> onnx.ModelProto:
    """x -> Relu -> t -> Relu -> y, with the declared dims given (t in value_info when set)."""
    g = h.make_graph([h.make_node("Relu", ["x"], ["t"], name="relu"), h.make_node("Relu", ["t"], ["y"], name="relu2")],
                     "g", [vi("x", list(x_dims))], [vi("y", list(y_dims))],
                     value_info=[vi("t", list(t_dims))] if t_dims else [])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


def save(tmp_path, name: str, m: onnx.ModelProto) -> str:
    p = str(tmp_path / name)
    onnx.save(m, p)
    return p


def ort_runs(path: str, feed_shape=(1, 4)) -> str | None:
    """None if ONNX Runtime runs the model on a ones tensor of ``feed_shape``, else what it says."""
    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        sess.run(None, {"x": np.ones(feed_shape, np.float32)})
    except Exception as e:
        return " ".join(str(e).split())
    return None


def openvino_runs(path: str, feed_shape=(1, 4)) -> str | None:
    core = ov.Core()
    try:
        compiled = core.compile_model(core.read_model(path), "CPU", OPENVINO_F32)
        compiled({0: np.ones(feed_shape, np.float32)})
    except Exception as e:
        return " ".join(str(e).split())
    return None


def gl0007(path: str, tmp_path) -> dict[str, str]:
    """GL0007's level per target on the graph input 'x' (absent: no finding)."""
    run = lint_sarif([path], str(tmp_path), *[a for t in TARGETS for a in ("--target", t)],
                     "--select", "GL0007").sarif["runs"][0]
    out: dict[str, str] = {}
    for x in run["results"]:
        if x["properties"].get("value") == "x":
            for t in x["properties"].get("targets", [x["properties"]["target"]]):
                out[t.split("@")[0]] = x["level"]
    return out


# --- ONNX: graph inputs ------------------------------------------------------------------------

def test_input_dim_below_minus_one(tmp_path):
    p = save(tmp_path, "neg.onnx", relu2([1, -5], [1, 4]))
    assert ort_runs(p) is None  # ORT treats the dim as free: any size is fed
    said = openvino_runs(p)  # OpenVINO reads it as 0: a [1, 4] tensor is refused, only [1, 0] is taken
    assert (said is not None and "[1,0]" in said.replace(" ", "")) or "shape.compatible" in said
    assert openvino_runs(p, (1, 0)) is None
    assert gl0007(p, tmp_path) == {"ort": "warning", "openvino": "error", "trt": "warning"}


def test_input_of_more_elements_than_int64(tmp_path):
    p = save(tmp_path, "huge.onnx", relu2([BIG, BIG], [BIG, BIG]))
    with pytest.raises((ValueError, MemoryError)):
        np.empty((BIG, BIG), np.float32)  # the one shape ORT would take cannot even be built
    assert "invalid dimensions" in ort_runs(p).lower()
    assert "Cannot allocate memory" in openvino_runs(p)  # compile_model fails
    assert gl0007(p, tmp_path) == {"ort": "error", "openvino": "error", "trt": "warning"}


def test_symbolic_dim_next_to_huge_ones_is_only_a_warning(tmp_path):
    """A named dim could be 0 at run time (an empty batch): the premise is unknown."""
    p = save(tmp_path, "sym.onnx", relu2(["n", BIG, BIG], ["n", BIG, BIG]))
    assert set(gl0007(p, tmp_path).values()) == {"warning"}


# --- ONNX: outputs and value_info, which the engines recompute ----------------------------------

@pytest.mark.parametrize(("name", "model"), [
    ("neg-output", relu2([1, 4], [1, -9])),
    ("neg-value-info", relu2([1, 4], [1, 4], [1, -3])),
    ("huge-output", relu2([1, 4], [BIG, BIG])),
    ("huge-value-info", relu2([1, 4], [1, 4], [BIG, BIG])),
])
def test_declared_dims_the_engines_recompute_are_warnings(tmp_path, name, model):
    p = save(tmp_path, f"{name}.onnx", model)
    assert ort_runs(p) is None and openvino_runs(p) is None
    run = lint_sarif([p], str(tmp_path), *[a for t in TARGETS for a in ("--target", t)],
                     "--select", "GL0007").sarif["runs"][0]
    (res,) = run["results"]  # one finding, the same for every target: one result
    assert res["level"] == "warning" and len(res["properties"]["targets"]) == 3
    assert res["properties"]["value"] in ("t", "y")


@pytest.mark.parametrize("dims", [[1, -3], [BIG, BIG]], ids=["negative", "huge"])
def test_value_info_of_a_model_inferred_in_a_forked_child(tmp_path, dims):
    """Over 1 MB, inference runs in a child that does not abort here (no Slice): the loader
    flags the dims from the types it returns, and GL0007 finds them."""
    m = relu2([1, 4], [1, 4], dims)
    m.graph.initializer.append(nh.from_array(np.zeros(600_000, np.float32), "padding"))
    run = lint_sarif([save(tmp_path, "big.onnx", m)], str(tmp_path), "--target", "ort",
                     "--select", "GL0007").sarif["runs"][0]
    assert [(x["properties"]["value"], x["level"]) for x in run["results"]] == [("t", "warning")]


def test_a_bad_dim_is_reported_where_it_is_declared_not_where_it_propagates(tmp_path):
    m = relu2([1, -5], [1, -5], [1, -5])  # an exporter copied the input's dims downstream
    run = lint_sarif([save(tmp_path, "prop.onnx", m)], str(tmp_path), "--target", "ort",
                     "--select", "GL0007").sarif["runs"][0]
    assert [x["properties"]["value"] for x in run["results"]] == ["x"]


# --- OpenVINO IR ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", " 4 ", "+4", "4.0", "0x10", "1..x", "..", "-2..5", "3..-1", "1..", "..5",
                                  "1..4", "-1", "?", "-2", str(2**63 - 1), str(2**63), "4abc", "-1..-1", "2..1"])
def test_dim_texts_the_ir_reader_refuses(tmp_path, text):
    xml, data = add_ir()
    i = xml.index('names="y">')
    j = xml.index("</port>", i)
    p = write_ir(tmp_path, "d", xml[:i] + f'names="y"><dim>1</dim><dim>{text}</dim>' + xml[j:], data)
    try:
        ov.Core().read_model(p)
        refused = False
    except Exception as e:
        assert "in node dim must be greater or equal to -1" in str(e)
        refused = True
    assert refused_dim(text) == refused
    run = lint_sarif([p], str(tmp_path), "--select", "GL0007").sarif["runs"][0]
    assert ("error" in {x["level"] for x in run["results"]}) == refused


def _ir_from(onnx_path: str, xml_path: str) -> None:
    core = ov.Core()
    ov.save_model(core.read_model(onnx_path), xml_path)


def test_ir_parameter_of_more_elements_than_int64(tmp_path):
    _ir_from(save(tmp_path, "huge.onnx", relu2([BIG, BIG], [BIG, BIG])), str(tmp_path / "huge.xml"))
    p = str(tmp_path / "huge.xml")
    ov.Core().read_model(p)  # the reader takes it ...
    assert "Cannot allocate memory" in openvino_runs(p)  # ... compile_model does not
    run = lint_sarif([p], str(tmp_path), "--select", "GL0007").sarif["runs"][0]
    (res,) = run["results"]  # on the Parameter only: the Relu ports repeat its dims
    assert res["level"] == "error" and res["properties"]["value"] == "x"
    with open(p, encoding="utf-8") as f:
        text = f.read()
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == line_of(text, 'type="Parameter"')


def test_ir_port_of_more_elements_than_int64_inside_the_graph(tmp_path):
    xml, data = add_ir()
    i = xml.index('names="y">')
    j = xml.index("</port>", i)
    p = write_ir(tmp_path, "o", xml[:i] + f'names="y"><dim>{BIG}</dim><dim>{BIG}</dim>' + xml[j:], data)
    assert openvino_runs(p) is None  # OpenVINO infers the Add's shape itself
    run = lint_sarif([p], str(tmp_path), "--select", "GL0007").sarif["runs"][0]
    assert [x["level"] for x in run["results"]] == ["warning"]


# --- ONNX's shape inference and every analysis survive them --------------------------------------

def many_ops(dims: list[int]) -> onnx.ModelProto:
    """Shape-sensitive ops (Slice above all: onnx's inference aborts on it) over an input of ``dims``."""
    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        h.make_node("Shape", ["r"], ["s"], name="shape"),
        h.make_node("ConstantOfShape", ["s"], ["z"], name="cos"),
        h.make_node("Add", ["r", "z"], ["a"], name="add"),
        h.make_node("Flatten", ["a"], ["f"], name="flatten", axis=1),
        h.make_node("Reshape", ["a", "rs"], ["rr"], name="reshape"),
        h.make_node("Transpose", ["rr"], ["tt"], name="transpose", perm=[1, 0]),
        h.make_node("Concat", ["f", "f"], ["cc"], name="concat", axis=0),
        h.make_node("ReduceSum", ["cc"], ["rsum"], name="rsum", keepdims=1),
        h.make_node("Expand", ["x", "es"], ["ex"], name="expand"),
        h.make_node("Slice", ["x", "st", "en"], ["sl"], name="slice"),
        h.make_node("MatMul", ["tt", "f"], ["mm"], name="matmul"),
        h.make_node("Resize", ["x4", "", "sc"], ["rz"], name="resize", mode="nearest"),
        h.make_node("Gather", ["x", "gi"], ["g"], name="gather", axis=1),
        h.make_node("Conv", ["x4", "w"], ["cv"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("MaxPool", ["x4"], ["mp"], name="pool", kernel_shape=[2, 2]),
    ]
    inits = [nh.from_array(np.array([-1, 2], np.int64), "rs"), nh.from_array(np.array([1, 1], np.int64), "es"),
             nh.from_array(np.array([0], np.int64), "st"), nh.from_array(np.array([2], np.int64), "en"),
             nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc"), nh.from_array(np.array([0], np.int64), "gi"),
             nh.from_array(np.ones((1, 1, 3, 3), np.float32), "w")]
    outs = ["rsum", "ex", "sl", "mm", "rz", "g", "cv", "mp"]
    g = h.make_graph(nodes, "g", [vi("x", dims), vi("x4", [1, 1, *dims])], [vi(o, None) for o in outs],
                     initializer=inits, value_info=[vi("r", dims)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


HOSTILE_DIMS = {"neg": [3, -5], "neg-first": [-7, -2], "minus-one": [-1, 4], "huge": [BIG, BIG],
                "int64-max": [2**63 - 1, 2**63 - 1], "mixed": [2**62, -5]}


def test_onnx_shape_inference_itself_aborts_on_them(tmp_path):
    """Why graphlint hides negative dims from it: the whole process dies (SIGABRT, onnx#8481)."""
    p = save(tmp_path, "neg.onnx", many_ops(HOSTILE_DIMS["neg-first"]))
    assert _onnx_inference_exit(p) == -signal.SIGABRT


def _onnx_inference_exit(path: str) -> int:
    code = "import onnx, sys; onnx.shape_inference.infer_shapes(onnx.load(sys.argv[1]))"
    return subprocess.run([sys.executable, "-c", code, path], capture_output=True, timeout=120).returncode


@pytest.mark.parametrize(("name", "big"), [(n, False) for n in sorted(HOSTILE_DIMS)]
                         + [("neg-first", True), ("minus-one", True)])
def test_every_rule_and_target_survives_them(tmp_path, name, big):
    """All rules, every target; big: over 1 MB, so shape inference runs in a forked child (the
    child aborts; the parent redoes it in-process, guarded) and nothing reaches stderr."""
    m = many_ops(HOSTILE_DIMS[name])
    if big:
        m.graph.initializer.append(nh.from_array(np.zeros(600_000, np.float32), "padding"))
    p = save(tmp_path, f"{name}.onnx", m)
    targets = [a for t in TARGETS for a in ("--target", t)]
    if big:  # a real process: what a crashing child writes to file descriptor 2 shows up here
        out = tmp_path / "r.sarif"
        r = run_cli(p, *targets, "--format", "sarif", "-o", str(out))
        doc = json.loads(out.read_text(encoding="utf-8"))
        check_github_sarif(doc, sarif_root(()))
    else:
        r = lint_sarif([p], str(tmp_path), *targets)
        doc = r.sarif
    assert r.code in (0, 1) and r.err.strip() == "", r.err
    results = doc["runs"][0]["results"]
    rules = {x["ruleId"] for x in results}
    assert "GL9002" not in rules, [x["message"]["text"] for x in results if x["ruleId"] == "GL9002"]
    if name != "minus-one":
        assert "GL0007" in rules
    j = json.loads(lint_cli(p, "--target", "ort", "--format", "json", "-j", "1").out)  # no fork: all in-process
    assert not [f for m_ in j["models"] for f in m_["findings"] if f["rule_id"] == "GL9002"]


@pytest.mark.parametrize("where", ["initializer", "constant"])
def test_tensors_with_negative_dims_do_not_abort_either(tmp_path, where):
    w = T(name="w", data_type=T.FLOAT, dims=[-3, 4])
    nodes = [h.make_node("Slice", ["w", "st", "en", "ax"], ["y"], name="slice")]
    inits = [nh.from_array(np.array([0], np.int64), n) for n in ("st", "en", "ax")]
    if where == "initializer":
        inits.append(w)
    else:
        nodes.insert(0, h.make_node("Constant", [], ["w"], name="const", value=w))
    g = h.make_graph(nodes, "g", [], [vi("y", None)], initializer=inits)
    p = save(tmp_path, f"{where}.onnx", h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8))
    assert _onnx_inference_exit(p) == -signal.SIGABRT
    r = lint_sarif([p], str(tmp_path), "--target", "ort")
    assert r.code in (0, 1) and r.err.strip() == "", r.err


def test_every_rule_survives_them_in_openvino_ir(tmp_path):
    xml, data = add_ir()
    for name, dims in (("huge", [BIG, BIG]), ("neg", [1, -7]), ("max", [2**63 - 1, 2**63 - 1])):
        text = xml.replace("<dim>1</dim>\n\t\t\t\t\t<dim>4</dim>", "".join(f"<dim>{d}</dim>" for d in dims))
        p = write_ir(tmp_path, name, text, data)
        r = lint_sarif([p], str(tmp_path))
        assert r.code == 1 and r.err.strip() == "", r.err
        rules = {x["ruleId"] for x in r.sarif["runs"][0]["results"]}
        assert "GL0007" in rules and "GL9002" not in rules


def test_fix_refuses_such_a_model_in_one_line(tmp_path):
    """`graphlint fix` runs onnx's shape inference on the model it rewrites: it refuses instead of aborting."""
    g = h.make_graph([h.make_node("Slice", ["x", "st", "en", "ax"], ["s"], name="slice"),
                      h.make_node("Resize", ["s", "", "sc"], ["y"], name="resize", mode="linear")], "g",
                     [vi("x", [-7, 1, 4, 4])], [vi("y", [0, 1, 8, 8])],
                     initializer=[*(nh.from_array(np.array([0], np.int64), n) for n in ("st", "en", "ax")),
                                  nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc")])
    p = save(tmp_path, "neg.onnx", h.make_model(g, opset_imports=[h.make_opsetid("", 13)], ir_version=8))
    assert _onnx_inference_exit(p) == -signal.SIGABRT
    r = run_cli("fix", p, "-o", str(tmp_path / "fixed.onnx"), "--target", "ort")
    assert r.code == 2, (r.code, r.err[-300:])
    (line,) = r.err.strip().splitlines()
    assert "not fixing" in line and "GL0007" in line and not (tmp_path / "fixed.onnx").exists()


def test_guard_leaves_clean_models_alone():
    from graphlint.load.inference import without_negative_dims

    data = relu2([1, 4]).SerializeToString()
    assert without_negative_dims(data) is data
    guarded = onnx.ModelProto.FromString(without_negative_dims(relu2([1, -5], [1, -5], [1, -5]).SerializeToString()))
    dims = [[d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
            for v in (*guarded.graph.input, *guarded.graph.output, *guarded.graph.value_info)]
    assert dims == [[1, None]] * 3


def test_findings_do_not_depend_on_where_inference_ran(tmp_path):
    """Over 1 MB inference runs in a forked child, on the file as it is; in-process (``-j 1``)
    it runs on the dims cleared (above). Where a model declares negative dims (paddle2onnx's
    -1) the two answers differ, so the loader takes the guarded one either way."""
    m = relu2([-1, 4], [-1, 4], [-1, 4])
    m.graph.initializer.append(nh.from_array(np.zeros(600_000, np.float32), "padding"))
    p = save(tmp_path, "minus-one.onnx", m)

    forked = findings_every_target(p)
    assert "GL4007" in {r for r, *_ in forked}, forked
    assert forked == findings_every_target(p, "-j", "1")


def _with_negative(where: str) -> onnx.ModelProto:
    """relu2 with one negative dim ``where`` (or none: "clean", "other-attr")."""
    m = relu2([1, 4], [1, 4])
    g = m.graph
    if where == "value_info":
        g.value_info.append(vi("t", [1, -4]))
    elif where == "initializer":
        g.initializer.append(T(name="w", data_type=T.FLOAT, dims=[-2, 4]))
    elif where == "sparse_initializer":
        g.sparse_initializer.append(h.make_sparse_tensor(T(name="sv", data_type=T.FLOAT, dims=[1]),
                                                         T(name="si", data_type=T.INT64, dims=[1]), [-3, 4]))
    elif where in ("constant", "constant-sparse"):
        tensor = T(name="c", data_type=T.FLOAT, dims=[-1, 4])
        node = (h.make_node("Constant", [], ["c"], value=tensor) if where == "constant" else
                h.make_node("Constant", [], ["c"], sparse_value=h.make_sparse_tensor(
                    T(name="cv", data_type=T.FLOAT, dims=[1]), T(name="ci", data_type=T.INT64, dims=[1]), [-3, 4])))
        g.node.insert(0, node)
    elif where == "subgraph":
        body = h.make_graph([h.make_node("Identity", ["x"], ["o"])], "then", [], [vi("o", [-1, 4])])
        g.node.append(h.make_node("If", ["cond"], ["z"], then_branch=body, else_branch=body))
        g.input.append(h.make_tensor_value_info("cond", T.BOOL, []))
    elif where == "other-attr":  # a tensor attribute whose dims shape nothing inference computes
        g.node.append(h.make_node("ConstantOfShape", ["s"], ["z"], value=T(name="v", data_type=T.FLOAT, dims=[-1])))
    return m


@pytest.mark.parametrize("where", ["clean", "value_info", "initializer", "sparse_initializer", "constant",
                                   "constant-sparse", "subgraph", "other-attr"])
def test_the_loader_finds_the_negative_dims_the_guard_clears(tmp_path, where):
    """The forked path takes the in-process, guarded inference exactly where the guard would
    change the model (the builder reads the tensors' dims, the protobuf gives the value types)."""
    from graphlint.load import inference
    from graphlint.load.onnx_build import Builder
    from graphlint.load.onnx_types import graph_protos

    m = _with_negative(where)
    data = m.SerializeToString()
    guard_changes = inference.without_negative_dims(data) is not data
    assert guard_changes == (where not in ("clean", "other-attr"))
    builder = Builder(str(tmp_path / "m.onnx"), m, [])
    builder.convert()
    found = inference.may_have_negative_dims(data) and (
        builder.negative_tensor_dims or inference.has_negative_dims(builder.graph_protos, tensors=False))
    assert found == guard_changes
    assert inference.has_negative_dims(graph_protos(m)) == guard_changes
