"""GL7006 per-channel-axis: weight scales on an axis that is not the output channels, or per-channel activations."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rule, RuleContext, Severity


class PerChannelAxis(Rule):
    """Per-channel scales on a weight axis other than its output channels (or on activations).

    ## What it checks
    DequantizeLinear nodes of stored weights with one scale per channel whose `axis` is not the
    output-channel axis of the op that reads the weight: 0 for Conv, 1 for ConvTranspose, the last
    axis of MatMul's B `[K, N]`, 0 or 1 for Gemm by `transB` (`[weight_axis]` in
    rules/data/quantization.toml). On TensorRT also per-channel Q/DQ on activations.

    ## Why it matters
    Scales along the summed axis (K) cannot be applied after an integer matrix product, so the
    engine must dequantize the weight first. ONNX Runtime's CPU provider then leaves the MatMul in
    float (ViT, `QDQOpTypePerChannelSupportToAxis={"MatMul": 0}`: 4 MatMuls fused into
    QLinearMatMul instead of 10). TensorRT's parser assumes per-channel scales belong to the
    output channels of a weight and does not support per-axis activation quantization. A
    warning: the model runs (ORT) or its fate is undocumented (TensorRT).

    ## Example
    `quantize_static(..., per_channel=True, extra_options={"QDQOpTypePerChannelSupportToAxis":
    {"MatMul": 0}})`.

    ## Fix
    Keep the quantizer's default channel axis (`per_channel=True` without
    `QDQOpTypePerChannelSupportToAxis`), which is the output channels.
    """

    id = "GL7006"
    name = "per-channel-axis"
    severity = Severity.WARNING
    targets = frozenset({"trt", "ort"})
    requires = ("quantization",)
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        fid = "trt-per-channel-axis" if ctx.target.name == "trt" else "ort-k-axis-weight-scales"
        if quant.axis_mismatch:
            nodes = [q.node for q, _, _ in quant.axis_mismatch]
            detail = [f"{q.label}: axis {q.axis}, {c.op_type} {c.label!r} needs {want}" for q, c, want in
                      quant.axis_mismatch]
            yield Q.scheme_finding(ctx, nodes, fid, "Weight scales on an axis other than the output channels",
                                   severity=Severity.WARNING, axes=detail)
        if ctx.target.name == "trt" and quant.channel_activations:
            yield Q.scheme_finding(ctx, [q.node for q in quant.channel_activations], "trt-per-channel-axis",
                                   "Per-channel quantization of activations", severity=Severity.WARNING)
