"""GL7002 trt-qdq-requirements: static Q/DQ that TensorRT's explicit quantization refuses."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rule, RuleContext, Severity

_TRT_TYPES = frozenset({"int8", "int4", "float8e4m3fn", "float4e2m1"})


class TrtQdqRequirements(Rule):
    """Q/DQ nodes break TensorRT's requirements: zero points 0, INT8/INT4/FP8 types, no int32 bias DQ.

    ## What it checks
    On a model with Q/DQ nodes, what TensorRT's ONNX parser (10.15) requires of each:
    a zero point of 0 (symmetric quantization), a quantized type it has (INT8, INT4, FP8, FP4:
    not uint8, uint4, int16 or uint16) and DequantizeLinear inputs of those types (the int32 bias
    ONNX Runtime's `quantize_static` writes by default is not one). One finding lists what the
    model breaks, with counts and node names, and the single `quantize_static` call that
    satisfies all of it.

    ## Why it matters
    The parser stops at the first such node ("Non-zero zero point is not supported"); fixing them
    one error at a time by hand misses that they come from the quantizer's defaults
    (`activation_type=QUInt8`, `ActivationSymmetric=False`, `QuantizeBias=True`). ONNX Runtime's
    own docs: quantization for its TensorRT provider "only supports S8S8".

    ## Example
    `quantize_static(model, out, reader)` with ORT's defaults on a ResNet: uint8 activations with
    zero points 0..255 and 6 int32 bias DequantizeLinear nodes.

    ## Fix
    `quantize_static(..., quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
    weight_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True, "WeightSymmetric":
    True, "QuantizeBias": False})`, or TensorRT Model Optimizer
    (`python -m modelopt.onnx.quantization --quantize_mode=int8 ...`). For int4 weights:
    `MatMulNBitsQuantizer(..., is_symmetric=True, quant_format=QuantFormat.QDQ)`. GL1004/GL1005
    report the same nodes one by one; when they cover every node this finding is `info`.
    """

    id = "GL7002"
    name = "trt-qdq-requirements"
    severity = Severity.ERROR  # info where the support rules already reject every node
    targets = frozenset({"trt"})
    requires = ("quantization", "support")
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        if not quant.of("static-qdq") and not quant.of("weight-only"):
            return
        problems: list[tuple[str, str, list]] = []
        asym = [q.node for q in quant.qnodes if q.symmetric is False and q.qtype != "int32"]
        if asym:
            problems.append(("trt-nonzero-zero-point", "non-zero zero points", asym))
        bias = [q.node for q in quant.qnodes if q.kind == "DQ" and q.qtype == "int32"]
        if bias:
            problems.append(("trt-int32-bias", "int32 bias DequantizeLinear", bias))
        for qtype, fid in (("uint8", "trt-uint8-dequantize"), ("int16", "trt-16bit-quantization"),
                           ("uint16", "trt-16bit-quantization"), ("uint4", "trt-matmulnbits")):
            nodes = [q.node for q in quant.qnodes if q.qtype == qtype]
            if nodes:
                problems.append((fid, f"{qtype} quantization", nodes))
        if not problems:
            return
        nodes = list({id(n): n for _, _, ns in problems for n in ns}.values())
        what = "; ".join(f"{label} ({len(ns)})" for _, label, ns in problems)
        first = problems[0][0]
        yield Q.scheme_finding(ctx, nodes, first, f"Q/DQ that TensorRT refuses: {what}",
                               facts=[fid for fid, _, _ in problems])
