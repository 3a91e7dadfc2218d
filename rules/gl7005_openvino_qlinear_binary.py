"""GL7005 openvino-qlinear-binary: com.microsoft QLinearAdd/QLinearMul give wrong numbers on OpenVINO."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity


class OpenvinoQlinearBinary(Rule):
    """QLinearAdd/QLinearMul run with integer wrap-around on OpenVINO (values below the zero point, overflow).

    ## What it checks
    com.microsoft `QLinearAdd` and `QLinearMul` nodes (ONNX Runtime's QOperator format) on the
    OpenVINO target, which lists both as supported.

    ## Why it matters
    OpenVINO's ONNX frontend computes `A - A_zero_point` in the 8-bit type and converts the sum
    back without saturating: inputs below the zero point wrap around (a uint8 QLinearAdd with
    zero point 128 and inputs below it differs from ONNX Runtime by up to 254 steps), and a ResNet
    quantized in QOperator format runs with a relative error above 1 where ONNX Runtime's is 0.01.
    When an input's type is not known at conversion, conversion fails instead ("Got A: dynamic").

    ## Example
    `quantize_static(..., quant_format=QuantFormat.QOperator)` on a ResNet: the residual `Add`
    becomes `QLinearAdd`.

    ## Fix
    Quantize in QDQ format (`quant_format=QuantFormat.QDQ`): OpenVINO reads Q/DQ pairs as
    FakeQuantize and runs the Add in int8 correctly.
    """

    id = "GL7005"
    name = "openvino-qlinear-binary"
    severity = Severity.ERROR
    targets = frozenset({"openvino"})
    requires = ("quantization", "support")
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        nodes: list[Node] = [n for n in quant.of("qoperator") if n.op_type in ("QLinearAdd", "QLinearMul")
                             and n.domain == "com.microsoft"]
        nodes = Q.uncovered(ctx, nodes)
        if nodes:
            yield Q.scheme_finding(ctx, nodes, "ov-qlinear-binary", "com.microsoft QLinearAdd/QLinearMul",
                                   severity=Severity.ERROR)
