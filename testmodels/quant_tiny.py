"""The smallest graphs that show a quantization behaviour of an engine (onnx.helper, fixed values).

The real exports in testmodels/quantized.py show each behaviour on a model users make; these
isolate the pattern so a test (and a fix's verification) can name the exact trigger.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, inits, opset: int = 17, ms: bool = False) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "quant", inputs, outputs,
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    model = helper.make_model(graph, opset_imports=ops, producer_name="graphlint-tests")
    model.ir_version = 8
    return model


def quantized_constant(prequantized: bool, combine: str = "Mul") -> onnx.ModelProto:
    """MatMul -> Q -> DQ -> Mul/Add with a constant that is quantized at run time (Q on the
    constant) or stored quantized (int8 initializer -> DQ) -- the same numbers either way."""
    shape = [2, 4, 8, 8]
    c = np.float32(0.35355339)
    inits = {"sx": np.float32(0.05), "zx": np.int8(0), "sc": np.float32(0.01), "zc": np.int8(0),
             "so": np.float32(0.1), "zo": np.int8(0)}
    nodes = [helper.make_node("MatMul", ["a", "b"], ["x"], name="matmul"),
             helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="x_dq")]
    if prequantized:
        inits["cq"] = np.int8(np.round(c / 0.01))
    else:
        inits["c"] = c
        nodes.append(helper.make_node("QuantizeLinear", ["c", "sc", "zc"], ["cq"], name="c_q"))
    nodes += [helper.make_node("DequantizeLinear", ["cq", "sc", "zc"], ["cd"], name="c_dq"),
              helper.make_node(combine, ["xd", "cd"], ["y"], name="combine"),
              helper.make_node("QuantizeLinear", ["y", "so", "zo"], ["yq"], name="y_q"),
              helper.make_node("DequantizeLinear", ["yq", "so", "zo"], ["out"], name="y_dq")]
    vi = helper.make_tensor_value_info
    return _model(nodes, [vi("a", TensorProto.FLOAT, shape), vi("b", TensorProto.FLOAT, shape)],
                  [vi("out", TensorProto.FLOAT, shape)], inits)


def qlinear_add(zero_point: int) -> onnx.ModelProto:
    """com.microsoft QLinearAdd on uint8 inputs with one zero point for A, B and C."""
    inits = {"sa": np.float32(0.05), "za": np.uint8(zero_point), "sb": np.float32(0.03), "zb": np.uint8(zero_point),
             "sy": np.float32(0.07), "zy": np.uint8(zero_point)}
    node = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"], name="qadd",
                            domain="com.microsoft")
    vi = helper.make_tensor_value_info
    return _model([node], [vi("a", TensorProto.UINT8, [1, 4, 3, 3]), vi("b", TensorProto.UINT8, [1, 4, 3, 3])],
                  [vi("y", TensorProto.UINT8, [1, 4, 3, 3])], inits, ms=True)


def qlinear_add_reference(a: np.ndarray, b: np.ndarray, zero_point: int) -> np.ndarray:
    """QLinearAdd as com.microsoft defines it: dequantize, add, requantize with saturation."""
    real = (a.astype(np.float64) - zero_point) * 0.05 + (b.astype(np.float64) - zero_point) * 0.03
    return np.clip(np.rint(real / 0.07) + zero_point, 0, 255).astype(np.uint8)
