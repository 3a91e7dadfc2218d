"""OpenVINO IR: an If whose branches give an output of different rank (what the CPU plugin refuses).

OpenVINO infers an IR's shapes again when it reads it: an ``If`` takes its output shapes from its
bodies' Results, merged unless the condition is a constant, and bodies whose Results differ in rank
give an output of dynamic rank, which the CPU plugin compiles for no node (node.cpp:108 in 2026.4.1,
"CPU plug-in doesn't support If operation with dynamic rank"). The same constraint as the ONNX
table's ``If`` row (``static_output_rank``), checked here on the layers: the bodies' Result ranks
are compared as multisets (the port map is not needed: each body has a Result per output), so a
difference is shown, and an equal multiset is never claimed to be one. The condition must be shown
to be known only at run time (a graph input, or dims the ports declare -1): OpenVINO folds
conditions it can when it reads the IR (silero VAD v4's nested Ifs compare ranks it knows).
"""

from __future__ import annotations

from collections import Counter

from graphlint.analysis.support.common import CONSTRAINT, Issue
from graphlint.ir import Model, Node, Value
from graphlint.rule import Severity
from graphlint.target import Target


def _ranks(node: Node, tag: str) -> Counter[int] | None:
    body = node.subgraphs.get(tag)
    if body is None or any(v is None or v.shape is None for v in body.outputs):
        return None
    return Counter(len(v.shape) for v in body.outputs)


_VIEWS = frozenset({"Convert", "LogicalNot", "Squeeze", "Unsqueeze", "Reshape"})
_COMPARE = frozenset({"Equal", "NotEqual", "Greater", "Less", "GreaterEqual", "LessEqual"})


def _through(v: Value) -> Value:
    while v.producer is not None and v.producer.op_type in _VIEWS and v.producer.inputs and v.producer.inputs[0]:
        v = v.producer.inputs[0]
    return v


def _graph_input(v: Value) -> bool:
    return v.is_input and v.const is None and v.graph.owner is None


def _dynamic_dim(v: Value) -> bool:
    """``v`` is one dim of a value whose port declares it -1: ``Gather(ShapeOf(x), i)``."""
    p = v.producer
    if p is None or p.op_type != "Gather" or len(p.inputs) < 2 or p.inputs[0] is None or p.inputs[1] is None:
        return False
    shape_of, idx = p.inputs[0].producer, p.inputs[1].const
    if shape_of is None or shape_of.op_type != "ShapeOf" or idx is None or idx.size != 1 or not shape_of.inputs:
        return False
    x = shape_of.inputs[0]
    axis = int(idx.numpy().reshape(-1)[0])
    return x is not None and x.shape is not None and -len(x.shape) <= axis < len(x.shape) and x.shape[axis] is None


def _run_time(cond: Value | None) -> bool:
    """The condition is run-time data OpenVINO cannot fold (shown): a graph input, a comparison with
    one, or a comparison of two dims the ports declare dynamic (interval bounds never decide those)."""
    if cond is None:
        return False
    c = _through(cond)
    if _graph_input(c):
        return True
    p = c.producer
    if p is None or p.op_type not in _COMPARE or len(p.inputs) != 2 or None in p.inputs:
        return False
    sides = [_through(v) for v in p.inputs]
    return any(_graph_input(v) for v in sides) or all(_dynamic_dim(v) for v in sides)


def if_rank_issues(model: Model, target: Target, table: dict) -> dict[Node, list[Issue]]:
    rel = target.profile.get("data", {}).get("support", "")
    entry = table.get("domains", {}).get("ai.onnx", {}).get("If", {})
    constraint = next((c for c in entry.get("constraints", ()) if c.get("kind") == "static_output_rank"), None)
    if constraint is None:
        return {}
    out: dict[Node, list[Issue]] = {}
    for node in model.walk():
        if node.op_type != "If" or not node.inputs or node.inputs[0] is None:
            continue
        if not _run_time(node.inputs[0]):
            continue  # a condition OpenVINO may fold when it reads the IR: the taken body alone gives the shapes
        then_r, else_r = _ranks(node, "then_body"), _ranks(node, "else_body")
        if then_r is None or else_r is None or then_r == else_r:
            continue
        reason = (f"has bodies whose Results differ in rank (then {sorted(then_r.elements())}, else "
                  f"{sorted(else_r.elements())}) under a condition known only at run time, so an output has a "
                  "dynamic rank, which the engine cannot compile")
        out[node] = [Issue(CONSTRAINT, Severity.ERROR, reason, "rank:output", constraint.get("source", rel),
                           extra={"basis": f"support-table:rules/data/{rel}#ai.onnx/If",
                                  "constraint_text": constraint.get("text", "")})]
    return out
