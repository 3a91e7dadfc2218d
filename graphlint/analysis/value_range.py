"""Value ranges: an interval [lo, hi] per float value, from constants and known input ranges.

Sound over-approximation by interval arithmetic, one pass in graph order (the main graph only;
values inside subgraphs stay unknown). Sources of ranges: constant data (exact min and max),
graph inputs the user bounds (``--input-range NAME:LO,HI`` or the config file), ops whose output
is bounded whatever comes in (Softmax, Sigmoid, Tanh, normalizations), and ``Gather`` from a
constant table (an embedding: every row can be selected).

Besides the bounds, a range carries what some element is known to *reach* (``up`` / ``down``):
a constant's extremes, a bounded input's, an embedding row's; carried through monotone unary
ops, through an Add of a bounded term (x + y reaches x.up + y.lo), a Mul by a one-signed
factor, reshapes and ReduceMax. Matrix products, normalizations and means forget it. The
precision rules report an overflow only where the reached value overflows, so the
over-approximation of the bounds never turns into a finding. Decomposed LayerNorm / RMSNorm
(x / sqrt(mean(x^2) + eps)) are recognised and bounded by sqrt(n), as the fused ops are.

Op types are ONNX's; OpenVINO IR layer types are mapped onto them by ``IR_OPS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from graphlint.ir import Graph, Node, Value


@dataclass(frozen=True)
class Range:
    """Every element lies in [lo, hi]; some element reaches ``up`` or more (``down`` or less)."""

    lo: float
    hi: float
    up: float | None = None  # a value some element is >= to, for some allowed input
    down: float | None = None  # a value some element is <= to

    @classmethod
    def exact(cls, lo: float, hi: float) -> Range:
        return cls(lo, hi, hi, lo)

    @property
    def magnitude(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def reached(self) -> float:
        """The largest magnitude some element is known to reach (0 when nothing is known)."""
        return max(self.up if self.up is not None and self.up > 0 else 0.0,
                   -self.down if self.down is not None and self.down < 0 else 0.0)

    def loose(self) -> Range:
        return Range(self.lo, self.hi)

    def union(self, other: Range) -> Range:
        ups = [u for u in (self.up, other.up) if u is not None]
        downs = [d for d in (self.down, other.down) if d is not None]
        return Range(min(self.lo, other.lo), max(self.hi, other.hi), max(ups, default=None), min(downs, default=None))

    def with_zero(self) -> Range:
        return self if self.lo <= 0 <= self.hi else Range(min(self.lo, 0.0), max(self.hi, 0.0), self.up, self.down)

    def mapped(self, f: Callable[[float], float], lo: float, hi: float) -> Range:
        """The image under an increasing function, reach carried along."""
        return Range(lo, hi, f(self.up) if self.up is not None else None,
                     f(self.down) if self.down is not None else None)


# OpenVINO IR layer type -> the ONNX op with the same range behaviour
IR_OPS = {
    "Multiply": "Mul", "Subtract": "Sub", "Divide": "Div", "Power": "Pow", "Negative": "Neg",
    "Convert": "Cast", "ReLU": "Relu", "Clamp": "Clip", "Maximum": "Max", "Minimum": "Min",
    "Select": "Where", "SoftMax": "Softmax", "Convolution": "Conv", "GroupConvolution": "Conv",
    "ReduceL2": "ReduceL2", "MVN": "MVN", "NormalizeL2": "LpNormalization", "Swish": "Swish",
    "Broadcast": "Expand", "StridedSlice": "Slice", "VariadicSplit": "Split",
}
PASS_THROUGH = frozenset({
    "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "Expand", "Tile",
    "Split", "Gather", "GatherElements", "GatherND", "Dropout", "DepthToSpace", "SpaceToDepth",
    "MaxPool", "GlobalMaxPool", "AveragePool", "GlobalAveragePool", "ReduceMax", "ReduceMin", "ReduceMean",
    "Resize", "Upsample", "ScatterND", "ScatterElements", "Cast", "Pad", "Concat", "Max", "Min",
})
BOUNDED = {  # output range whatever the input
    "Softmax": (0.0, 1.0), "LogSoftmax": (-math.inf, 0.0), "Sigmoid": (0.0, 1.0), "HardSigmoid": (0.0, 1.0),
    "Tanh": (-1.0, 1.0), "Erf": (-1.0, 1.0), "Sin": (-1.0, 1.0), "Cos": (-1.0, 1.0), "Softsign": (-1.0, 1.0),
}
MONOTONE = {  # increasing unary functions: the image of [lo, hi] is [f(lo), f(hi)]
    "Exp": math.exp, "Relu": lambda x: max(x, 0.0), "Sqrt": lambda x: math.sqrt(max(x, 0.0)),
    "Log": lambda x: math.log(x) if x > 0 else -math.inf, "Erf": math.erf,
    "Softplus": lambda x: math.log1p(math.exp(min(x, 700.0))) if x < 700 else x,
}
NORMALIZATIONS = frozenset({"LayerNormalization", "SimplifiedLayerNormalization", "MVN", "GroupNormalization",
                            "InstanceNormalization", "LpNormalization", "SkipLayerNormalization",
                            "SkipSimplifiedLayerNormalization"})



def _exp(x: float) -> float:
    return math.exp(x) if x < 709 else math.inf


def _mul(a: Range, b: Range) -> Range:
    products = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi) if not (math.isinf(x) and y == 0)
                and not (math.isinf(y) and x == 0)]
    return Range(min(products, default=-math.inf), max(products, default=math.inf))


def _neg(a: Range) -> Range:
    return Range(-a.hi, -a.lo, -a.down if a.down is not None else None, -a.up if a.up is not None else None)


def _binary(op: str, a: Range, b: Range) -> Range:
    """Add/Sub/Mul/Div: the interval, and what the element reaching a's (or b's) extreme reaches."""
    if op == "Sub":
        return _binary("Add", a, _neg(b))
    if op == "Div":
        if not (b.lo > 0 or b.hi < 0):
            return Range(-math.inf, math.inf)
        b = Range(1 / b.hi, 1 / b.lo, 1 / b.down if b.down else None, 1 / b.up if b.up else None)
        op = "Mul"
    if op == "Add":
        ups = [x + y.lo for x, y in ((a.up, b), (b.up, a)) if x is not None]
        downs = [x + y.hi for x, y in ((a.down, b), (b.down, a)) if x is not None]
        return Range(a.lo + b.lo, a.hi + b.hi, max(ups, default=None), min(downs, default=None))
    box = _mul(a, b)
    ups, downs = [], []
    for x, y in ((a, b), (b, a)):
        if y.lo > 0:  # positive factor: the extremes keep their side, shrunk at worst to y.lo
            if x.up is not None and x.up > 0:
                ups.append(x.up * y.lo)
            if x.down is not None and x.down < 0:
                downs.append(x.down * y.lo)
        elif y.hi < 0:
            if x.up is not None and x.up > 0:
                downs.append(x.up * y.hi)
            if x.down is not None and x.down < 0:
                ups.append(x.down * y.hi)
    return Range(box.lo, box.hi, max(ups, default=None), min(downs, default=None))


def _pow(base: Range, p: float) -> Range | None:
    if p == 1:
        return base
    if p == int(p) and p > 0:
        ends = [base.lo ** p, base.hi ** p]
        reach = [x ** p for x in (base.up, base.down) if x is not None and (x >= 0 if x is base.up else x <= 0)]
        if int(p) % 2 == 0:
            lo = 0.0 if base.lo <= 0 <= base.hi else min(ends)
            return Range(lo, max(ends), max(reach, default=None))
        return Range(min(ends), max(ends), base.up ** p if base.up is not None else None,
                     base.down ** p if base.down is not None else None)
    if p == 0.5 and base.lo >= 0:
        return base.mapped(math.sqrt, math.sqrt(base.lo), math.sqrt(base.hi))
    return None


ShapeOf = Callable[[Value], "tuple | None"]


def declared_shape(value: Value) -> tuple | None:
    return value.shape


def _elements(shape: tuple | None, axes: list[int] | None) -> int | None:
    """How many elements a reduction over ``axes`` (None: all) sums, when the shape is static."""
    if shape is None:
        return None
    dims = range(len(shape)) if axes is None else [a % len(shape) for a in axes]
    n = 1
    for d in dims:
        if not isinstance(shape[d], int):
            return None
        n *= shape[d]
    return n


def reduction_axes(node: Node) -> list[int] | None:
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1] is not None:
        data = constant(node.inputs[1])
        axes = data.reshape(-1).tolist() if data is not None else None
    if axes is None and node.op_type == "CumSum":
        return None
    return [int(a) for a in axes] if axes is not None else None


MAX_ELEMENTS = 1 << 24  # larger constants (64 MB of fp32) are not read: their values stay unknown


def constant(value: Value | None) -> np.ndarray | None:
    """A value's constant data, through the Identity nodes exporters put on shared weights."""
    while value is not None and value.const is None and value.producer is not None \
            and value.producer.op_type == "Identity" and value.producer.inputs:
        value = value.producer.inputs[0]
    if value is None or value.const is None or value.const.size > MAX_ELEMENTS:
        return None
    try:
        return np.asarray(value.const.numpy())
    except Exception:  # unreadable weights are another rule's business
        return None


def _matmul_bound(x: Range, w: np.ndarray, bias: np.ndarray | None = None) -> Range:
    """Interval of x @ w per output column (w: [K, N]), over all columns: a positive weight takes
    x's top to the column's top, a negative one x's bottom (one temporary of w's size)."""
    total = w.sum(axis=0, dtype=np.float64)
    size = np.abs(w).sum(axis=0, dtype=np.float64)
    pos, neg = (size + total) / 2, (total - size) / 2
    hi = x.hi * pos + x.lo * neg if math.isfinite(x.hi) and math.isfinite(x.lo) else np.full(total.shape, math.inf)
    lo = x.lo * pos + x.hi * neg if math.isfinite(x.hi) and math.isfinite(x.lo) else np.full(total.shape, -math.inf)
    if bias is not None:
        b = np.broadcast_to(bias.astype(np.float64).reshape(-1), hi.shape) if bias.size in (1, hi.size) else None
        if b is not None:
            hi, lo = hi + b, lo + b
    return Range(float(lo.min()), float(hi.max()))


def onnx_op(node: Node) -> str:
    """The node's op type in ONNX's words (OpenVINO IR layer types mapped by IR_OPS)."""
    return IR_OPS.get(node.op_type, node.op_type) if node.dialect != "onnx" else node.op_type


def transfer(node: Node, ins: list[Range | None], shape: ShapeOf = declared_shape) -> Range | None:
    """The output range of ``node`` (its first output) from its input ranges (``shape``: static shapes)."""
    op = onnx_op(node)
    a = ins[0] if ins else None
    b = ins[1] if len(ins) > 1 else None
    if op in BOUNDED:
        lo, hi = BOUNDED[op]
        if a is not None and op in MONOTONE:
            f = MONOTONE[op]
            return a.mapped(f, f(a.lo), f(a.hi))
        return Range(lo, hi)
    if op == "Exp" and a is not None:
        return a.mapped(_exp, _exp(a.lo), _exp(a.hi))
    if op in MONOTONE and a is not None:
        f = MONOTONE[op]
        return a.mapped(f, f(a.lo), f(a.hi))
    if op == "Gather" and node.inputs and node.inputs[0] is not None and a is not None:
        return a  # a table lookup reaches the table's extremes
    if op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "IsNaN", "IsInf"):
        return Range.exact(0.0, 1.0)  # bool: as a number, 0 or 1
    if op in PASS_THROUGH:
        if op == "Concat" or op in ("Max", "Min"):
            known = [r for r in ins if r is not None]
            if len(known) != len([v for v in node.inputs if v is not None]):
                return None
            out = known[0]
            for r in known[1:]:
                out = out.union(r)
            return out if op == "Concat" else Range(out.lo, out.hi, out.up if op == "Max" else None,
                                                    out.down if op == "Min" else None)
        if op == "Pad" and a is not None:
            return a.with_zero()
        if a is not None and op in ("ReduceMean", "AveragePool", "GlobalAveragePool", "ReduceMax", "ReduceMin",
                                    "MaxPool", "GlobalMaxPool", "Resize", "Upsample"):
            return Range(a.lo, a.hi, a.up if op in ("ReduceMax", "MaxPool", "GlobalMaxPool") else None,
                         a.down if op == "ReduceMin" else None)
        return a
    if op == "Cast" and node.inputs and node.inputs[0] is not None and node.inputs[0].dtype == "bool":
        return Range.exact(0.0, 1.0)
    if op == "Neg" and a is not None:
        return _neg(a)
    if op == "Abs" and a is not None:
        lo = 0.0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
        return Range(lo, a.magnitude, a.reached or None)
    if op in ("Mul", "Div"):
        norm = normalized_bound(node, shape)
        if norm is not None:
            return norm
    if op in ("Add", "Sub", "Mul", "Div") and a is not None and b is not None:
        return _binary(op, a, b)
    if op == "Reciprocal" and a is not None and (a.lo > 0 or a.hi < 0):
        return Range(1 / a.hi, 1 / a.lo)
    if op == "Pow" and a is not None and b is not None and b.lo == b.hi:
        return _pow(a, b.lo)
    if op == "Clip" and a is not None:
        lo = ins[1].lo if len(ins) > 1 and ins[1] is not None else node.attr("min", -math.inf)
        hi = ins[2].hi if len(ins) > 2 and ins[2] is not None else node.attr("max", math.inf)
        return Range(max(a.lo, lo), min(a.hi, hi))
    if op == "Where" and len(ins) > 2 and ins[1] is not None and ins[2] is not None:
        return ins[1].union(ins[2]).loose()
    if op in ("Gelu", "FastGelu", "QuickGelu", "BiasGelu", "Swish") and a is not None:
        return Range(min(-0.17, a.lo) if a.lo < 0 else 0.0, max(a.hi, 0.0))
    if op in NORMALIZATIONS:
        return _normalization(node, shape)
    if op in ("ReduceSum", "CumSum", "ReduceL2", "ReduceSumSquare") and a is not None:
        n = _elements(shape(node.inputs[0]) if node.inputs[0] is not None else None,
                      reduction_axes(node) if op != "CumSum" else [int(constant(node.inputs[1]).reshape(-1)[0])]
                      if len(node.inputs) > 1 and constant(node.inputs[1]) is not None else None)
        if n is None:
            return None
        if op == "ReduceL2":
            return Range(0.0, math.sqrt(n) * a.magnitude)
        if op == "ReduceSumSquare":
            return Range(0.0, n * a.magnitude ** 2)
        return Range(n * min(a.lo, 0.0) + (a.lo if op == "CumSum" and a.lo > 0 else 0.0), n * max(a.hi, 0.0))
    if op in ("MatMul", "Gemm") and a is not None:
        return _matmul(node, ins, shape)
    if op == "Conv" and a is not None:
        w = constant(node.inputs[1]) if len(node.inputs) > 1 else None
        if w is None:
            return None
        bias = constant(node.inputs[2]) if len(node.inputs) > 2 else None
        group_w = w.reshape(w.shape[0], -1).T  # [Cin/g * kh * kw, Cout]
        return _matmul_bound(a.with_zero(), group_w, bias)
    return None


def _matmul(node: Node, ins: list[Range | None], shape: ShapeOf) -> Range | None:
    a, b = ins[0], ins[1] if len(ins) > 1 else None
    w = constant(node.inputs[1]) if len(node.inputs) > 1 else None
    if node.op_type == "Gemm" and w is not None and node.attr("transB", 0):
        w = w.T
    bias = constant(node.inputs[2]) if len(node.inputs) > 2 else None
    if w is not None and w.ndim == 2 and a is not None:
        if node.attr("transposeB", False) or node.attr("transpose_b", False):
            w = w.T
        return _matmul_bound(a, w, bias)
    if a is None or b is None:
        return None
    dims = shape(node.inputs[0]) if node.inputs[0] is not None else None
    k = dims[-1] if dims else None
    if not isinstance(k, int):
        return None
    m = k * a.magnitude * b.magnitude
    return Range(-m, m)


def _producer(value: Value | None, *ops: str) -> Node | None:
    node = value.producer if value is not None else None
    return node if node is not None and node.op_type in ops else None


def _squared(value: Value | None) -> Value | None:
    """x when ``value`` is Pow(x, 2) or Mul(x, x)."""
    node = _producer(value, "Pow", "Mul", "Power", "Multiply")
    if node is None or len(node.inputs) < 2:
        return None
    if node.inputs[0] is node.inputs[1]:
        return node.inputs[0]
    p = constant(node.inputs[1])
    return node.inputs[0] if p is not None and p.size == 1 and float(p.reshape(-1)[0]) == 2.0 else None


def _root_mean_square_of(value: Value | None) -> tuple[Value, Node] | None:
    """(x, the ReduceMean) when ``value`` is Sqrt(ReduceMean(x^2) [+ eps])."""
    sqrt = _producer(value, "Sqrt")
    inner = sqrt.inputs[0] if sqrt is not None else None
    add = _producer(inner, "Add")
    if add is not None:
        inner = next((v for v in add.inputs if v is not None and v.const is None), None)
    mean = _producer(inner, "ReduceMean")
    x = _squared(mean.inputs[0]) if mean is not None else None
    return (x, mean) if x is not None and mean is not None else None


def _reciprocal_of(value: Value | None) -> Value | None:
    """s when ``value`` is Reciprocal(s) or 1 / s (OpenVINO writes the reciprocal as a Divide)."""
    rec = _producer(value, "Reciprocal")
    if rec is not None:
        return rec.inputs[0]
    div = _producer(value, "Div", "Divide")
    one = constant(div.inputs[0]) if div is not None and len(div.inputs) == 2 else None
    return div.inputs[1] if one is not None and one.size == 1 and float(one.reshape(-1)[0]) == 1.0 else None


def normalized_bound(node: Node, shape: ShapeOf = declared_shape) -> Range | None:
    """|x / rms(x)| <= sqrt(n): Div(x, Sqrt(mean(x^2) + eps)) or Mul(x, Reciprocal(...)), n the reduced count.

    The decomposed LayerNorm ((x - mean) / std) and RMSNorm as exporters write them; bounding
    them keeps the ranges after a normalization as narrow as after LayerNormalization.
    """
    if len(node.inputs) < 2:
        return None
    for i in (0, 1):
        x, other = node.inputs[i], node.inputs[1 - i]
        if onnx_op(node) == "Div" and i == 1:
            break
        denom = other if node.op_type == "Div" else None
        if onnx_op(node) == "Mul":
            denom = _reciprocal_of(other)
        found = _root_mean_square_of(denom)
        if found is None:
            continue
        gain = 1.0
        if x is not found[0]:  # gamma * (x - mean) / std, as hand-written LayerNorms put it
            scaled = _producer(x, "Mul", "Multiply")
            ins = scaled.inputs if scaled is not None else []
            if len(ins) != 2 or found[0] not in ins:
                continue
            g = constant(ins[1] if ins[0] is found[0] else ins[0])
            if g is None or not g.size:
                continue
            gain = float(np.abs(g).max())
        n = _elements(shape(found[0]), reduction_axes(found[1]))
        if n is not None:
            return Range(-gain * math.sqrt(n), gain * math.sqrt(n))
    return None


def _normalization(node: Node, shape: ShapeOf) -> Range | None:
    """|normalized| <= sqrt(n - 1) over the n normalized elements; then scale and bias."""
    dims = shape(node.inputs[0]) if node.inputs and node.inputs[0] is not None else None
    if dims is None:
        return None
    axis = node.attr("axis", -1)
    op = IR_OPS.get(node.op_type, node.op_type)
    axes = reduction_axes(node) if op == "MVN" else list(range(axis % len(dims), len(dims)))
    if op in ("GroupNormalization", "InstanceNormalization"):
        axes = list(range(2, len(dims)))
    n = _elements(dims, axes)
    if n is None:
        return None
    z = Range(-math.sqrt(max(n - 1, 1)), math.sqrt(max(n - 1, 1)))
    scale = constant(node.inputs[1]) if len(node.inputs) > 1 and op != "MVN" else None
    bias = constant(node.inputs[2]) if len(node.inputs) > 2 and op != "MVN" else None
    if scale is not None:
        z = _mul(z, Range(float(scale.min()), float(scale.max())))
    if bias is not None:
        z = Range(z.lo + float(bias.min()), z.hi + float(bias.max()))
    return z


def compute(graph: Graph, inputs: Mapping[str, tuple[float, float]] | None = None,
            shape_of: ShapeOf | None = None) -> dict[str, Range]:
    """Ranges of the float values of ``graph`` (by value name) that the graph bounds.

    ``shape_of`` gives a value's static shape (default: the loader's); the shapes analysis knows
    more dims than ONNX inference does."""
    shape = shape_of or declared_shape
    out: dict[str, Range] = {}
    for name, (lo, hi) in (inputs or {}).items():
        out[name] = Range.exact(float(lo), float(hi))
    for value in graph.values.values():
        data = constant(value) if value.const is not None else None
        if data is not None and data.size and data.dtype.kind in "fb" and not np.isnan(data).any():
            out[value.name] = Range.exact(float(data.min()), float(data.max()))
    for node in graph.nodes:
        if not node.outputs or node.outputs[0].name in out:
            continue
        ins = [out.get(v.name) if v is not None else None for v in node.inputs]
        try:
            r = transfer(node, ins, shape)
        except (ValueError, TypeError, OverflowError, ZeroDivisionError, IndexError):
            r = None
        if r is not None and not (math.isnan(r.lo) or math.isnan(r.hi)):
            out[node.outputs[0].name] = r
    return out
