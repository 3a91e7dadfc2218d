"""Input-contract facts: image-like inputs, their channel axis, and the preprocessing the graph does.

``image_inputs`` (analysis) lists rank-4 inputs with 1 or 3 channels on axis 1 or 3.
``preprocess_chain`` follows an input through the ops exporters emit for preprocessing
(Transpose, Cast, Div/Mul by 255, Sub mean, Div std) up to the first real layer, so the
GL4xx/GL5xx rules can say which dtype and range the graph expects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphlint import dtypes
from graphlint.analysis import analysis
from graphlint.ir import Model, Node, Value

IMAGE_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64", "uint8"})
CHANNELS = (1, 3)
PASS_OPS = frozenset({"Transpose", "Cast", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Div", "Mul", "Sub", "Add",
                      "Resize", "Slice"})


@dataclass
class ImageInput:
    value: Value
    channel_axis: int | None  # 1 (NCHW), 3 (NHWC) or None when ambiguous

    @property
    def layout(self) -> str | None:
        return {1: "NCHW", 3: "NHWC"}.get(self.channel_axis or -1)


def channel_axis(shape: tuple | None) -> tuple[bool, int | None]:
    """(image-like, channel axis) for a rank-4 shape."""
    if shape is None or len(shape) != 4:
        return False, None
    c1, c3 = shape[1] in CHANNELS, shape[3] in CHANNELS
    if c1 and not c3:
        return True, 1
    if c3 and not c1:
        return True, 3
    return c1 or c3 or all(not isinstance(d, int) for d in shape[1:]), None


@analysis("image_inputs", per_target=False)
def image_inputs(model: Model, target) -> list[ImageInput]:
    out = []
    for v in model.graph.inputs:
        if v.const is not None or v.dtype not in IMAGE_DTYPES:
            continue
        is_image, axis = channel_axis(v.shape)
        if is_image:
            out.append(ImageInput(v, axis))
    return out


@dataclass
class Step:
    node: Node
    scalar: np.ndarray | None = None  # the constant operand of Div/Mul/Sub/Add, if any


@dataclass
class Preprocess:
    steps: list[Step] = field(default_factory=list)
    first_layer: Node | None = None  # the first op that is not preprocessing

    def ops(self) -> list[str]:
        return [s.node.op_type for s in self.steps]

    def casts(self) -> list[str]:
        return [dtypes.onnx_dtype(s.node.attr("to", 0)) or "?" for s in self.steps if s.node.op_type == "Cast"]

    def scale_255(self) -> Step | None:
        """A Div by ~255 or Mul by ~1/255 (the uint8 -> [0,1] conversion)."""
        for s in self.steps:
            if s.scalar is None or s.scalar.size == 0:
                continue
            vals = s.scalar.astype(np.float64).reshape(-1)
            if s.node.op_type == "Div" and np.allclose(vals, 255.0, rtol=0.01):
                return s
            if s.node.op_type == "Mul" and np.allclose(vals, 1 / 255.0, rtol=0.01):
                return s
        return None

    def unit_normalization(self) -> Step | None:
        """A Sub of a mean in [0,1] (CLIP/ImageNet statistics on [0,1] pixels), before any 255 scaling."""
        for s in self.steps:
            if s is self.scale_255():
                return None
            if s.node.op_type == "Sub" and s.scalar is not None and s.scalar.size:
                vals = s.scalar.astype(np.float64)
                if np.all((vals >= 0) & (vals <= 1.0)) and np.any(vals > 0):
                    return s
        return None


def _const_operand(node: Node, cur: Value, consts) -> np.ndarray | None:
    for v in node.inputs:
        if v is not None and v is not cur:
            a = consts(v)
            if a is not None:
                return np.asarray(a)
    return None


def preprocess_chain(v: Value, consts, limit: int = 16) -> Preprocess:
    """Follow ``v`` through single-consumer preprocessing ops; ``consts(value)`` gives constant data."""
    out = Preprocess()
    cur = v
    for _ in range(limit):
        users = cur.consumers
        if len(users) != 1:
            out.first_layer = users[0] if users else None
            break
        n = users[0]
        if n.op_type not in PASS_OPS or not n.outputs:
            out.first_layer = n
            break
        scalar = _const_operand(n, cur, consts) if n.op_type in ("Div", "Mul", "Sub", "Add") else None
        if n.op_type in ("Div", "Mul", "Sub", "Add") and scalar is None:
            out.first_layer = n  # data-dependent arithmetic: not preprocessing
            break
        out.steps.append(Step(n, scalar))
        cur = n.outputs[0]
    return out
