"""Tiny hand-built ONNX models for tests (onnx.helper), each showing one thing."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper


def save(model: onnx.ModelProto, folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    onnx.save(model, path)
    return path


def relu_model(opset: int = 17) -> onnx.ModelProto:
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                     [h.make_tensor_value_info("x", T.FLOAT, ["batch", 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["batch", 4])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def two_bad_nodes() -> onnx.ModelProto:
    """Two independent checker errors: an attribute Relu does not have, and an Add of incompatible dims."""
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="relu_bad_attr", alpha=0.5),
        h.make_node("Add", ["x", "w"], ["b"], name="add_bad_dims"),
        h.make_node("Concat", ["a", "b"], ["y"], name="concat", axis=0),
    ]
    g = h.make_graph(nodes, "bad", [h.make_tensor_value_info("x", T.FLOAT, [1, 4]),
                                    h.make_tensor_value_info("w", T.FLOAT, [3, 5])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def contrib_model() -> onnx.ModelProto:
    nodes = [h.make_node("FastGelu", ["x"], ["y"], name="fast_gelu", domain="com.microsoft")]
    g = h.make_graph(nodes, "contrib", [h.make_tensor_value_info("x", T.FLOAT, [1, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 8])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])


def external_data_model(folder: str, location: str) -> str:
    """A MatMul whose weight claims to live at ``location`` (relative to ``folder``)."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = T.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "64")):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "ext",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 4])], initializer=[w])
    path = os.path.join(folder, "ext.onnx")
    with open(path, "wb") as f:
        f.write(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString())
    return path
