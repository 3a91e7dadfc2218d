"""GL0004 untyped-graph-io: graph inputs or outputs without an element type or rank."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote


class UntypedGraphIO(Rule):
    """A graph input or output declares no element type or no rank.

    ## What it checks
    Every input and output of the main graph has an element type and a shape (rank known;
    individual dims may be symbolic).

    ## Why it matters
    Engines size their bindings from these declarations. TensorRT needs the rank of every
    network input to build an optimization profile; OpenVINO and ONNX Runtime allocate
    outputs from them. A missing type hides what the pipeline must feed.

    ## Example
    `helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)`: no shape at all.

    ## Fix
    Declare shapes at export (`dynamic_axes` / `dynamic_shapes` name the dynamic dims), or run
    `onnx.shape_inference.infer_shapes` and copy the inferred output types into the graph.
    """

    id = "GL0004"
    name = "untyped-graph-io"
    severity = Severity.WARNING
    dialects = frozenset({ONNX, OPENVINO})

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        g = ctx.model.graph
        for kind, values in (("input", g.inputs), ("output", g.outputs)):
            for v in values:
                if v.is_constant:
                    continue  # initializers listed as inputs (IR < 4) carry their own type
                dtype, shape = ctx.model.declared_io.get(v.name, (v.dtype, v.shape))
                tensor = dtype is None or not dtype.endswith("_type")  # sequences and maps have no shape
                missing = [w for w, bad in (("element type", dtype is None), ("shape", tensor and shape is None)) if bad]
                if missing:
                    yield ctx.finding(
                        None,
                        f"Graph {kind} {quote(v.name)} declares no {' and no '.join(missing)}"
                        + (f" (inference finds {v.dtype} {list(v.shape)})." if v.shape is not None else "."),
                        value=v,
                    )
