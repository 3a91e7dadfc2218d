"""GL7003 openvino-quantized-constant: a constant quantized at run time crashes OpenVINO's int8 compile."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _quant as Q

from graphlint.rule import Finding, Rule, RuleContext, Severity


class OpenvinoQuantizedConstant(Rule):
    """A QuantizeLinear on a constant meets a quantized MatMul/Conv output; OpenVINO's CPU compile throws.

    ## What it checks
    QuantizeLinear nodes whose input is a constant (a `Constant` node or an initializer), so the
    constant is quantized at run time, whose DequantizeLinear then feeds a `Mul` or `Add` whose
    other input is the dequantized output of a MatMul, Conv or Gemm.

    ## Why it matters
    OpenVINO 2026.4's CPU plugin throws while compiling such a model, in its low-precision
    transformations: `[MultiplyPartialTransformation] ... CALLBACK HAS THROWN: Check 'index <
    m_inputs.size()' failed` (`AddTransformation` for Add). ONNX Runtime's `quantize_static`
    writes this pattern for every constant that `quant_pre_process` did not fold -- the attention
    scale of BERT and ViT exports quantized without pre-processing. ONNX Runtime runs the model.

    ## Example
    BERT (legacy export, dynamic axes; `quant_pre_process` fails on its symbolic shapes) quantized
    with `quantize_static`: `Constant_6 -> QuantizeLinear -> DequantizeLinear -> Mul` after the
    attention `MatMul`.

    ## Fix
    Pre-process before quantizing: `python -m onnxruntime.quantization.preprocess --input
    model.onnx --output model.pre.onnx --skip_symbolic_shape True` (folds the constants and fuses
    MatMul + bias Add into Gemm; the quantized BERT and ViT then compile and run on OpenVINO).
    `graphlint fix --rewrite fold-quantized-constant` stores such constants quantized (exact),
    which removes this crash but not the next one: with MatMul and its bias Add left unfused,
    OpenVINO 2026.4 fails the same way in `AddTransformation` on the bias Add, so the finding
    does not attach that rewrite.
    """

    id = "GL7003"
    name = "openvino-quantized-constant"
    severity = Severity.ERROR
    targets = frozenset({"openvino"})
    requires = ("quantization",)
    source = Q.SOURCE

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        quant = ctx.analysis("quantization")
        hits = [(q, elt) for q, elt in quant.runtime_constants if elt is not None]
        if hits:
            yield Q.scheme_finding(ctx, [q.node for q, _ in hits], "ov-quantized-constant",
                                   "Constants quantized at run time next to a quantized MatMul/Conv",
                                   severity=Severity.ERROR,
                                   meets=[elt.label for _, elt in hits])
