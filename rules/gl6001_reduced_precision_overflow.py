"""GL6001 reduced-precision-overflow: a value the graph pushes past the fp16 range."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _precision as R

from graphlint.analysis.precision import format_number
from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node


class ReducedPrecisionOverflow(Rule):
    """A value reaches past the largest number of the precision the target computes in.

    ## What it checks
    At reduced precision -- `--precision fp16|bf16`, or the target's default (OpenVINO GPU and
    NPU: fp16; OpenVINO CPU: bf16 on CPUs with AVX512_BF16 or AMX) -- the value-range analysis
    follows constants, embedding tables and the input ranges you give (`--input-range
    NAME:LO,HI`) through the graph. A node is flagged when some element of its output is known
    to *reach* a magnitude above the format's largest finite value (fp16: 65504), not merely to be
    bounded above it, so an over-approximated bound never becomes a finding. Additive attention
    masks (-1e9, float32's minimum) that only feed a softmax are not flagged: measured harmless
    (ONNX Runtime's converter clamps them to -65504, OpenVINO keeps them f32; drift under 3e-4).

    ## Why it matters
    The value becomes inf in fp16, and what follows with it: a LayerNorm/RMSNorm whose square
    overflows normalizes the row to 0. A Llama export whose residual stream carries one channel at
    2000 (the "massive activations" of trained LLMs) drifts by 0.54 in its logits and changes its
    argmax when every op runs in fp16 (onnx.reference on the `convert_float_to_float16` model);
    keeping the flagged chains in fp32 brings it to 0.0005.

    ## Example
    `RMSNorm` written as `x * Reciprocal(Sqrt(ReduceMean(Pow(x, 2)) + eps))` after an embedding
    whose table holds 2000: `Pow` reaches 4e6.

    ## Fix
    Keep the flagged chain in fp32 -- the keep-fp32 list (`--keep-fp32 FILE`) gives it in each
    engine's syntax: `trtexec --precisionConstraints=obey --layerPrecisions=...
    --layerOutputTypes=...`, OpenVINO `precise` rt_info (`graphlint fix --precision fp16`), ONNX
    Runtime `convert_float_to_float16(node_block_list=[...])` with the Cast pairs between the
    kept nodes removed -- or scale the model so the values fit.
    """

    id = "GL6001"
    name = "reduced-precision-overflow"
    severity = Severity.WARNING
    dialects = frozenset({ONNX, OPENVINO})
    requires = ("shapes", "precision")
    fixable = True
    source = f"{R.SOURCE} (culprit square-overflow)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for o, note, facts in R.pending(ctx, "overflows"):
            st = facts.setting
            rest = o.keep[1:]
            after = f" and {len(rest)} node(s) after it receive the out-of-range value" if rest else ""
            yield R.finding(
                ctx, o.node,
                f"{quote_node(o.node)} reaches {format_number(o.reached)}, past {st.precision}'s largest value "
                f"{format_number(facts.limit)}: {st.why(ctx.target.title)}, so it becomes inf{after}. "
                f"Keep in fp32: {R.listed(o.keep)}.",
                note, o.keep, st, Severity.WARNING, value=o.value, reached=o.reached)
