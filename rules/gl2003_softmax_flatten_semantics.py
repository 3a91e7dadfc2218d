"""GL2003 softmax-flatten-semantics: opset<13 Softmax/LogSoftmax/Hardmax that is not per-axis."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C
from graphlint_rules import _drift as D

from graphlint.analysis.shapes import is_placeholder, shape_text
from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

ID = "GL2003"


class SoftmaxFlattenSemantics(Rule):
    """An opset<13 Softmax, LogSoftmax or Hardmax normalizes over flattened dims, not along its axis.

    ## What it checks
    Softmax, LogSoftmax and Hardmax nodes at opset < 13 whose input has rank > 2 and whose
    `axis` (default 1) is not the last axis and some dim after it is not 1 (`[N, C, 1, 1]`, a
    classifier head, means the same either way). The rank and dims come from graphlint's symbolic
    shape pass, which knows ranks ONNX inference leaves open; an input of unknown rank, or with a
    dim after `axis` that is not known, is a warning that says so. Before opset 13 these ops
    coerce the input to 2-D `[prod(dims[:axis]), prod(dims[axis:])]` and normalize over the whole
    second part; from opset 13 they normalize along `axis` only. With `axis` = last both agree,
    which is why exporters that transpose the axis to the end (torch at opset 11) are clean.

    ## Why it matters
    The meaning changes silently with the opset, and engines already disagree today: for
    `Softmax(axis=1)` on a `[2, 3, 4]` input at opset 11, onnxruntime follows the spec
    (normalizes over 12 values) while OpenVINO 2026.4 and `onnx.reference` normalize over the
    3 values of axis 1. On `--target openvino` this is a wrong-results finding (error) when the
    rank is known; elsewhere, and whenever the rank is unknown, a warning.

    ## Example
    `Softmax(X[2, 3, 4], axis=1)` in an opset-11 model written by a hand-made exporter or a
    graph surgery script.

    ## Fix
    The `softmax-keep-2d-semantics` rewrite wraps the node in `Flatten(axis)` + `Reshape`, which
    has the same meaning at every opset and on every engine; if a per-axis softmax was meant,
    move the model to opset >= 13 instead (`onnx.version_converter` keeps the old meaning, so
    re-export rather than convert).
    """

    id = ID
    name = "softmax-flatten-semantics"
    severity = Severity.WARNING
    op_types = D.op_types(ID)
    requires = ("shapes",)  # the symbolic shape pass knows ranks ONNX inference leaves open
    fixable = True
    source = f"{D.SOURCE} (softmax-flatten-before-13); ONNX Changelog Softmax-13"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        f = D.facts(ID)[0]
        if not D.applies(f, node):
            return
        x = node.input(0)
        axis = node.attr("axis", 1)
        if not isinstance(axis, int):
            return  # a malformed attribute is GL0001's (onnx.checker) to report
        if axis == -1:
            return  # the last axis, whatever the rank: both meanings agree
        shape = ctx.analysis("shapes").shape(x) if x is not None else None
        rank = len(shape) if shape is not None else (x.rank if x is not None else None)
        if rank is not None:
            if rank <= 2:
                return
            axis = axis + rank if axis < 0 else axis
            if axis >= rank - 1:
                return
            # dims after axis: an int, a symbol (the input declares it variable), or None (not known)
            trailing = ([None if d is None else d.to_dim() for d in shape[axis + 1:]] if shape is not None
                        else [None if is_placeholder(d) else d for d in x.shape[axis + 1:]])
            if all(d == 1 for d in trailing):
                return  # [N, C, 1, 1] (a classifier head): the flattened dims are axis's alone
        version = 1 if node.opset < 11 else 11
        if rank is None:  # the meanings differ only when axis is not the last one, which the rank would tell
            yield ctx.finding(
                node,
                f"Node {quote(node.label)} ({node.op_type}-{version}) with axis={axis} has an input of unknown rank: "
                f"if axis {axis} is not its last axis, it normalizes over the flattened dims [{axis}:] rather than "
                "along the axis, which opset 13 changes (and OpenVINO already computes per axis).",
                rewrite=D.fact_rewrite(f, node), **D.props(f, axis=axis), **C.props(unknown=["rank"]),
            )
            return
        severity, extra = D.judged(f, ctx.target, Severity.WARNING)
        msg = (f"Node {quote(node.label)} ({node.op_type}-{version}) with axis={axis} on a rank-{rank} input "
               f"normalizes over the flattened dims [{axis}:], not along axis {axis}; opset 13 changes this meaning")
        if any(v is None for v in trailing):  # a dim after axis may be 1 everywhere, and then both meanings agree
            severity, extra = min(severity, Severity.WARNING), {**C.props(unknown=["shape"]), **(
                {"verdict": extra["verdict"]} if "verdict" in extra else {})}
            msg += f", unless every dim after axis {axis} is 1 (not all are known: {shape_text(trailing)})."
        else:
            msg += (f", and {ctx.target.title} already computes the per-axis result (it differs from the spec and "
                    "from onnxruntime)." if extra.get("verdict") == C.WRONG else ".")
        yield ctx.finding(node, msg, rewrite=D.fact_rewrite(f, node), severity=severity,
                          **D.props(f, axis=axis, rank=rank), **extra)
