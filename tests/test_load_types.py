"""The loader reads the inferred types of every graph it builds (If branches, Loop bodies, bodies
inside functions and inside custom-domain nodes), for every kind of type."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from graphlint.load import inference, load_model
from graphlint.load.onnx_types import decode_types, graph_holders, graph_protos


def _branch(name: str, out: str) -> onnx.GraphProto:
    return h.make_graph([h.make_node("Relu", ["x"], [out], name=f"{name}_relu")], name, [],
                        [h.make_tensor_value_info(out, T.FLOAT, None)])


def _model() -> onnx.ModelProto:
    loop_body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"], name="body_cond"),
         h.make_node("Add", ["acc", "acc"], ["acc_out"], name="body_add")],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_value_info("acc", onnx.TypeProto())],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_value_info("acc_out", onnx.TypeProto())],
    )
    fn = h.make_function(
        "custom", "Twice", ["a"], ["b"],
        [h.make_node("Loop", ["", "", "a"], ["b"], name="fn_loop", body=loop_body)],
        [h.make_opsetid("", 17)],
    )
    seq = onnx.TypeProto()
    seq.sequence_type.elem_type.tensor_type.elem_type = T.INT64
    opt = onnx.TypeProto()
    opt.optional_type.elem_type.tensor_type.elem_type = T.FLOAT
    nodes = [
        h.make_node("If", ["cond"], ["y"], name="if", then_branch=_branch("then", "t"),
                    else_branch=_branch("else", "e")),
        h.make_node("Twice", ["y"], ["z"], name="twice", domain="custom"),
        h.make_node("Wrapper", ["z"], ["w"], name="wrapper", domain="custom", body=_branch("wrapped", "u")),
        h.make_node("Shape", ["x"], ["größe"], name="shape"),
        h.make_node("SequenceConstruct", ["größe"], ["s"], name="seq"),
    ]
    graph = h.make_graph(
        nodes, "main",
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", 3, None]), h.make_tensor_value_info("cond", T.BOOL, [])],
        [h.make_tensor_value_info("w", T.FLOAT, None), h.make_value_info("s", seq), h.make_value_info("o", opt)],
        value_info=[h.make_tensor_value_info("z", T.FLOAT16, [2])],
    )
    return h.make_model(graph, functions=[fn],
                        opset_imports=[h.make_opsetid("", 17), h.make_opsetid("custom", 1)])


def test_types_of_every_graph_the_builder_visits(tmp_path) -> None:
    """decode_types() reads the graphs in the order the IR builder visits them (main, If
    branches, the function's Loop body, a custom node's body), every kind of type, and the
    loaded IR carries them."""
    inferred = inference.infer(_model().SerializeToString(), []) or _model()
    types = decode_types(inferred)
    assert len(types.graphs) == len(list(graph_protos(inferred))) == 5
    names = {n for graph_names, _ in types.graphs for n in graph_names}
    assert {"x", "größe", "s", "o", "acc", "u", "t", "e"} <= names
    table = dict(zip(*types.graphs[0], strict=True))
    assert types.table[table["x"]] == ("float32", ("batch", 3, None))
    assert types.table[table["s"]] == ("sequence_type", None)
    assert types.table[table["o"]] == ("optional_type", None)
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    model = load_model(str(path))
    values = model.graph.values
    assert (values["x"].dtype, values["x"].shape) == ("float32", ("batch", 3, None))
    assert values["s"].dtype == "sequence_type" and values["größe"].dtype == "int64"
    then = model.graph.nodes[0].subgraphs["then_branch"]
    assert then.values["t"].dtype == "float32"
    body = model.functions[("custom", "Twice")].nodes[0].subgraphs["body"]
    assert body.values["c_out"].dtype == "bool"


def test_graph_holders_are_found_by_op_type() -> None:
    """Only nodes that may hold graphs are looked into: default-domain If/Loop/Scan/SequenceMap
    and every other domain's nodes; a Constant whose tensor happens to hold the bytes protobuf
    writes for a graph attribute adds no graph."""
    marks = np.frombuffer(b"\xa0\x01\x05\xa0\x01\x0a" * 4, dtype=np.uint8)
    model = _model()
    model.graph.node.extend([
        h.make_node("Constant", [], ["k"], name="marks", value=numpy_helper.from_array(marks, "k")),
        h.make_node("Tagged", ["k"], ["k2"], name="tagged", domain="custom", t=numpy_helper.from_array(marks, "t")),
    ])
    holders = graph_holders(model.graph.node)
    assert [n.op_type for n in holders] == ["If", "Twice", "Wrapper", "Tagged"]
    assert len(decode_types(model).graphs) == 5
