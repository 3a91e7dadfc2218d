"""GL4004 boundary-only-dtype: uint8 used inside the network where the target allows it only at the boundary."""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter

from graphlint_rules import _contract as C

from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote, quote_node

QDQ = frozenset({"DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear"})
_DTYPE = attrgetter("dtype")


class BoundaryOnlyDtype(Rule):
    """A uint8 tensor is used inside the network, but the target takes uint8 only at its inputs/outputs.

    ## What it checks
    On targets whose profile lists `boundary_only_types` (TensorRT: uint8): graph inputs of
    that type consumed by anything other than a Cast, and node outputs or constants of that
    type inside the graph (Q/DQ zero points excepted).

    ## Why it matters
    The TensorRT ONNX parser documents "UINT8 is only supported as network input or output
    tensor types": a uint8 image transposed, resized or sliced before its Cast makes the parse
    fail on that node.

    ## Example
    `image.permute(0, 3, 1, 2).float()` on a uint8 input: the Transpose runs on uint8.

    ## Fix
    Cast first (`image.float().permute(...)`), or make the input float32 and convert on the host
    (input-cast-normalize).
    """

    id = "GL4004"
    name = "boundary-only-dtype"
    severity = Severity.ERROR
    fixable = True
    source = "https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md (UINT8 note); rules/data/targets/trt-*.toml"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        types = set(ctx.target.option("boundary_only_types") or ())
        if not types:
            return
        t = ctx.target.title
        g = ctx.model.graph
        if types.isdisjoint(map(_DTYPE, g.values.values())):
            return  # the usual case, seen at C speed: no value of the graph has such a type
        for v in g.inputs:
            if v.dtype in types and v.const is None:
                for n in v.consumers:
                    if n.op_type != "Cast":
                        yield ctx.finding(
                            n,
                            f"{quote_node(n)} consumes {v.dtype} input {quote(v.name)} directly; "
                            f"{t} allows {v.dtype} only at the network boundary, feeding a Cast.",
                            value=v,
                            rewrite=Rewrite("input-cast-normalize", {"input": v.name, "side": "graph"}, safe=False,
                                            description=f"Cast '{v.name}' to float right at the input."),
                            **C.props(C.document_basis(C.target_document(ctx.target))),
                        )
        for n in g.nodes:
            for v in n.outputs:
                if v.dtype in types and n.op_type not in QDQ and not v.is_output \
                        and any(c.op_type != "Cast" for c in v.consumers):
                    yield ctx.finding(
                        n,
                        f"{quote_node(n)} produces {v.dtype} tensor {quote(v.name)} inside "
                        f"the network; {t} supports {v.dtype} only as a network input or output.",
                        value=v, **C.props(C.document_basis(C.target_document(ctx.target))),
                    )
