"""The loader's C part (graphlint/load/_fastbuild.c) builds exactly what its Python loops build.

Every model here loads twice, with the C part and without it (as on an install without a C
compiler), and the two IRs are compared object by object: nodes, values and their wiring,
types from inference, constants, subgraphs, functions and load issues. Models cover what the
C reader must read as protobuf does (explicit default domain, last-wins fields, empty input
and output names, other domains, Constants, graph attributes, names that are not UTF-8), and
bytes it must decline (then the Python loop runs).
"""

from __future__ import annotations

import glob
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from graphlint.ir import Model
from graphlint.load import onnx_loader

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import make_models

HERE = os.path.dirname(os.path.abspath(__file__))
C_PART = onnx_loader._fastbuild


def test_the_c_part_is_built():
    """CI builds it (pip install compiles it; without a compiler the install goes on without):
    every other test here would compare the Python loop with itself if it were missing."""
    assert C_PART is not None


def dump(model: Model) -> list:
    """Everything the loader builds, in order, with objects named by position (not identity)."""
    out: list = [("issues", [(i.kind, i.message, None if i.node is None else i.node.index, i.value, i.graph_path)
                             for i in model.issues])]
    graphs = [model.graph, *model.functions.values()]
    while graphs:
        g = graphs.pop(0)
        at = {id(n): i for i, n in enumerate(g.nodes)}
        out.append(("graph", g.name, g.path, [v.name for v in g.inputs], [v.name for v in g.outputs]))
        for n in g.nodes:
            out.append((type(n).__name__, n.op_type, n.name, n.domain, n.opset, n.index, n.dialect, n.source,
                        n.graph is g, [None if v is None else (v.name, v.graph is g) for v in n.inputs],
                        [(v.name, v.graph is g, v.producer is n) for v in n.outputs], list(n.subgraphs),
                        repr(n.attrs)))
            graphs.extend(n.subgraphs.values())
        for name, v in g.values.items():
            const = v.const
            out.append(("value", name, v.name, v.dtype, v.shape, v.is_input, v.is_output, dict(v.rt_info),
                        v.graph is g, None if v.producer is None else at.get(id(v.producer), "outer"),
                        [at.get(id(c), "outer") for c in v.consumers],
                        None if const is None else (const.name, const.dtype, const.shape, const.location)))
    return out


def both_ways(path: str, monkeypatch: pytest.MonkeyPatch, *, infer: bool = True) -> tuple[list, list, list]:
    """The dumps with and without the C part, and what its fill() returned."""
    c_part = C_PART
    filled: list = []

    class Spy:
        def __getattr__(self, name):
            return getattr(c_part, name)

        def fill(self, *args):
            filled.append(c_part.fill(*args))
            return filled[-1]

    monkeypatch.setattr(onnx_loader, "_fastbuild", Spy())
    fast = dump(onnx_loader.load(path, infer=infer))
    monkeypatch.setattr(onnx_loader, "_fastbuild", None)
    slow = dump(onnx_loader.load(path, infer=infer))
    return fast, slow, filled


def assert_same(path: str, monkeypatch: pytest.MonkeyPatch, *, used: bool = True) -> list:
    for infer in (True, False):
        fast, slow, filled = both_ways(path, monkeypatch, infer=infer)
        assert fast == slow
        # used: the C part built the main graph (a list of picked nodes), else it declined (None)
        assert filled and all((f is not None) == used for f in filled)
    return fast


def save(model: onnx.ModelProto, path) -> str:
    onnx.save(model, str(path))
    return str(path)


def edge_model() -> onnx.ModelProto:
    """Nodes the C reader must read as protobuf does, and the ones it leaves to Python."""
    loop_body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "w"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_value_info("i", onnx.TypeProto()), helper.make_value_info("cond_in", onnx.TypeProto()),
         helper.make_value_info("acc_in", onnx.TypeProto())],
        [helper.make_value_info("cond_out", onnx.TypeProto()), helper.make_value_info("acc_out", onnx.TypeProto())],
    )
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const_t",
                         value=onnx.numpy_helper.from_array(np.ones((2, 3), np.float32))),
        helper.make_node("Constant", [], ["ci"], value_ints=[1, 2]),  # unnamed
        helper.make_node("Add", ["x", "c"], ["a"], name="add", domain="ai.onnx"),  # the default domain spelled out
        helper.make_node("Clip", ["a", "", "hi"], ["clipped"], name="clip"),  # an omitted optional input
        helper.make_node("Dropout", ["clipped"], ["d", ""], name="drop"),  # an omitted optional output
        helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["n", "", "w"], ["looped"], name="loop", body=loop_body),
        helper.make_node("FusedMatMul", ["d", "m"], ["f"], name="fused", domain="com.microsoft", alpha=1.0),
        helper.make_node("Twice", ["f"], ["fn_out"], name="call", domain="local"),
        helper.make_node("Add", ["fn_out", "branch"], ["y"], name="add"),  # a duplicate name
    ]
    fn = helper.make_function("local", "Twice", ["v"], ["r"],
                              [helper.make_node("Add", ["v", "v"], ["r"], name="fn_add")],
                              [helper.make_opsetid("", 17)])
    graph = helper.make_graph(
        nodes, "edges",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("looped", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array(3, np.int64), "n"),
         onnx.numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
         onnx.numpy_helper.from_array(np.ones((3, 3), np.float32), "m"),
         onnx.numpy_helper.from_array(np.ones((2, 3), np.float32), "w")],
    )
    model = helper.make_model(graph, functions=[fn], opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1), helper.make_opsetid("local", 1)])
    model.ir_version = 8
    return model


def test_edge_cases(tmp_path, monkeypatch):
    dumped = assert_same(save(edge_model(), tmp_path / "edges.onnx"), monkeypatch)
    nodes = [d for d in dumped if d[0] == "_OnnxNode"]
    assert ("Add", "add", "ai.onnx") in [d[1:4] for d in nodes]  # "ai.onnx" is the default domain
    assert any(d[1] == "If" and sorted(d[11]) == ["else_branch", "then_branch"] for d in nodes)


def test_the_bench_architecture(tmp_path, monkeypatch):
    """Transformer-like blocks with dynamic shapes and If subgraphs, forked inference included."""
    path = str(tmp_path / "blocks.onnx")
    make_models.build(path, nodes=3000, hidden=24, n_if=2)  # over FORK_MIN_BYTES: inference is forked
    assert os.path.getsize(path) >= onnx_loader.shape_infer.FORK_MIN_BYTES
    dumped = assert_same(path, monkeypatch)
    assert sum(d[0] == "_OnnxNode" for d in dumped) > 2900


def test_last_occurrence_wins_and_unknown_fields(tmp_path, monkeypatch):
    """A node's op type given twice (protobuf keeps the last), and fields the reader skips."""
    m = edge_model()
    extra = onnx.NodeProto(op_type="Sub", doc_string="skipped", overload="o").SerializeToString()
    node = m.graph.node[2]
    merged = onnx.NodeProto.FromString(node.SerializeToString() + extra)
    assert merged.op_type == "Sub"
    node.CopyFrom(merged)
    raw = m.SerializeToString()
    p = tmp_path / "last.onnx"
    p.write_bytes(raw)
    assert_same(str(p), monkeypatch)


def test_names_that_are_not_utf8(tmp_path, monkeypatch):
    """The C reader refuses them as the Python loop does; the model loads again decoded."""
    m = edge_model()
    m.graph.node[2].name = "NAME_A"
    m.graph.node[3].input[0] = "INPUT_B"
    m.graph.node[2].output[0] = "INPUT_B"
    m.graph.node[7].domain = "DOMAIN_C"
    m.opset_import.add(domain="DOMAIN_C", version=1)
    data = m.SerializeToString()
    for marker, junk in ((b"NAME_A", b"\xff\xfeAAAA"), (b"INPUT_B", b"\xed\xa0\x80BBBB"), (b"DOMAIN_C", b"DO\xc3(AINC")):
        assert marker in data
        data = data.replace(marker, junk)  # same length: the framing stays valid
    p = tmp_path / "utf8.onnx"
    p.write_bytes(data)
    dumped = assert_same(str(p), monkeypatch)
    assert any("not valid UTF-8" in str(d) for d in dumped[:1])


def test_declines_a_repeated_graph_field(tmp_path, monkeypatch):
    """protobuf merges two occurrences of ModelProto.graph; the C reader leaves that to Python."""
    m = edge_model()
    second = onnx.ModelProto(graph=onnx.GraphProto(node=[helper.make_node("Relu", ["y"], ["z"], name="more")]))
    raw = m.SerializeToString() + second.SerializeToString()
    assert len(onnx.ModelProto.FromString(raw).graph.node) == len(m.graph.node) + 1
    p = tmp_path / "merged.onnx"
    p.write_bytes(raw)
    assert_same(str(p), monkeypatch, used=False)


def test_declines_bytes_it_does_not_read_as_protobuf_would(tmp_path):
    """A count that differs from the parsed model's, or a node field of an unexpected wire type:
    None, and nothing built."""
    from graphlint.ir import Graph, Value

    raw = edge_model().SerializeToString()
    proto = onnx.ModelProto.FromString(raw)

    def fill(data: bytes, count: int) -> tuple[object, Graph]:
        g = Graph("g", "main")
        conv = onnx_loader._Converter("x.onnx", proto, [])
        node = onnx_loader._OnnxNode("", conv, g, 0, "", "ai.onnx", None)
        return C_PART.fill(data, count, g, node, onnx_loader._NODE_SLOTS, Value("", g),
                                           onnx_loader._VALUE_SLOTS, "ai.onnx", {}, onnx_loader._PICKED), g

    picked, g = fill(raw, len(proto.graph.node))
    assert picked is not None and len(g.nodes) == len(proto.graph.node)
    assert fill(raw, len(proto.graph.node) + 1)[0] is None
    # NodeProto.name (field 3) as a varint: protobuf keeps it as an unknown field
    node = b"\x22\x04Relu" + b"\x18\x01"
    graph = b"\x0a" + bytes([len(node)]) + node
    data = b"\x3a" + bytes([len(graph)]) + graph
    assert onnx.ModelProto.FromString(data).graph.node[0].op_type == "Relu"
    result, g = fill(data, 1)
    assert result is None and g.nodes == [] and g.values == {}


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(HERE, "..", "testmodels", "examples", "**", "*.onnx"),
                                               recursive=True)))
def test_shipped_examples(path, monkeypatch):
    assert_same(path, monkeypatch)


def _decoded_both_ways(model: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch) -> tuple:
    inferred = onnx_loader.infer_shapes(model.SerializeToString(), [])
    assert inferred is not None
    lite = onnx_loader._types_only().FromString(inferred)
    fast = onnx_loader.decode_types(lite, inferred)
    monkeypatch.setattr(onnx_loader, "_fastbuild", None)
    return fast, onnx_loader.decode_types(lite, inferred)


def test_decoded_types_with_subgraphs(tmp_path, monkeypatch):
    path = str(tmp_path / "blocks.onnx")
    make_models.build(path, nodes=400, hidden=8, n_if=2)
    fast, slow = _decoded_both_ways(onnx.load(path), monkeypatch)
    assert fast == slow and len(fast.graphs) == 5  # main, and two Ifs' two branches each


def test_decoded_types_past_the_distinct_types_kept_as_bytes(monkeypatch):
    """More distinct types than the C part compares as bytes (64): the rest go through a dict."""
    n = 150
    nodes = [helper.make_node("Identity", [f"x{k}"], [f"y{k}"]) for k in range(n)]
    nodes += [helper.make_node("Relu", [f"y{k}"], [f"z{k}"]) for k in range(n)]
    graph = helper.make_graph(
        nodes, "many",
        [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [k + 1]) for k in range(n)],
        [helper.make_tensor_value_info(f"z{k}", TensorProto.FLOAT, None) for k in range(n)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    fast, slow = _decoded_both_ways(model, monkeypatch)
    assert fast == slow
    names, ids = fast.graphs[0]
    assert len(fast.table) == n and [fast.table[i] for i in ids[:3]] == [("float32", (1,)), ("float32", (2,)),
                                                                           ("float32", (3,))]
    assert names[:3] == ["y0", "y1", "y2"]
