"""A small gated MLP written in onnxscript: a model-local function called twice, dynamic batch.

No ``from __future__ import annotations`` here: onnxscript reads the annotations as values.
"""

import numpy as np
import onnx
from onnxscript import FLOAT, script
from onnxscript import opset18 as op
from onnxscript.values import Opset

local = Opset("corpus.local", 1)
_rng = np.random.default_rng(0)
W_IN = onnx.numpy_helper.from_array(_rng.standard_normal((16, 32)).astype(np.float32), "w_in")
W_OUT = onnx.numpy_helper.from_array(_rng.standard_normal((32, 16)).astype(np.float32), "w_out")


@script(local, default_opset=op)
def gated(x, w_in, w_out):
    h = op.MatMul(x, w_in)
    g = op.Mul(h, op.Sigmoid(h))
    return op.MatMul(g, w_out)


@script(default_opset=op)
def mlp(x: FLOAT["batch", 16]) -> FLOAT["batch", 16]:  # noqa: F821 - onnxscript dim names
    a = op.Constant(value=W_IN)
    b = op.Constant(value=W_OUT)
    y = gated(x, a, b)
    y = op.LayerNormalization(y, op.Constant(value_floats=[1.0] * 16), axis=-1)
    return gated(y, a, b)


def save(path: str) -> None:
    onnx.save(mlp.to_model_proto(), path)
