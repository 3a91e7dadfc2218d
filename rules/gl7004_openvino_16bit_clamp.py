"""GL7004 openvino-16bit-clamp: a 16-bit Q whose clamp does work; OpenVINO's CPU strips it."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity


class Openvino16BitClamp(Rule):
    """16-bit QuantizeLinear clamps negatives to 0 (a removed Relu); OpenVINO drops the clamp.

    ## What it checks
    QuantizeLinear nodes with a 16-bit type (int16/uint16, com.microsoft or opset 21) whose zero
    point is the type's minimum -- the Q maps every negative input to 0 -- on an input that can be
    negative, and whose dequantized output is not clamped again by a Relu.

    ## Why it matters
    ONNX Runtime's QDQ quantizer removes a Relu (or Clip) before an asymmetric Q because the Q's
    range clamps at 0 anyway. OpenVINO's CPU plugin strips 16-bit FakeQuantize as the identity
    (`FQStrippingTransformation`), so the clamp -- now the only Relu -- is lost: a ResNet
    quantized with `activation_type=QuantType.QUInt16` runs on OpenVINO with a relative error of
    2.7 where ONNX Runtime's is 0.012.

    ## Example
    `Conv -> QuantizeLinear(uint16, zero point 0) -> DequantizeLinear -> Conv` where the export
    had `Conv -> Relu -> Conv`.

    ## Fix
    `graphlint fix` puts the Relu back in front of each such Q (`relu-before-clamping-q`; the
    results do not change on ONNX Runtime, the Q clamped the same values), or re-quantize with
    `extra_options={"QDQKeepRemovableActivations": True}`.
    """

    id = "GL7004"
    name = "openvino-16bit-clamp"
    severity = Severity.ERROR
    targets = frozenset({"openvino"})
    requires = ("quantization",)
    fixable = True
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        if quant.clamping_16bit:
            nodes = [q.node for q in quant.clamping_16bit]
            yield Q.scheme_finding(ctx, nodes, "ov-16bit-stripped", "16-bit QuantizeLinear that clamps at 0",
                                   severity=Severity.ERROR,
                                   rewrite=Rewrite("relu-before-clamping-q", {"nodes": [n.label for n in nodes]}))
