"""GL7008 trt-qdq-placement: Q/DQ placed where TensorRT cannot fuse them into INT8 kernels."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rule, RuleContext, Severity


class TrtQdqPlacement(Rule):
    """Outputs of Conv/MatMul/Gemm quantized, or one DQ shared by several consumers (TensorRT fusion).

    ## What it checks
    On a statically quantized model: QuantizeLinear nodes right after a Conv, ConvTranspose,
    MatMul or Gemm (the weighted op's output quantized), and activation DequantizeLinear outputs
    read by more than one node (a Q/DQ pair shared by several consumers). One finding with counts.

    ## Why it matters
    TensorRT fuses a DQ into the op that consumes it and a Q into the op that produces its input;
    ONNX Runtime's quantizer notes for TensorRT that quantizing the outputs of weighted ops is "not
    recommended" and that "QDQ pair can't be shared between nodes". Such a model builds, but
    more of it runs in higher precision with extra conversions: an INT8 engine can end up slower
    than FP16. Info only: the engine takes the model.

    ## Example
    `quantize_static` with default options: every Conv output of a ResNet gets a Q/DQ pair, and
    the pair after a residual Add feeds both branches.

    ## Fix
    `quantize_static(..., extra_options={"ActivationSymmetric": True, "WeightSymmetric": True,
    "OpTypesToExcludeOutputQuantization": ["Conv", "MatMul", "Gemm"], "DedicatedQDQPair": True})`,
    or let TensorRT Model Optimizer place them (`python -m modelopt.onnx.quantization
    --quantize_mode=int8`, `--autotune` measures placements).
    """

    id = "GL7008"
    name = "trt-qdq-placement"
    severity = Severity.INFO
    targets = frozenset({"trt"})
    requires = ("quantization",)
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        if not quant.of("static-qdq"):
            return
        outs, shared = quant.weighted_outputs_quantized, [q.node for q in quant.shared_dq]
        if outs or shared:
            nodes = list({id(n): n for n in outs + shared}.values())
            what = f"Q/DQ TensorRT fuses poorly: {len(outs)} quantized Conv/MatMul/Gemm output(s), " \
                   f"{len(shared)} shared DequantizeLinear output(s)"
            yield Q.scheme_finding(ctx, nodes, "trt-qdq-placement", what, severity=Severity.INFO)
