"""The quantization analysis: which tensors a model quantizes, how, and what sits between the Q/DQ nodes.

Target-independent facts (computed once per model) that the quantization rules (GL7xxx) judge
per target from ``rules/data/quantization.toml``:

* every QuantizeLinear/DequantizeLinear (either domain) as a :class:`QNode`: integer type and
  bits, per-tensor / per-channel (axis) / blocked, symmetric (every zero point 0) or not,
  scale dtype, whether it dequantizes a stored weight, whether it quantizes a constant at run
  time;
* the schemes present: ``static-qdq``, ``qoperator`` (QLinear*, com.microsoft QGemm/QAttention/..),
  ``dynamic`` (DynamicQuantizeLinear, MatMulInteger, ...) and ``weight-only`` (MatMulNBits, ...,
  or int4 DequantizeLinear on weights) with their nodes (op families in the table's ``[ops]``);
* placement facts: weight scales on an axis that is not the consumer's output channels
  (``[weight_axis]``), per-channel activations, outputs of weighted ops quantized directly,
  activation DQ outputs shared by several consumers, constants quantized at run time and what
  their DQ meets, 16-bit Qs whose zero point sits at the type's minimum (the Q clamps at 0).

ONNX models only; an OpenVINO IR gets an empty result (its FakeQuantize is already the engine's form).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphlint.analysis import AnalysisContext, analysis
from graphlint.compat import tomllib
from graphlint.ir import ONNX, ONNX_DOMAIN, Model, Node, Value
from graphlint.target import data_dir

TABLE = "rules/data/quantization.toml"
MS = "com.microsoft"
_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int4": 4, "uint4": 4, "int32": 32, "uint32": 32,
         "float8e4m3fn": 8, "float8e5m2": 8, "float8e4m3fnuz": 8, "float8e5m2fnuz": 8, "float4e2m1": 4}
_MIN = {"int8": -128, "uint8": 0, "int16": -32768, "uint16": 0, "int4": -8, "uint4": 0}
# ops whose output is never negative, and ops that keep their inputs' sign
_NONNEGATIVE = frozenset({"Relu", "Sigmoid", "Softmax", "Abs", "Exp", "Sqrt"})
_SIGN_KEEPING = frozenset({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Reshape", "Flatten",
                           "Transpose", "Identity", "Squeeze", "Unsqueeze", "Concat", "Resize", "DequantizeLinear"})


@functools.cache
def table() -> dict[str, Any]:
    with open(os.path.join(data_dir(), "quantization.toml"), "rb") as f:
        return tomllib.load(f)


def _key(node: Node) -> str:
    return f"{MS}.{node.op_type}" if node.domain == MS else node.op_type


def _const(v: Value | None) -> np.ndarray | None:
    if v is None or v.const is None or v.const.size > 1 << 16:
        return None
    try:
        return v.const.numpy()
    except Exception:  # unreadable external data: GL0005 reports it
        return None


def _constant_input(v: Value | None) -> bool:
    """An initializer, a Constant's output, or one reached through Identity/Cast/Reshape of those."""
    for _ in range(4):
        if v is None:
            return False
        if v.const is not None:
            return True
        p = v.producer
        if p is None or p.op_type not in ("Identity", "Cast", "Reshape", "Constant") or not p.inputs:
            return p is not None and p.op_type == "Constant"
        v = p.inputs[0]
    return False


@dataclass
class QNode:
    node: Node
    kind: str  # "Q" or "DQ"
    qtype: str | None  # int8, uint8, int16, uint16, int4, uint4, int32, float8e4m3fn, ...
    granularity: str  # "tensor", "channel", "block", "unknown"
    axis: int | None
    symmetric: bool | None  # every zero point 0 (or none given); None: zero point not a constant
    scale_dtype: str | None
    zero_at_min: bool = False  # the zero point is the type's minimum (the Q clamps below 0)
    weight: bool = False  # DQ of a stored constant (quantized weight or bias)
    runtime_constant: bool = False  # Q whose input is a constant: quantized at run time

    @property
    def bits(self) -> int | None:
        return _BITS.get(self.qtype or "")

    @property
    def label(self) -> str:
        return self.node.label


@dataclass
class Quantization:
    qnodes: list[QNode] = field(default_factory=list)
    schemes: dict[str, list[Node]] = field(default_factory=dict)  # scheme -> nodes that make it
    axis_mismatch: list[tuple[QNode, Node, int]] = field(default_factory=list)  # (weight DQ, consumer, expected)
    channel_activations: list[QNode] = field(default_factory=list)
    weighted_outputs_quantized: list[Node] = field(default_factory=list)
    shared_dq: list[QNode] = field(default_factory=list)  # activation DQ outputs read by several nodes
    runtime_constants: list[tuple[QNode, Node | None]] = field(default_factory=list)  # (Q, crash-pattern eltwise)
    clamping_16bit: list[QNode] = field(default_factory=list)

    @property
    def quantized(self) -> bool:
        return bool(self.schemes)

    def of(self, scheme: str) -> list[Node]:
        return self.schemes.get(scheme, [])

    def qtypes(self, kind: str | None = None) -> set[str]:
        return {q.qtype for q in self.qnodes if q.qtype and (kind is None or q.kind == kind)}


def _qnode(node: Node) -> QNode:
    kind = "Q" if node.op_type == "QuantizeLinear" else "DQ"
    scale, zp = node.input(1), node.input(2)
    zp = zp if zp is not None and zp.name else None
    if kind == "Q":
        qtype = (zp.dtype if zp is not None else None) or (node.outputs[0].dtype if node.outputs else None)
        qtype = qtype or ("uint8" if zp is None and node.attr("output_dtype") is None else None)
    else:
        x = node.input(0)
        qtype = x.dtype if x is not None else None
    svals, zvals = _const(scale), _const(zp)
    rank_s = scale.rank if scale is not None else None
    if svals is not None:
        rank_s = svals.ndim
    block = node.attr("block_size", 0) or 0
    if block:
        granularity = "block"
    elif rank_s == 0 or (svals is not None and svals.size == 1):
        granularity = "tensor"
    elif rank_s == 1:
        granularity = "channel"
    else:
        granularity = "unknown"
    axis = node.attr("axis", 1) if granularity in ("channel", "block") else None
    if zp is None:
        symmetric: bool | None = True
    elif zvals is not None:
        symmetric = bool(np.all(zvals.astype(np.float64) == 0))
    else:
        symmetric = None
    q = QNode(node, kind, qtype, granularity, axis, symmetric, scale.dtype if scale is not None else None)
    lo = _MIN.get(qtype or "")
    q.zero_at_min = lo is not None and zvals is not None and bool(np.all(zvals == lo))
    if kind == "DQ":
        q.weight = _constant_input(node.input(0))
    else:
        q.runtime_constant = _constant_input(node.input(0))
    return q


def _producer_through_dq(v: Value | None) -> Node | None:
    """The op a DQ(Q(x)) chain dequantizes: x's producer."""
    p = v.producer if v is not None else None
    if p is None or p.op_type != "DequantizeLinear":
        return None
    q = p.inputs[0].producer if p.inputs and p.inputs[0] is not None else None
    if q is None or q.op_type != "QuantizeLinear" or not q.inputs or q.inputs[0] is None:
        return None
    return q.inputs[0].producer


def _expected_axis(consumer: Node, rank: int | None) -> int | None:
    want = table()["weight_axis"].get(consumer.op_type)
    if want == "transB":
        return 0 if consumer.attr("transB", 0) else 1
    if isinstance(want, int) and want < 0:
        return None if rank is None else rank + want
    return want


def compute(model: Model, op_types: Collection[str] | None = None) -> Quantization:
    """The model's quantization facts; ``op_types``, the op types the model has when known: a
    model with none of those this looks at (a float model) is not walked."""
    result = Quantization()
    if model.dialect != ONNX:
        return result
    ops = table()["ops"]
    families = {name: set(ops[name]) for name in ("qoperator", "dynamic", "weight_only")}
    if op_types is not None:
        wanted = {key.rsplit(".", 1)[-1] for names in (ops["qdq"], *families.values()) for key in names}
        if wanted.isdisjoint(op_types):
            return result
    weighted = set(ops["weighted"])
    for node in model.walk():
        key = _key(node)
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and node.domain in (ONNX_DOMAIN, MS):
            result.qnodes.append(_qnode(node))
            continue
        for scheme, names in families.items():
            if key in names:
                result.schemes.setdefault(scheme.replace("_", "-"), []).append(node)
    for q in result.qnodes:
        _place(result, q, weighted)
    if any(q.kind == "Q" and not q.runtime_constant for q in result.qnodes):  # activations are quantized
        result.schemes["static-qdq"] = [q.node for q in result.qnodes]
    elif any(q.weight for q in result.qnodes):  # DQ on weights only: weight-only (int4/int8 blocked, per-channel)
        result.schemes.setdefault("weight-only", []).extend(q.node for q in result.qnodes if q.weight)
    return result


def _through_qdq(v: Value | None) -> Value | None:
    """The value a DQ(Q(x)) pair carries: x."""
    p = v.producer if v is not None else None
    if p is not None and p.op_type == "DequantizeLinear" and p.inputs and p.inputs[0] is not None:
        q = p.inputs[0].producer
        if q is not None and q.op_type == "QuantizeLinear" and q.inputs:
            return q.inputs[0]
    return v


def _value(v: Value | None) -> np.ndarray | None:
    """A constant's value, also through a DequantizeLinear of a stored constant."""
    c = _const(v)
    p = v.producer if v is not None and c is None else None
    if p is not None and p.op_type == "DequantizeLinear":
        x, s, z = (_const(p.input(i)) for i in range(3))
        if x is not None and s is not None and x.size == 1:
            return (x.astype(np.float64) - (0 if z is None else z.astype(np.float64))) * s.astype(np.float64)
    return c


def nonnegative(v: Value | None, depth: int = 6) -> bool:
    """Whether a value is >= 0 by construction (a Relu, a Q that clamps at 0, ... through sign-keeping ops)."""
    p = v.producer if v is not None else None
    if p is None or depth <= 0:
        return False
    if p.op_type in _NONNEGATIVE:
        return True
    if p.op_type == "Clip":
        lo = _const(p.input(1))
        return lo is not None and lo.size == 1 and float(lo.reshape(-1)[0]) >= 0
    if p.op_type == "QuantizeLinear":
        return _qnode(p).zero_at_min
    if p.op_type == "Add" and len(p.inputs) == 2:  # 1 + erf(x) or 1 + tanh(x) of a decomposed GELU
        for a, b in (p.inputs, p.inputs[::-1]):
            c, b = _value(a), _through_qdq(b)
            bounded = b is not None and b.producer is not None and b.producer.op_type in ("Erf", "Tanh")
            if bounded and c is not None and c.size == 1 and float(c.reshape(-1)[0]) >= 1 - 1e-6:
                return True
    if p.op_type in _SIGN_KEEPING:
        data = p.inputs if p.op_type == "Concat" else p.inputs[:1]
        return bool(data) and all(nonnegative(x, depth - 1) for x in data)
    return False


def _place(result: Quantization, q: QNode, weighted: set[str]) -> None:
    node = q.node
    out = node.outputs[0] if node.outputs else None
    consumers = out.consumers if out is not None else []
    if q.kind == "DQ" and q.weight and q.granularity == "channel":
        for c in consumers:
            if c.op_type in weighted and c.input(1) is out:
                want = _expected_axis(c, node.input(0).rank if node.input(0) is not None else None)
                axis = q.axis if q.axis is None or q.axis >= 0 or node.input(0).rank is None else \
                    q.axis + node.input(0).rank
                if want is not None and axis != want:
                    result.axis_mismatch.append((q, c, want))
    if not q.weight and not q.runtime_constant and q.granularity == "channel":
        result.channel_activations.append(q)
    if q.kind == "DQ" and not q.weight and len(consumers) > 1:
        result.shared_dq.append(q)
    if q.kind == "Q":
        x = node.input(0)
        p = x.producer if x is not None else None
        if p is not None and p.op_type in weighted:
            result.weighted_outputs_quantized.append(p)
        if q.bits == 16 and q.zero_at_min and not nonnegative(x) and not _reclamped(q):
            result.clamping_16bit.append(q)
        if q.runtime_constant:
            result.runtime_constants.append((q, _crash_pattern(q)))


def _reclamped(q: QNode) -> bool:
    """The Q's DQ goes only into Relu (or Clip at >= 0): the clamp is stated again after it."""
    dqs = q.node.outputs[0].consumers if q.node.outputs else []
    users = [u for dq in dqs if dq.op_type == "DequantizeLinear" and dq.outputs for u in dq.outputs[0].consumers]
    return bool(users) and all(u.op_type == "Relu" or (u.op_type == "Clip" and nonnegative(u.outputs[0]))
                               for u in users)


def _crash_pattern(q: QNode) -> Node | None:
    """The Mul/Add where this run-time quantized constant meets a dequantized MatMul/Conv/Gemm output."""
    for dq in q.node.outputs[0].consumers if q.node.outputs else []:
        if dq.op_type != "DequantizeLinear" or not dq.outputs:
            continue
        for elt in dq.outputs[0].consumers:
            if elt.op_type not in ("Mul", "Add"):
                continue
            for other in elt.inputs:
                if other is not None and other is not dq.outputs[0]:
                    src = _producer_through_dq(other)
                    if src is not None and src.op_type in ("MatMul", "Conv", "Gemm"):
                        return elt
    return None


@analysis("quantization", per_target=False, requires=("nodes_by_type",))
def _quantization(ctx: AnalysisContext) -> Quantization:
    return compute(ctx.model, ctx.analysis("nodes_by_type").keys())
