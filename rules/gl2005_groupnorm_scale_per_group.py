"""GL2005 groupnorm-scale-per-group: GroupNormalization-18 scale/bias that opset 21 reads per channel."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

ID = "GL2005"


class GroupnormScalePerGroup(Rule):
    """A GroupNormalization's scale/bias shape does not match what its opset means.

    ## What it checks
    GroupNormalization nodes at opset 18-20 (GroupNormalization-18, deprecated at 21), whose
    `scale` and `bias` hold one value per *group*, and GroupNormalization-21 nodes whose
    constant `scale`/`bias` still have `num_groups` values when the channel count differs.
    A GN-18 node with `num_groups` equal to the channel count is left alone (per-group and
    per-channel coincide).

    ## Why it matters
    GroupNormalization-21 reads `scale`/`bias` per *channel*. The per-group tensors of an
    opset-18 model make the same node at opset 21 fail in onnxruntime ("Incompatible
    dimensions"), OpenVINO and `onnx.reference`, and `onnx.version_converter` 18 -> 21 leaves
    them in place, so the "upgraded" model is broken. Per-group scale and bias are also a
    deprecated form engines may drop.

    ## Example
    `GroupNormalization(X[1, 4, H, W], scale[2], bias[2], num_groups=2)` at opset 18.

    ## Fix
    The `groupnorm-per-channel` rewrite repeats each group's scale and bias over its
    `C / num_groups` channels and moves the node to opset 21; results stay identical (checked
    with onnxruntime). Exporters that decompose GroupNorm (torch: InstanceNormalization +
    Mul/Add) are not affected.
    """

    id = ID
    name = "groupnorm-scale-per-group"
    severity = Severity.WARNING
    op_types = D.op_types(ID)
    fixable = True
    source = f"{D.SOURCE} (groupnorm-18-per-group); ONNX Changelog GroupNormalization-21"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        if not isinstance(node.opset, int) or node.opset < 18:
            return  # before 18 it is GL2002's (not yet defined)
        f = D.facts(ID)[0]
        groups = node.attr("num_groups")
        x = node.input(0)
        channels = x.shape[1] if x is not None and x.shape and len(x.shape) > 1 else None
        channels = channels if isinstance(channels, int) else None
        scale = D.const(node.input(1))
        n_scale = int(scale.size) if scale is not None else None
        where = f"Node {quote(node.label)} (GroupNormalization)"
        if D.applies(f, node):
            if channels is not None and channels == groups:
                return
            yield ctx.finding(
                node,
                f"{where} at opset {node.opset} takes scale/bias per group ({groups} groups"
                + (f", {channels} channels" if channels else "") + "); GroupNormalization-21 reads them per "
                "channel, so the node fails to load once the model moves to opset 21 (onnx.version_converter "
                "does not expand them).",
                rewrite=D.fact_rewrite(f, node),
                **D.props(f, num_groups=groups, channels=channels),
            )
        elif node.opset >= 21 and channels and groups and n_scale == groups and groups != channels:
            severity, extra = D.judged(f, ctx.target, Severity.ERROR)
            yield ctx.finding(
                node,
                f"{where} at opset {node.opset} has {n_scale} scale values (one per group) but {channels} "
                "channels; GroupNormalization-21 needs one per channel, and ONNX Runtime and OpenVINO reject this "
                "shape." + (D.unknown_note(ctx.target) if extra.get("unknown") else ""),
                severity=severity,
                rewrite=D.rewrite("groupnorm-per-channel", node, safe=False,
                                  description="Repeat each group's scale/bias over its channels (assumes the "
                                              "tensors were written with opset-18 meaning)."),
                **D.props(f, num_groups=groups, channels=channels), **extra,
            )
