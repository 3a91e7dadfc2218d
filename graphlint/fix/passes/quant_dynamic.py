"""``dequantize-dynamic``: dynamic quantization computed with float ops, for targets without integer kernels.

``onnxruntime.quantization.quantize_dynamic`` writes ``DynamicQuantizeLinear`` (activations to
uint8 at run time) feeding ``MatMulInteger``/``ConvInteger`` (int32 accumulators) against int8
weights. TensorRT parses none of the three, and OpenVINO runs them in float anyway (GL7001,
GL7009). The pass rewrites each group into float ops every target has (ReduceMax/ReduceMin,
Div, Round, Clip, Sub, MatMul/Conv, Cast), following DynamicQuantizeLinear's definition in the
ONNX spec step by step, so the activations are still quantized the same way and the integer
products are the same numbers held in float32: results are unchanged up to float32 rounding of
the sums, which the fix runner verifies like any exact pass. The model still carries int8
quantization error; what changes is which kernels compute it.

DynamicQuantizeLinear (opset 11): with qmin = 0, qmax = 255,
    scale = (max(0, max(x)) - min(0, min(x))) / (qmax - qmin)
    zero_point = saturate(round(qmin - min(0, min(x)) / scale))
    y = saturate(round(x / scale) + zero_point)        (round half to even, as ONNX Round)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass

_INTEGER_OPS = frozenset({"MatMulInteger", "ConvInteger"})
# A scale of 0 (an all-zero activation) divides by this instead: x / tiny is 0 there, as the
# quantized value minus its zero point is, and the scale output itself stays 0.
_TINY = np.float32(np.finfo(np.float32).tiny)


@register_pass
class DequantizeDynamic(Pass):
    """Rewrite DynamicQuantizeLinear + MatMulInteger/ConvInteger into float ops (params: nodes)."""

    name = "dequantize-dynamic"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        changes: list[str] = []
        skipped: list[str] = []
        namer = gu.Namer(model)
        wanted: set[str] = set()
        for req in requests or [{}]:
            wanted.update(gu.label(n) for n in gu.select(g, req))
        uses = gu.consumers(g)
        outputs = {o.name for o in g.output}
        for dql in [n for n in g.node if n.op_type == "DynamicQuantizeLinear" and gu.is_default(n.domain)]:
            if gu.label(dql) not in wanted:
                continue
            y, scale, zp = dql.output
            readers = list({id(c): c for name in (y, zp) for c in uses.get(name, [])}.values())
            weights = {id(n): _centred_weight(g, n) for n in readers if n.op_type in _INTEGER_OPS}
            why = _why_not(dql, readers, weights, outputs)
            if why:
                skipped.append(f"{gu.label(dql)!r}: {why}")
                continue
            b = gu.Builder(model, gu.label(dql), namer)
            x = dql.input[0]
            # no axes: every opset reduces over all of x
            zero, qmax = b.const(0.0, name="zero"), b.const(255.0, name="qmax")  # qmin = 0
            hi = b.op("Max", [b.op("ReduceMax", [x], keepdims=0), zero])
            lo = b.op("Min", [b.op("ReduceMin", [x], keepdims=0), zero])
            b.op("Div", [b.op("Sub", [hi, lo]), qmax], out=[scale])
            safe = b.op("Max", [scale, b.const(_TINY, name="tiny")])
            zp_f = b.op("Clip", [b.op("Round", [b.op("Div", [b.op("Neg", [lo]), safe])]), zero, qmax])
            y_f = b.op("Clip", [b.op("Add", [b.op("Round", [b.op("Div", [x, safe])]), zp_f]), zero, qmax])
            centred = b.op("Sub", [y_f, zp_f])  # y - zero_point, exact small integers in float
            done = []
            for node in readers:
                inner = gu.Builder(model, gu.label(node), namer)
                # quantize_dynamic reads the int32 sums only through Cast(to=float): those then
                # take the float sums as they are, with no float -> int32 Cast for an engine to
                # get wrong on NaN/Inf (GL2010); any other reader keeps its int32
                as_float = all(c.op_type == "Cast" and gu.attr(c, "to") == onnx.TensorProto.FLOAT
                               for c in uses.get(node.output[0], ()))
                acc = inner.op("MatMul" if node.op_type == "MatMulInteger" else "Conv",
                               [centred, inner.const(weights[id(node)], name="weight")],
                               out=[node.output[0]] if as_float else None,
                               **({} if node.op_type == "MatMulInteger" else _conv_attrs(node)))
                if not as_float:
                    inner.op("Cast", [acc], out=[node.output[0]], to=onnx.TensorProto.INT32)
                inner.replace(g, node)
                done.append(gu.label(node))
            b.replace(g, dql)
            changes.append(f"{gu.label(dql)!r} and {', '.join(repr(d) for d in done)}: the same quantization "
                           "arithmetic in float ops (no integer kernels)")
        if changes:
            gu.clear_value_info(model)
        return PassResult(model, bool(changes), changes, skipped=skipped)


def _why_not(dql: onnx.NodeProto, readers: list[onnx.NodeProto], weights: dict[int, np.ndarray | None],
             outputs: set[str]) -> str:
    """Why a DynamicQuantizeLinear group cannot be rewritten ("" when it can)."""
    if any(o in outputs for o in (dql.output[0], dql.output[2])):
        return "its quantized value or zero point is a graph output"
    if not readers:
        return "nothing reads its quantized value"
    for node in readers:
        if node.op_type not in _INTEGER_OPS or not gu.is_default(node.domain):
            return f"{gu.label(node)!r} ({node.op_type}) reads its quantized value"
        if list(node.input[:1]) != [dql.output[0]] or (len(node.input) > 2 and node.input[2]
                                                          not in ("", dql.output[2])):
            return f"{gu.label(node)!r} does not read it as its quantized input and zero point"
        if weights[id(node)] is None:
            return f"{gu.label(node)!r} has a weight or weight zero point that is not a constant"
    return ""


def _centred_weight(g: onnx.GraphProto, node: onnx.NodeProto) -> np.ndarray | None:
    """The constant integer weight minus its zero point, as float32 (None when not constant)."""
    w = gu.const_value(g, node.input[1])
    if w is None:
        return None
    zp_name = node.input[3] if len(node.input) > 3 else ""
    zp = gu.const_value(g, zp_name) if zp_name else np.zeros((), w.dtype)
    if zp is None:
        return None
    zp = zp.astype(np.float32)
    if node.op_type == "ConvInteger" and zp.ndim == 1:  # per output channel: (M,) against (M, C, k...)
        zp = zp.reshape((-1,) + (1,) * (w.ndim - 1))
    elif node.op_type == "MatMulInteger" and zp.ndim == 1 and w.ndim >= 2:  # per column of (K, N)
        zp = zp.reshape((1,) * (w.ndim - 1) + (-1,))
    return w.astype(np.float32) - zp


def _conv_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

