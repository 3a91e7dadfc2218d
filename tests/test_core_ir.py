"""The normalized IR from real exports: torch (both exporters) to ONNX, and OpenVINO IR."""

from __future__ import annotations

import os
import re

import onnx
import pytest

from graphlint.ir import ONNX, OPENVINO
from graphlint.load import load_model
from testmodels import build_core
from testmodels.common import cached


@pytest.fixture(scope="session")
def core_models() -> str:
    return cached("core", build_core.build)


@pytest.mark.parametrize("name", ["convnet_opset17.onnx", "convnet_dynamo.onnx"])
def test_onnx_export_maps_every_node_and_value(core_models, name):
    path = os.path.join(core_models, name)
    proto = onnx.load(path)
    model = load_model(path)
    assert model.format == "onnx" and model.dialect == ONNX
    assert [n.op_type for n in model.graph.nodes] == [n.op_type for n in proto.graph.node]
    assert model.opset_imports["ai.onnx"] == {o.domain: o.version for o in proto.opset_import}[""]
    inp = model.graph.inputs[0]
    assert inp.name == "pixel_values" and inp.dtype == "float32"
    assert inp.shape[1:] == (3, 32, 32) and isinstance(inp.shape[0], str)  # symbolic batch
    # shape inference filled every intermediate value of this plain conv net
    assert all(v.shape is not None for n in model.graph.nodes for v in n.outputs)
    for node in model.graph.nodes:
        for v in node.outputs:
            assert v.producer is node
        for v in node.inputs:
            if v is not None and not v.is_input and not v.is_constant:
                assert node in v.consumers and v.producer is not None


def test_onnx_weights_are_lazy(core_models):
    model = load_model(os.path.join(core_models, "convnet_opset17.onnx"))
    consts = [v.const for v in model.graph.values.values() if v.const is not None]
    assert consts, "the export has initializers"
    assert all(t._array is None for t in consts)  # nothing read yet
    w = max(consts, key=lambda t: t.size)
    arr = w.numpy()
    assert arr.shape == w.shape and str(arr.dtype) == w.dtype


def test_openvino_ir_layers_ports_lines(core_models):
    xml = os.path.join(core_models, "convnet.xml")
    model = load_model(xml)
    assert model.format == "openvino" and model.dialect == OPENVINO
    with open(xml, encoding="utf-8") as f:
        text = f.read().splitlines()
    layers = [ln for ln in text if "<layer " in ln]
    assert len(model.graph.nodes) == len(layers)
    for node in model.graph.nodes:
        line = text[node.source.line - 1]
        assert f'id="{node.source.layer_id}"' in line and f'type="{node.op_type}"' in line
        assert re.match(r"opset\d+", node.opset)
    (inp,) = model.graph.inputs
    assert inp.name == "pixel_values" and inp.shape == (None, 3, 32, 32) and inp.dtype == "float32"
    assert model.graph.outputs and model.graph.outputs[0].shape[1:] == (10,)
    assert "layout" not in inp.rt_info
    consts = [n.outputs[0].const for n in model.graph.nodes if n.op_type == "Const"]
    assert consts and all(c is not None and c._array is None for c in consts)
    assert consts[0].numpy().size == consts[0].size


def test_openvino_layout_rt_info(core_models):
    model = load_model(os.path.join(core_models, "convnet_nchw.xml"))
    assert model.graph.inputs[0].rt_info.get("layout") == "[N,C,H,W]"


def test_subgraphs_are_kept_and_walked():
    from onnx import TensorProto as T
    from onnx import helper as h

    then_g = h.make_graph([h.make_node("Relu", ["x"], ["t"], name="inner_relu")], "then",
                          [], [h.make_tensor_value_info("t", T.FLOAT, [2])])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["e"], name="inner_neg")], "else",
                          [], [h.make_tensor_value_info("e", T.FLOAT, [2])])
    g = h.make_graph([h.make_node("If", ["c"], ["y"], name="If_3", then_branch=then_g, else_branch=else_g)], "m",
                     [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [2])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2])])
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "if.onnx")
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), p)
        model = load_model(p)
    names = [(n.graph.path, n.name) for n in model.walk()]
    assert names[0] == ("main", "If_3")
    assert sorted(names[1:]) == [("main/If_3/else_branch", "inner_neg"), ("main/If_3/then_branch", "inner_relu")]
    inner = model.graph.nodes[0].subgraphs["then_branch"].nodes[0]
    assert inner.graph.owner is model.graph.nodes[0]
    assert inner.qualified_name == "main/If_3/then_branch/inner_relu"
