"""GL0003 unknown-domain: nodes in an operator domain the target has no support for at all."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from graphlint_rules import _contract as C

from graphlint.ir import ONNX_DOMAIN
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote, quote_node


class UnknownDomain(Rule):
    """Nodes use an operator domain the target engine does not know.

    ## What it checks
    For every operator domain used by a node (not just imported), whether the target profile
    lists an opset range for it. ai.onnx is always known; `com.microsoft` is known to ONNX
    Runtime and (partly) OpenVINO, not to TensorRT; custom domains are known to none.
    One finding per domain, on its first node, with the node count. Targets with a per-op support
    table (the built-in trt, ort and openvino) leave this to GL1001/GL1002, which name each node,
    its reason and a rewrite; this rule covers targets from packs that ship only a profile.

    ## Why it matters
    Custom-domain ops need a plugin or custom-op library the engine build does not have; the
    TensorRT parser falls back to looking for a plugin by op name and fails the build.

    ## Example
    `com.microsoft.FastGelu` from `onnxruntime.transformers.optimizer`, checked for `--target trt`.

    ## Fix
    Export without the fusion (unfused model), let `graphlint fix` un-fuse contrib ops into
    standard ONNX, or register the engine plugin that implements the op.
    """

    id = "GL0003"
    name = "unknown-domain"
    severity = Severity.ERROR
    source = "target profiles in rules/data/targets/"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        if ctx.target.data("support") is not None:
            return  # the target has a per-op support table: GL1001/GL1002 report these nodes, per node
        first: dict[str, object] = {}
        counts: Counter = Counter()
        op_types: dict[str, set[str]] = {}
        for node in ctx.model.walk():
            d = node.domain
            if d == ONNX_DOMAIN or ctx.target.opset_range(d) is not None:
                continue
            op_types.setdefault(d, set()).add(node.op_type)
            if ctx.model.functions and (d, node.op_type) in ctx.model.functions:
                continue  # a model-local function: expanded by engines that inline functions
            counts[d] += 1
            first.setdefault(d, node)
        for d, node in sorted(first.items()):
            n = counts[d]
            ops = sorted(op_types[d])
            yield ctx.finding(
                node,  # type: ignore[arg-type]
                f"{quote_node(node)} is in domain {quote(d)}, which "  # type: ignore[attr-defined]
                f"{ctx.target.title} does not support ({n} node(s) in this domain: {', '.join(ops[:8])}).",
                domain=d, nodes=n, op_types=ops, **C.props(C.profile_basis(ctx.target, "opsets")),
            )
