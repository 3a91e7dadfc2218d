"""The loader reads inferred types from a look-alike message that parses only the graphs'
value_info, inputs and outputs (``onnx_loader._types_only``); it must find exactly what the
full onnx.ModelProto holds, in every graph the converter visits (If branches, Loop bodies,
bodies inside functions and inside custom-domain nodes), for every kind of type."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from graphlint.load import onnx_loader, shape_infer


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


def test_types_only_parse_matches_the_full_model() -> None:
    data = _model().SerializeToString()
    inferred = onnx_loader.infer_shapes(data, []) or data
    full = onnx_loader.decode_types(onnx.ModelProto.FromString(inferred))
    lite = onnx_loader.decode_types(onnx_loader._types_only().FromString(inferred))
    assert lite == full
    # main, then, else, the function's Loop body, the custom node's body
    assert len(full.graphs) == len(list(shape_infer.graph_protos(onnx.ModelProto.FromString(inferred)))) == 5
    names = {n for graph_names, _ in full.graphs for n in graph_names}
    assert {"x", "größe", "s", "o", "acc", "u", "t", "e"} <= names
    table = dict(zip(*full.graphs[0], strict=True))
    assert full.table[table["x"]] == ("float32", ("batch", 3, None))
    assert full.table[table["s"]] == ("sequence_type", None)
    assert full.table[table["o"]] == ("optional_type", None)


def test_graph_holders_found_in_serialized_nodes() -> None:
    """The look-alike keeps nodes serialized and finds the ones holding graphs by the bytes
    protobuf writes for a graph-typed attribute. The same bytes inside tensor data (a Constant,
    a custom node's tensor attribute) cost a parse but add no graph."""
    marks = np.frombuffer(b"\xa0\x01\x05\xa0\x01\x0a" * 4, dtype=np.uint8)
    model = _model()
    model.graph.node.extend([
        h.make_node("Constant", [], ["k"], name="marks", value=numpy_helper.from_array(marks, "k")),
        h.make_node("Tagged", ["k"], ["k2"], name="tagged", domain="custom", t=numpy_helper.from_array(marks, "t")),
    ])
    data = model.SerializeToString()
    inferred = onnx_loader.infer_shapes(data, []) or data
    for blob in (data, inferred):
        lite = onnx_loader._types_only().FromString(blob)
        holders = onnx_loader._serialized_graph_holders(lite.graph.node)
        # The marks in Tagged's tensor make it a candidate (it holds no graph); the Constant's are
        # filtered out by op type; Twice has no marks and is never parsed.
        assert [n.op_type for n in holders] == ["If", "Wrapper", "Tagged"]
        full = onnx_loader.decode_types(onnx.ModelProto.FromString(blob))
        assert onnx_loader.decode_types(lite) == full and len(full.graphs) == 5
