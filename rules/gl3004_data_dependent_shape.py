"""GL3004 data-dependent-shape: ops whose output size depends on tensor values."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C

from graphlint.ir import ONNX, OPENVINO, Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node

DATA_DEPENDENT = frozenset({"NonZero", "NonMaxSuppression", "Unique", "Loop", "Compress"})


def _loop_scan_dynamic(node: Node) -> bool:
    """A Loop with scan outputs whose trip count is not a build-time constant."""
    body = node.subgraphs.get("body")
    n_carried = len(node.inputs) - 2
    scans = len(body.outputs) - 1 - n_carried if body is not None else 0
    trip = node.input(0)
    return scans > 0 and (trip is None or trip.const is None)


class DataDependentShape(Rule):
    """An op's output size depends on tensor values, not shapes.

    ## What it checks
    NonZero, NonMaxSuppression, Unique and Compress produce as many elements as the data
    selects; a Loop whose trip count is not a constant and that has scan outputs grows them
    per iteration. Reported on targets that must bound or fix every shape at build time:
    TensorRT (`needs_profile`) and static-shape devices (OpenVINO NPU).

    ## Why it matters
    TensorRT allocates such outputs through an output allocator with an upper bound and
    documents "Scan output length cannot be dynamic" for Loop; NPU plugins compile static
    shapes only and reject the op or fall back. Every consumer of the output inherits an
    unbounded dim, which also defeats optimization profiles.

    ## Example
    `torch.nonzero(mask)` or `torchvision.ops.nms` exported into the graph.

    ## Fix
    Move the selection to post-processing outside the engine, bound it (`TopK` with a
    constant K, a fixed `max_output_boxes_per_class`), or give the Loop a constant trip count.
    """

    id = "GL3004"
    name = "data-dependent-shape"
    severity = Severity.WARNING
    op_types = DATA_DEPENDENT
    dialects = frozenset({ONNX, OPENVINO})  # OpenVINO opsets have NonZero, NMS and Unique too
    source = "https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md (Loop restrictions); rules/data/targets/*.toml"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        t = ctx.target
        if not (t.option("needs_profile") or t.option("static_shapes")):
            return
        if node.op_type == "Loop":
            if node.dialect != ONNX or not _loop_scan_dynamic(node):
                return
            what = "has scan outputs and a trip count that is not a build-time constant, so their length is data-dependent"
        else:
            what = "produces an output whose size depends on the input values"
        need = "static shapes" if t.option("static_shapes") else "a bound for every output dim"
        sev = Severity.ERROR if t.option("static_shapes") else None
        basis = C.document_basis(t.option("static_shapes_docs")) if sev else None
        yield ctx.finding(
            node,
            f"{quote_node(node)} {what}; {t.title} needs {need}.",
            value=node.outputs[0] if node.outputs else None,
            severity=sev, **C.props(basis),
        )
