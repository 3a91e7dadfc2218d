"""Quantization fixes that keep results exact: engines that mishandle a Q/DQ pattern get an equivalent one.

* ``fold-quantized-constant``: a QuantizeLinear over a constant is computed once (onnx's reference
  QuantizeLinear) and stored as the quantized initializer the DequantizeLinear reads. Same numbers;
  OpenVINO's CPU plugin no longer throws in its low-precision transformations (GL7003).
* ``relu-before-clamping-q``: a Relu in front of a QuantizeLinear whose range clamps at 0. The Q
  already maps negatives to its zero point, so results are unchanged; an engine that strips a
  16-bit Q as the identity (OpenVINO CPU) keeps the clamp (GL7004).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass
from graphlint.fix.passes.graph import _evaluate

_Q_DOMAINS = ("", "ai.onnx", "com.microsoft")


def _is_q(node: onnx.NodeProto) -> bool:
    return node.op_type == "QuantizeLinear" and node.domain in _Q_DOMAINS


@register_pass
class FoldQuantizedConstant(Pass):
    """Replace QuantizeLinear(constant) by its quantized value as an initializer (params: nodes)."""

    name = "fold-quantized-constant"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        changes: list[str] = []
        skipped: list[str] = []
        outputs = {o.name for o in g.output}
        for req in requests or [{}]:
            for node in [n for n in gu.select(g, req) if _is_q(n)]:
                values = [gu.const_value(g, x) if x else None for x in node.input]
                if values[0] is None or values[1] is None or (len(values) > 2 and node.input[2] and values[2] is None):
                    skipped.append(f"{gu.label(node)!r}: input, scale or zero point is not a constant")
                    continue
                if node.output[0] in outputs:
                    skipped.append(f"{gu.label(node)!r}: its output is a graph output")
                    continue
                ref = onnx.NodeProto()
                ref.CopyFrom(node)
                ref.domain = ""  # com.microsoft's QuantizeLinear computes the same for 8/16-bit types
                result = _evaluate(ref, values, max(gu.opset(model), 19 if values[1].dtype != np.float32 else 13))
                if not result:
                    skipped.append(f"{gu.label(node)!r}: the reference QuantizeLinear could not evaluate it")
                    continue
                g.initializer.append(numpy_helper.from_array(np.asarray(result[0]), node.output[0]))
                gu.remove_node(g, node)
                changes.append(f"{gu.label(node)!r}: stored the quantized constant {node.output[0]!r}")
        if changes:
            gu.clear_value_info(model)
        return PassResult(model, bool(changes), changes, skipped=skipped)


@register_pass
class ReluBeforeClampingQ(Pass):
    """Insert Relu in front of a QuantizeLinear whose zero point is its type's minimum (params: nodes)."""

    name = "relu-before-clamping-q"
    _MIN = {np.dtype("int8"): -128, np.dtype("uint8"): 0, np.dtype("int16"): -32768, np.dtype("uint16"): 0}

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        changes: list[str] = []
        skipped: list[str] = []
        namer = gu.Namer(model)
        for req in requests or [{}]:
            for node in [n for n in gu.select(g, req) if _is_q(n)]:
                zp = gu.const_value(g, node.input[2]) if len(node.input) > 2 and node.input[2] else None
                if zp is None or zp.dtype not in self._MIN or not np.all(zp == self._MIN[zp.dtype]):
                    skipped.append(f"{gu.label(node)!r}: its zero point is not the type's minimum")
                    continue
                out = namer(f"{node.input[0]}_relu")
                relu = helper.make_node("Relu", [node.input[0]], [out], name=namer(f"{gu.label(node)}_relu"))
                g.node.insert(gu.index_of(g, node), relu)
                node.input[0] = out
                changes.append(f"{gu.label(node)!r}: Relu in front (the Q clamps at 0; engines that strip it keep it)")
        return PassResult(model, bool(changes), changes, skipped=skipped)
