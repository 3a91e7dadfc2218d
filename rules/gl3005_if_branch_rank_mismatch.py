"""GL3005 if-branch-rank-mismatch: If branches return outputs of different rank."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote


class IfBranchRankMismatch(Rule):
    """The two branches of an If return an output with different ranks.

    ## What it checks
    For each output position of an If node, the rank declared (or inferred) for the
    then-branch output and the else-branch output.

    ## Why it matters
    ONNX allows branches of different shape, but TensorRT documents for If: "Output tensors
    of the two conditional branches must have the same rank". Rank also decides which
    downstream ops are legal, so engines that require it reject the network at parse time.

    ## Example
    `x if flag else x.unsqueeze(0)` exported with a data-dependent flag.

    ## Fix
    Make both branches return the same rank (reshape or unsqueeze inside the branch), or fold
    the condition to a constant so the If disappears (`fold-constants`).
    """

    id = "GL3005"
    name = "if-branch-rank-mismatch"
    severity = Severity.ERROR
    op_types = frozenset({"If"})
    targets = frozenset({"trt"})
    source = "https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md (If restrictions)"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        then_g, else_g = node.subgraphs.get("then_branch"), node.subgraphs.get("else_branch")
        if then_g is None or else_g is None:
            return
        for k, (a, b) in enumerate(zip(then_g.outputs, else_g.outputs, strict=False)):
            if a.rank is not None and b.rank is not None and a.rank != b.rank:
                yield ctx.finding(
                    node,
                    f"Node {quote(node.label)} (If) output {k} has rank {a.rank} in then_branch "
                    f"({a.name!r}) but rank {b.rank} in else_branch ({b.name!r}); {ctx.target.title} "
                    f"needs both branches to have the same rank.",
                    value=node.outputs[k] if k < len(node.outputs) else None,
                    **C.props(C.document_basis(C.target_document(ctx.target))),
                )
