"""GL3006 input-used-as-shape: a graph input feeds a shape operand (a TensorRT shape tensor)."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.shapes import ShapeFacts
from graphlint.ir import Node, Value
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

# op type -> input positions that are shapes / sizes / counts, not data
SHAPE_OPERANDS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Tile": (1,), "Range": (0, 1, 2),
    "Slice": (1, 2, 3, 4), "Resize": (2, 3), "TopK": (1,), "OneHot": (1,), "Pad": (1,), "Split": (1,),
    "Squeeze": (1,), "Unsqueeze": (1,), "Upsample": (1,),
}
PASS_THROUGH = frozenset({"Cast", "Identity", "Unsqueeze", "Squeeze", "Concat", "Gather", "Slice", "Add", "Sub",
                          "Mul", "Div", "Max", "Min", "Reshape"})


class InputUsedAsShape(Rule):
    """A graph input is used as a shape, size or count.

    ## What it checks
    Graph inputs that reach a shape operand (Reshape/Expand shape, ConstantOfShape,
    Tile repeats, Range bounds, Slice indices, Resize sizes, TopK K, OneHot depth, Pad pads)
    through integer shape arithmetic only.

    ## Why it matters
    TensorRT treats such inputs as *shape tensors*: their values, not only their dims, must be
    covered by the optimization profile (`setShapeValues`), they must be INT32/INT64 on the
    host, and several operands (OneHot depth, TopK K) must be build-time constants. Runtimes
    fed a new value re-plan every shape downstream.

    ## Example
    A `max_length` or `target_size` int64 input feeding Reshape or Resize.

    ## Fix
    Make the value a constant at export (Python int instead of a tensor), or derive it from an
    input's dims with Shape so the engine sees a dimension instead of a value.
    """

    id = "GL3006"
    name = "input-used-as-shape"
    severity = Severity.WARNING
    targets = frozenset({"trt"})
    requires = ("shapes",)  # ranks graphlint's shape pass found where ONNX inference found none
    source = "TensorRT developer guide (shape tensors); https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        for inp in ctx.model.graph.inputs:
            if inp.const is not None or inp.dtype not in ("int64", "int32"):
                continue
            hit = _reaches_shape(inp, facts)
            if hit is not None:
                node, pos = hit
                yield ctx.finding(
                    None,
                    f"Input {quote(inp.name)} feeds input {pos} of node {quote(node.label)} ({node.op_type}), a "
                    f"shape operand: {ctx.target.title} treats it as a shape tensor whose values must be in the "
                    f"optimization profile; make it a build-time constant or derive it from a tensor's shape.",
                    value=inp, consumer=node.label,
                )


def _reaches_shape(v: Value, facts: ShapeFacts, limit: int = 64) -> tuple[Node, int] | None:
    stack, seen = [v], set()
    while stack and len(seen) < limit:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        for n in cur.consumers:
            for pos in SHAPE_OPERANDS.get(n.op_type, ()):
                if n.input(pos) is cur:
                    return n, pos
            if n.op_type in PASS_THROUGH and n.outputs and len(facts.refined(n.outputs[0]) or ()) <= 1:
                stack.append(n.outputs[0])
    return None
