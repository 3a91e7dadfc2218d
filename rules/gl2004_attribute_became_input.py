"""GL2004 attribute-became-input: an attribute that turned into an input at the node's opset."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node

ID = "GL2004"


class AttributeBecameInput(Rule):
    """A node still carries an attribute that became an input at its opset.

    ## What it checks
    The attribute-to-input facts of `rules/data/drift.toml` (`kind = "attr-to-input"`):
    Clip `min`/`max` (11), Pad `pads`/`value` (11), Slice `starts`/`ends`/`axes` (10), TopK `k`
    (10), ReduceSum, Squeeze, Unsqueeze `axes` and Split `split` (13), the other Reduce* `axes`
    (18), DFT `axis` (20). It reports a node at or past the boundary that still has the old
    attribute (a converter or a graph edit bumped the opset without moving it). (That TensorRT
    needs some of the moved inputs as build-time constants is GL1004's, from the parser's
    operator table.)

    ## Why it matters
    Engines split three ways on a stale attribute: onnxruntime refuses the model
    ("Unrecognized attribute: axes for operator ReduceMean"), OpenVINO 2026.4 *ignores* it
    (a ReduceMean-18 with `axes=[1]` reduces over every axis; a Clip-11 with `min`/`max`
    attributes does not clip) and crashes outright on a Pad-11 with a `pads` attribute.

    ## Example
    `ReduceMean(X, axes=[1])` (attribute) in an opset-18 model produced by setting
    `opset_import` to 18 on an opset-13 graph.

    ## Fix
    Apply the `attribute-to-input` rewrite (a constant input replaces the attribute), or convert
    the original model with `onnx.version_converter`, which moves attributes correctly.
    """

    id = ID
    name = "attribute-became-input"
    severity = Severity.ERROR
    op_types = D.op_types(ID)
    fixable = True
    source = f"{D.SOURCE} (kind = attr-to-input); ONNX Changelog; TensorRT operators.md restriction column"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        for f in D.facts_for(ID, node.op_type):
            if not D.applies(f, node):
                continue
            names = f["attribute"] if isinstance(f["attribute"], list) else [f["attribute"]]
            stale = [a for a in names if a in node.attrs]
            if stale:
                severity, extra = D.judged(f, ctx.target, self.severity)
                yield ctx.finding(
                    node,
                    f"{quote_node(node)} at opset {node.opset} has attribute(s) {', '.join(stale)}, which became "
                    f"input(s) at opset {f['boundary']}; engines reject or ignore the attribute."
                    + (D.unknown_note(ctx.target) if extra.get("unknown") else D.engine_note(f, ctx.target)),
                    rewrite=D.fact_rewrite(f, node, attribute=stale[0], input=f["input"]), severity=severity,
                    **D.props(f, attributes=stale), **extra,
                )
