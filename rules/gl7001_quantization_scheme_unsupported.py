"""GL7001 quantization-scheme-unsupported: the model quantizes in a form the target cannot take."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity

# scheme -> fact per target; the nodes are the scheme's ops the target's support table rejects
_FACTS = {
    "trt": {"dynamic": "trt-dynamic-quantization", "qoperator": "trt-qoperator", "weight-only": "trt-matmulnbits"},
    "openvino": {"qoperator": "ov-missing-quantized-contrib", "dynamic": "ov-missing-quantized-contrib"},
}
_WHAT = {"dynamic": "Dynamic quantization (DynamicQuantizeLinear/MatMulInteger/ConvInteger)",
         "qoperator": "QOperator-format quantization (QLinear*/com.microsoft quantized ops)",
         "weight-only": "Weight-only quantization as com.microsoft ops (MatMulNBits)"}


class QuantizationSchemeUnsupported(Rule):
    """The model's quantization scheme (dynamic, QOperator, contrib weight-only) is one the target lacks.

    ## What it checks
    The quantization analysis sorts the model's quantized ops into schemes: static QDQ, QOperator
    (`QLinearConv`, `QLinearMatMul`, com.microsoft `QLinearAdd`, `QGemm`, `QAttention`, ...), dynamic
    (`DynamicQuantizeLinear`, `MatMulInteger`, `ConvInteger`, ...) and weight-only contrib ops
    (`MatMulNBits`, ...). For each scheme whose ops the target's support table rejects, one
    finding names the scheme, the nodes, what the engine does (rules/data/quantization.toml) and
    the tool call that makes a model the target takes.

    ## Why it matters
    The support rules (GL1001) reject each such node on its own; the cause is one setting of the
    quantization tool. TensorRT reads quantization only as Q/DQ pairs (explicit quantization) and
    marks `DynamicQuantizeLinear`, `MatMulInteger`, `ConvInteger`, `QLinearConv`, `QLinearMatMul`
    unsupported; OpenVINO has no conversion rule for `QGemm`, `QLinearGlobalAveragePool`,
    `QAttention` or `QEmbedLayerNormalization`.

    ## Example
    `quantize_dynamic(model, out)` on a BERT export, built for TensorRT: 8 `DynamicQuantizeLinear`
    and 12 `MatMulInteger` nodes fail to parse.

    ## Fix
    Re-quantize with the call the finding quotes: for TensorRT `quantize_static(...,
    quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True, "QuantizeBias": False})`
    or `python -m modelopt.onnx.quantization --quantize_mode=int8`, for int4 weights
    `MatMulNBitsQuantizer(..., quant_format=QuantFormat.QDQ, is_symmetric=True)`. For a dynamically
    quantized model with constant weights, `graphlint fix` computes the same quantization with
    float ops TensorRT parses (`dequantize-dynamic`: Round/Clip/MatMul/Conv instead of
    DynamicQuantizeLinear and the integer ops; verified equal in ONNX Runtime). The engine then
    runs it in float: re-quantizing statically is what gives int8 kernels. Severity is `info`
    when GL1001 already reports every node.
    """

    id = "GL7001"
    name = "quantization-scheme-unsupported"
    severity = Severity.ERROR  # info where the support rules already reject every node
    targets = frozenset({"trt", "openvino"})
    requires = ("quantization", "support")
    fixable = True
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        sup = ctx.analysis("support")
        for scheme, fid in _FACTS.get(ctx.target.name, {}).items():
            nodes = [n for n in quant.of(scheme) if sup.rejected(n)]
            if not nodes:
                continue
            rewrite = None
            if scheme == "dynamic" and all(n.op_type in _DEQUANTIZABLE for n in quant.of(scheme)):
                rewrite = Rewrite("dequantize-dynamic", {"nodes": [n.label for n in quant.of(scheme)]}, safe=True,
                                  description="compute the dynamic quantization with float ops")
            yield Q.scheme_finding(ctx, nodes, fid, _WHAT[scheme], rewrite=rewrite, scheme=scheme)


_DEQUANTIZABLE = frozenset({"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"})
