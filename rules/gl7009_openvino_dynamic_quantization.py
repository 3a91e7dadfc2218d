"""GL7009 openvino-dynamic-quantization: dynamic quantization runs in float on OpenVINO's CPU."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rule, RuleContext, Severity


class OpenvinoDynamicQuantization(Rule):
    """DynamicQuantizeLinear + MatMulInteger/ConvInteger: OpenVINO converts them to float arithmetic.

    ## What it checks
    Dynamically quantized models (`quantize_dynamic`) on the OpenVINO target.

    ## Why it matters
    OpenVINO 2026.4 converts and runs them with ONNX Runtime's accuracy, but its CPU plugin runs
    no Convolution or FullyConnected in int8 for them: the model pays for quantizing activations
    at run time and gains no int8 kernel. Info: the model runs.

    ## Example
    `quantize_dynamic(model, out, weight_type=QuantType.QInt8)` on a ViT.

    ## Fix
    Quantize statically in QDQ format with calibration data (`quantize_static(...,
    quant_format=QuantFormat.QDQ)`) or with NNCF (`nncf.quantize`); or keep the float model.
    """

    id = "GL7009"
    name = "openvino-dynamic-quantization"
    severity = Severity.INFO
    targets = frozenset({"openvino"})
    requires = ("quantization", "support")
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        nodes = Q.uncovered(ctx, quant.of("dynamic"))
        if nodes and len(nodes) == len(quant.of("dynamic")):
            yield Q.scheme_finding(ctx, nodes, "ov-dynamic-float", "Dynamic quantization", severity=Severity.INFO)
