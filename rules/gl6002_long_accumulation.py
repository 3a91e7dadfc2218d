"""GL6002 long-accumulation: a running sum over a long axis kept in reduced precision."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _precision as R

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node


class LongAccumulation(Rule):
    """A CumSum over a long axis accumulates in bf16/fp16 and stops growing.

    ## What it checks
    At reduced precision (`--precision`, or the target's default), `CumSum` nodes whose axis
    has a static length of at least 2**significand bits (bf16: 256, fp16: 2048), on engines
    that keep the running sum in that precision (`rules/data/precision.toml`, `[[accumulation]]`).
    Warning where the engine was shown to accumulate in the reduced precision (OpenVINO CPU
    bf16); info where it is not known (TensorRT, OpenVINO GPU); nothing where the engine keeps
    it in fp32 (ONNX Runtime's converter blocks CumSum by default).

    ## Why it matters
    Once the running sum is 2**significand bits times a term, adding the term no longer changes
    it: on OpenVINO's CPU plugin in bf16 a cumulative sum of 1024 values near 1 stops at 256.
    A causal linear-attention model (cumsum over 512 steps) drifts by 0.12 and changes its
    argmax at OpenVINO's bf16 default; with the four CumSums marked fp32 it drifts by 0.003.
    `ReduceSum`/`ReduceMean` are not flagged: the same plugin accumulates them in f32.

    ## Example
    `torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=1)` over a 512-step sequence,
    compiled by OpenVINO on a CPU with AVX512_BF16.

    ## Fix
    Keep the CumSum in fp32 (the keep-fp32 list; `graphlint fix --precision bf16` marks OpenVINO
    IR layers `precise`, which the CPU plugin obeys), or compile with
    `INFERENCE_PRECISION_HINT: f32`.
    """

    id = "GL6002"
    name = "long-accumulation"
    severity = Severity.WARNING
    dialects = frozenset({ONNX, OPENVINO})
    requires = ("shapes", "precision")
    fixable = True
    source = f"{R.SOURCE} (culprit long-cumsum, [[accumulation]])"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for acc, note, facts in R.pending(ctx, "accumulations"):
            st = facts.setting
            known = acc.accumulates == "reduced" and not note
            how = ("keeps the running sum in " + st.precision) if known else \
                f"may keep the running sum in {st.precision} (not shown for this engine)"
            yield R.finding(
                ctx, acc.node,
                f"{quote_node(acc.node)} sums {acc.length} steps: {st.why(ctx.target.title)} and {how}; past "
                f"{acc.min_length} like terms the sum stops growing. Keep it in fp32.",
                note, [acc.node], st, Severity.WARNING if known else Severity.INFO, length=acc.length)
