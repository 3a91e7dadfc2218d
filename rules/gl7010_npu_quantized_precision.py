"""GL7010 npu-quantized-precision: 16-bit or 4-bit quantization on OpenVINO's NPU, which documents 8-bit."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rule, RuleContext, Severity


class NpuQuantizedPrecision(Rule):
    """Q/DQ with a precision other than 8 bits for OpenVINO's NPU plugin.

    ## What it checks
    QuantizeLinear/DequantizeLinear with 16-bit or 4-bit types when the target is
    `openvino@npu`.

    ## Why it matters
    The NPU plugin documents U8 as its quantized inference type ("quantized models may be INT8
    or mixed FP16-INT8") and FP16 as the hardware's computation precision; 16-bit FakeQuantize is
    not listed, so such a model cannot be expected to run in the precision it was quantized for.
    A warning: the documentation is silent, not a rejection.

    ## Example
    `quantize_static(..., activation_type=QuantType.QUInt16, extra_options={"UseQDQContribOps": True})`
    deployed with `--target openvino@npu`.

    ## Fix
    8-bit quantization for NPU: `quantize_static(..., activation_type=QuantType.QUInt8,
    weight_type=QuantType.QInt8)` or NNCF's default 8-bit `nncf.quantize`.
    """

    id = "GL7010"
    name = "npu-quantized-precision"
    severity = Severity.WARNING
    targets = frozenset({"openvino"})
    requires = ("quantization",)
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        if ctx.target.device != "npu":
            return
        quant = ctx.analysis("quantization")
        nodes = [q.node for q in quant.qnodes if q.bits in (4, 16)]
        if nodes:
            yield Q.scheme_finding(ctx, nodes, "ov-npu-quantized-types", "Quantization other than 8-bit",
                                   severity=Severity.WARNING)
