"""OpenVINO IR: an If whose branches give an output of different rank (what the CPU plugin refuses).

OpenVINO infers an IR's shapes again when it reads it: an ``If`` takes its output shapes from its
bodies' Results, merged unless the condition is a constant, and bodies whose Results differ in rank
give an output of dynamic rank, which the CPU plugin compiles for no node (node.cpp:108 in 2026.4.1,
"CPU plug-in doesn't support If operation with dynamic rank"). The same constraint as the ONNX
table's ``If`` row (``static_output_rank``), checked here on the layers: the bodies' Result ranks
are compared as multisets (the port map is not needed: each body has a Result per output), so a
difference is shown, and an equal multiset is never claimed to be one.
"""

from __future__ import annotations

from collections import Counter

from graphlint.analysis.support.common import CONSTRAINT, Issue
from graphlint.ir import Model, Node
from graphlint.rule import Severity
from graphlint.target import Target


def _ranks(node: Node, tag: str) -> Counter[int] | None:
    body = node.subgraphs.get(tag)
    if body is None or any(v is None or v.shape is None for v in body.outputs):
        return None
    return Counter(len(v.shape) for v in body.outputs)


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
        cond = node.inputs[0]
        if cond.const is not None or (cond.producer is not None and cond.producer.op_type == "Const"):
            continue  # a constant condition: the taken body alone gives the shapes
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
