"""OpenVINO IR ops as the ONNX ops whose shape semantics they share, so one set of shape
handlers (:mod:`.handlers`), folds and shape-value ops serves both formats.

:data:`OV_AS_ONNX` is the table: an IR layer type -> the ONNX op, which of the layer's inputs
feed the ONNX op's inputs, and how its IR attributes (strings) read as the ONNX attributes.
:func:`view` turns an IR node into a stand-in :class:`OvView` (an ONNX-dialect Node) that the
shape walk runs; the events it records name the IR node (``origin``). Layers the table does not
hold keep the dims their IR ports declare (a ``-1`` stays unknown), so a missing entry costs
findings, never makes one.

Semantics from the OpenVINO operation specifications (opset1-opset16), 2026 documentation:
https://docs.openvino.ai/2026/documentation/openvino-ir-format/operation-sets/operation-specs.html
- elementwise ops with ``auto_broadcast="numpy"`` broadcast as ONNX multidirectional broadcasting
  ("Broadcast Rules For Elementwise Operations": right-aligned, equal or one of them 1;
  https://docs.openvino.ai/2026/documentation/openvino-ir-format/operation-sets/broadcast-rules.html);
  ``none`` needs equal shapes, which the same check covers;
- Broadcast-3 ``numpy``/``bidirectional`` is ONNX Expand (``bidirectional``: "similar to
  numpy.array(input) * numpy.ones(target_shape)"; ``numpy``: the output is the target shape, the
  input must broadcast to it); ``explicit`` (axes_mapping) is left alone;
- Reshape-1 ``special_zero=true`` is ONNX Reshape's default 0 (copy the input dim), ``false`` its
  ``allowzero=1``; -1 is the same in both;
- ShapeOf-1/3 is ONNX Shape; Gather-1/7/8 with ``batch_dims=0`` is ONNX Gather with the axis from
  its third input; Select-1 is Where; Convolution-1 is Conv with ``pads = pads_begin + pads_end``
  and ``auto_pad`` explicit/valid/same_upper/same_lower; MatMul-1 ``transpose_a/b`` transposes the
  last two dims as FusedMatMul's transA/transB; Slice-8 takes (data, start, stop, step, axes)
  where ONNX Slice takes (data, starts, ends, axes, steps); Unsqueeze/Squeeze-0, ReduceX-1,
  Range-4, Tile-0, Concat-0, Transpose-1 (perm as a constant input) read as their ONNX ops;
- GroupConvolution-1 (filters [groups, C_out/groups, C_in/groups, kernel...]) and
  ScaledDotProductAttention-13 (output [N..., L, Ev] of query [N..., L, E] and value
  [N..., S, Ev]) have no ONNX twin: their handlers are their own (handlers/misc.py, linear.py).

Not held (their ports' dims stand): Pad, Interpolate, VariadicSplit, StridedSlice, GatherND,
GatherElements, TopK, LSTMSequence, If/Loop/TensorIterator, ConvolutionBackpropData.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphlint import dtypes
from graphlint.analysis.shapes.facts import ShapeFacts
from graphlint.ir import ONNX, ONNX_DOMAIN, Node

OPSET = 18  # the ONNX opset the stand-ins read as: axes, perm and shapes come from inputs


class OvView(Node):
    """An ONNX-dialect stand-in for one IR node; ``origin`` is the IR node events name. Only what
    shape handlers read is set (one is made per layer of a large IR: Node's full init costs)."""

    __slots__ = ("fold", "origin")

    def __init__(self, op_type: str, origin: Node, inputs: list, attrs: dict, fold: bool) -> None:
        self.op_type = op_type
        self.name = origin.name
        self.domain = ONNX_DOMAIN
        self.dialect = ONNX
        self.opset = OPSET
        self.inputs = inputs
        self.outputs = origin.outputs
        self._attrs = attrs
        self._decode = None
        self.subgraphs = {}
        self.origin = origin
        self.fold = fold


def _ints(text: str | None) -> list[int]:
    return [int(t) for t in (text or "").replace(" ", "").split(",") if t]


def _flag(text: Any, default: bool = False) -> bool:
    return default if text is None else str(text).strip().lower() in ("true", "1")


def _const_ints(f: ShapeFacts, node: Node, i: int) -> list[int] | None:
    a = f.const(node.input(i))
    return None if a is None or a.dtype.kind not in "iu" else [int(x) for x in a.reshape(-1).tolist()]


def _broadcast(n: Node, f: ShapeFacts) -> dict | None:
    return {} if n.attr("auto_broadcast", "numpy") in ("numpy", "none") else None  # pdpd: other rules


def _conv(n: Node, f: ShapeFacts) -> dict | None:
    pad = {"explicit": "NOTSET", "notset": "NOTSET", "valid": "VALID", "same_upper": "SAME_UPPER",
           "same_lower": "SAME_LOWER"}.get(n.attr("auto_pad", "explicit").lower())
    if pad is None:
        return None
    return {"strides": _ints(n.attr("strides")), "dilations": _ints(n.attr("dilations")),
            "pads": _ints(n.attr("pads_begin")) + _ints(n.attr("pads_end")), "auto_pad": pad}


def _pool(n: Node, f: ShapeFacts) -> dict | None:
    a = _conv(n, f)
    if a is None:
        return None
    return {**a, "kernel_shape": _ints(n.attr("kernel")), "ceil_mode": int(n.attr("rounding_type", "floor") == "ceil")}


def _gather(n: Node, f: ShapeFacts) -> dict | None:
    axis = _const_ints(f, n, 2)
    if axis is None or len(axis) != 1 or int(n.attr("batch_dims", "0")) != 0:
        return None
    return {"axis": axis[0]}


def _transpose(n: Node, f: ShapeFacts) -> dict | None:
    perm = _const_ints(f, n, 1)
    return None if perm is None else {"perm": perm}


def _convert(n: Node, f: ShapeFacts) -> dict | None:
    to = dtypes.ONNX_ENUM.get(dtypes.ov_dtype(n.attr("destination_type")) or "")
    return None if to is None else {"to": to}


def _matmul(n: Node, f: ShapeFacts) -> dict | None:
    return {"transA": int(_flag(n.attr("transpose_a"))), "transB": int(_flag(n.attr("transpose_b")))}


def _split(n: Node, f: ShapeFacts) -> dict | None:
    axis = _const_ints(f, n, 1)
    return None if axis is None or len(axis) != 1 else {"axis": axis[0]}


def _reduce(n: Node, f: ShapeFacts) -> dict | None:
    return {"keepdims": int(_flag(n.attr("keep_dims")))}


def _broadcast_op(n: Node, f: ShapeFacts) -> dict | None:
    return {} if n.attr("mode", "numpy").lower() in ("numpy", "bidirectional") else None


def _none(n: Node, f: ShapeFacts) -> dict | None:
    return {}


@dataclass(frozen=True)
class AsOnnx:
    """``op``: the ONNX op; ``inputs``: the IR input feeding each ONNX input (None: the same order);
    ``attrs``: the ONNX attributes from the IR node (None: this node's form has no ONNX twin);
    ``fold``: the values match too, so small constants fold and shape values propagate through it
    (False: only the output shape is the ONNX op's)."""

    op: str
    attrs: Callable[[Node, ShapeFacts], dict | None] = _none
    inputs: tuple[int, ...] | None = None
    fold: bool = True


_SAME = AsOnnx("Identity", fold=False)  # output shape = the first input's; values differ
_BINARY = {"Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Power": "Pow", "Maximum": "Max",
           "Minimum": "Min", "Equal": "Equal", "Less": "Less", "Greater": "Greater", "LessEqual": "LessOrEqual",
           "GreaterEqual": "GreaterOrEqual", "LogicalAnd": "And", "LogicalOr": "Or", "LogicalXor": "Xor",
           "FloorMod": "Mod"}
# broadcasting ops whose values no ONNX op shares (Divide floors integers where ONNX Div truncates)
_BINARY_SHAPE = ("Divide", "NotEqual", "SquaredDifference", "Mod", "PReLU", "BitwiseAnd", "BitwiseOr",
                 "BitwiseXor")
_UNARY = ("MVN", "Gelu", "ReLU", "Sigmoid", "Tanh", "Exp", "Log", "Erf", "SoftMax", "Softmax", "LogSoftmax",
          "Swish", "HSwish", "HSigmoid", "Mish", "SoftPlus", "SoftSign", "Clamp", "Elu", "Sin", "Cos", "Tan",
          "Asin", "Acos", "Atan", "Sinh", "Cosh", "Round", "Sign", "NormalizeL2", "FakeQuantize", "FakeConvert",
          "RMS", "Selu", "GRN", "LRN", "CumSum", "Roll", "IsNaN", "IsInf", "IsFinite", "HardSigmoid",
          "ConvertLike", "ShuffleChannels")

OV_AS_ONNX: dict[str, AsOnnx] = {
    **{ov: AsOnnx(onnx, _broadcast) for ov, onnx in _BINARY.items()},
    **{ov: AsOnnx("Sum", _broadcast, fold=False) for ov in _BINARY_SHAPE},
    **dict.fromkeys(_UNARY, _SAME),
    "Negative": AsOnnx("Neg"), "Sqrt": AsOnnx("Sqrt"), "Abs": AsOnnx("Abs"), "Floor": AsOnnx("Floor"),
    "Ceiling": AsOnnx("Ceil"), "LogicalNot": AsOnnx("Not"), "Convert": AsOnnx("Cast", _convert),
    "ShapeOf": AsOnnx("Shape"),
    "Gather": AsOnnx("Gather", _gather, (0, 1)),
    "Concat": AsOnnx("Concat", lambda n, f: {"axis": int(n.attr("axis", "0"))}),
    "Reshape": AsOnnx("Reshape", lambda n, f: {"allowzero": int(not _flag(n.attr("special_zero")))}),
    "Broadcast": AsOnnx("Expand", _broadcast_op, (0, 1)),
    "Select": AsOnnx("Where", _broadcast),
    "Transpose": AsOnnx("Transpose", _transpose, (0,)),
    "Unsqueeze": AsOnnx("Unsqueeze"), "Squeeze": AsOnnx("Squeeze"),
    "Slice": AsOnnx("Slice", inputs=(0, 1, 2, 4, 3)),
    "Range": AsOnnx("Range", inputs=(0, 1, 2)),
    "Tile": AsOnnx("Tile"),
    "Split": AsOnnx("Split", _split, (0,), fold=False),
    "MatMul": AsOnnx("FusedMatMul", _matmul, (0, 1), fold=False),
    "Convolution": AsOnnx("Conv", _conv, (0, 1), fold=False),
    # no ONNX twin: handlers of their own (handlers/misc.py, handlers/linear.py)
    "GroupConvolution": AsOnnx("GroupConvolution", _conv, (0, 1), fold=False),
    "ScaledDotProductAttention": AsOnnx("ScaledDotProductAttention", fold=False),
    "MaxPool": AsOnnx("MaxPool", _pool, (0,), fold=False), "AvgPool": AsOnnx("AveragePool", _pool, (0,), fold=False),
    **{f"Reduce{k}": AsOnnx(f"Reduce{k}", _reduce, (0, 1), fold=False)
       for k in ("Mean", "Sum", "Max", "Min", "Prod", "L1", "L2")},
}


SPECS = "https://docs.openvino.ai/2026/documentation/openvino-ir-format/operation-sets/"
# The page that states the agreement a layer's inputs need (what a GL3xx finding cites).
SPEC_PAGE = {
    **dict.fromkeys((*_BINARY, *_BINARY_SHAPE, "Select"), "broadcast-rules.html"),
    "Concat": "operation-specs/movement/concat-1.html",
    "Reshape": "operation-specs/shape/reshape-1.html",
    "Broadcast": "operation-specs/movement/broadcast-3.html",
    "MatMul": "operation-specs/matrix/matmul-1.html",
}


def spec_url(op_type: str) -> str:
    """The OpenVINO 2026 specification page for an IR layer type's shape agreement."""
    return SPECS + SPEC_PAGE.get(op_type, "operation-specs.html")


def view(node: Node, spec: AsOnnx, f: ShapeFacts) -> OvView | None:
    """The ONNX stand-in of an IR node (``spec``: its table entry), or None when its form has no twin."""
    try:
        attrs = spec.attrs(node, f)
    except (ValueError, TypeError, AttributeError):  # a malformed attribute: keep the IR's dims
        return None
    if attrs is None:
        return None
    return OvView(spec.op, node, node.inputs if spec.inputs is None else [node.input(i) for i in spec.inputs],
                  attrs, spec.fold)


def ov_symbol(inp: str, axis: int) -> str:
    """The symbol of an IR Parameter's dynamic dim: IR dims have no names, only positions."""
    return f"{inp}[{axis}]"


def dynamic_dims(shape: tuple, bounds: str | None) -> list[bool]:
    """Which dims of a Parameter port are dynamic without bounds (``-1``): those become symbols.
    A bounded dim (``1..128``) stays unknown: its legal values are not every value; so does a
    text read_model refuses (``?`` in a port; GL0007 reports it). ``bounds``: the port's dim
    texts, which the loader keeps when one is not an integer or -1."""
    texts = bounds.split(",") if bounds else None
    return [d is None and (texts is None or (i < len(texts) and texts[i].strip() == "-1"))
            for i, d in enumerate(shape)]


__all__ = ["OV_AS_ONNX", "AsOnnx", "OvView", "dynamic_dims", "ov_symbol", "spec_url", "view"]
