"""Ops whose output has the shape of their input, and broadcasting ops."""

from __future__ import annotations

from graphlint.analysis.shapes.facts import SDim, SShape
from graphlint.analysis.shapes.handlers.registry import ShapePass, handles
from graphlint.analysis.symbolic import ONE
from graphlint.ir import Node, Value

SAME_SHAPE = ["Identity", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round", "Sign", "Not", "Cast", "CastLike", "Softmax", "LogSoftmax", "Hardmax", "Gelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish", "Clip", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "IsNaN", "IsInf", "LpNormalization", "InstanceNormalization", "BatchNormalization", "LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization", "GroupNormalization", "CumSum", "Trilu", "Dropout", "QuantizeLinear", "DequantizeLinear", "ScatterND", "ScatterElements", "Scatter", "Shrink", "ThresholdedRelu", "QuickGelu", "FastGelu", "BiasGelu", "BiasAdd", "BiasSplitGelu", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "RotaryEmbedding", "DynamicQuantizeLinear"]


@handles(*SAME_SHAPE)
def _same(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if node.op_type in ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization"):
        return [s, None, None, s]  # output 3 is input + skip (+ bias)
    if node.op_type == "Dropout":
        return [s, s]
    return [s]


BROADCAST = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "BitShift", "Max", "Min", "Sum", "Mean", "PRelu", "Where", "BitwiseAnd", "BitwiseOr", "BitwiseXor"]


def broadcast(p: ShapePass, node: Node, vals: list[Value | None], shapes: list[SShape]) -> SShape:
    if None in shapes:
        return None
    if len(shapes) == 2:  # the common cases: identical shapes, or x + bias (one shape is the other's tail)
        a, b = shapes
        if len(a) < len(b):  # type: ignore[arg-type]
            a, b = b, a
        if None not in a and (not b or a[-len(b):] == b):  # type: ignore[index,arg-type,operator]
            return a
    else:
        first = shapes[0]
        if None not in first and all(s == first for s in shapes[1:]):  # type: ignore[operator]
            return first
    rank = max(len(s) for s in shapes)  # type: ignore[arg-type]
    out: list[SDim] = []
    for k in range(rank):
        cur: SDim = ONE
        cur_v: Value | None = None
        for v, s in zip(vals, shapes, strict=True):
            off = k - (rank - len(s))  # type: ignore[arg-type]
            if off < 0:
                continue
            d = s[off]  # type: ignore[index]
            before = cur
            cur = p.agree(node, cur, d, cur_v, v, k - rank, True)
            if before == ONE or before is None:
                cur_v = v
        out.append(cur)
    return tuple(out)




@handles(*BROADCAST)
def _broadcast(node: Node, p: ShapePass) -> list[SShape]:
    vals = node.inputs if None not in node.inputs else [v for v in node.inputs if v is not None]
    return [broadcast(p, node, vals, list(map(p.shape, vals)))]

