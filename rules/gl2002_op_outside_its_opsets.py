"""GL2002 op-outside-its-opsets: an op used at an opset where it is deprecated or does not yet exist."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node

ID = "GL2002"


class OpOutsideItsOpsets(Rule):
    """A default-domain op is used at an opset where it is deprecated, removed or not yet defined.

    ## What it checks
    Each node whose op has an availability fact in `rules/data/drift.toml` (`rule = "GL2002"`):
    `Upsample` at opset >= 10 (deprecated for Resize), `Scatter` at >= 11 (deprecated for
    ScatterElements), and ops used before they entered the default domain:
    `LayerNormalization` < 17, `GroupNormalization` < 18, `Gelu` < 20. The message says what the
    active target does with it, when the table knows. (An opset outside the target's range as a
    whole is GL0002's finding; this rule is about single ops.)

    ## Why it matters
    Engines disagree: onnxruntime refuses an opset-10 `Upsample` ("Op registered for Upsample
    is deprecated") while `onnx.reference`, OpenVINO and TensorRT run it; a `LayerNormalization`
    at opset 16 runs in onnxruntime (its own pre-standard kernel), OpenVINO and `onnx.reference`,
    yet `onnx.checker` rejects it, so the model works on one machine and fails in another
    pipeline.

    ## Example
    A hand-built graph that calls `Upsample(X, scales)` with `opset_import` 13, or a fused
    `LayerNormalization` written into an opset-14 model by a graph optimizer.

    ## Fix
    `Upsample` -> the `upsample-to-resize` rewrite (Resize with `asymmetric` coordinates and
    `nearest_mode=floor`, Upsample's meaning); ops used too early -> raise the model opset
    (`opset-upgrade` to the version in the suggestion) or re-export at that opset.
    """

    id = ID
    name = "op-outside-its-opsets"
    severity = Severity.ERROR
    op_types = D.op_types(ID)
    fixable = True
    source = f"{D.SOURCE} (kind = availability); ONNX Changelog"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        for f in D.facts_for(ID, node.op_type):
            if not D.applies(f, node):
                continue
            lo = f["opsets"][0]
            when = (f"deprecated since opset {f['boundary']}" if lo >= f["boundary"]
                    else f"defined in the default domain only from opset {f['boundary']}")
            yield ctx.finding(
                node,
                f"{quote_node(node)} is used at opset {node.opset} but is {when}."
                + D.engine_note(f, ctx.target),
                rewrite=D.fact_rewrite(f, node),
                **D.props(f, opset=node.opset),
            )
