"""Per-node target support, computed once per target: does the target's engine take this node, and if not, why.

The target profile names a support table (``[data] support``) of one kind, each read by a small
evaluator registered for it: ``trt-matrix`` (TensorRT's ONNX parser, :mod:`.trt`),
``ort-kernels`` (ONNX Runtime, :mod:`.ort`), ``ov-onnx-frontend`` (OpenVINO, :mod:`.openvino`).
Per-op constraints in the tables are checked by :mod:`.constraints`.

Each problem is an :class:`Issue` with the category the GL1xx rules filter on, a severity
(error: the engine refuses; warning: it runs with a fallback or a silent cast), the constraint
and the source row. The ``partition`` analysis groups rejected nodes into connected islands.
"""

from __future__ import annotations

from typing import Any

from graphlint.analysis import AnalysisContext, analysis
from graphlint.analysis.support import openvino, ort, trt  # noqa: F401  (register their evaluators)
from graphlint.analysis.support.common import (
    CONSTRAINT,
    DTYPE,
    EVALUATORS,
    FUSED,
    TRAP,
    UNSUPPORTED,
    Issue,
    Support,
    message,
)
from graphlint.analysis.support.ir_rank import if_rank_issues
from graphlint.ir import ONNX, Model, Node
from graphlint.target import Target

__all__ = ["CONSTRAINT", "DTYPE", "FUSED", "TRAP", "UNSUPPORTED", "Issue", "Support", "accepts", "emit", "message"]


@analysis("support", requires=("all_nodes", "shapes"))
def support(ctx: AnalysisContext) -> Support:
    model, target = ctx.model, ctx.target
    table = target.data("support")
    rel = target.profile.get("data", {}).get("support", "")
    issues: dict[Node, list[Issue]] = {}
    if not table or model.dialect != ONNX:
        if table and table.get("kind") == "ov-onnx-frontend":  # OpenVINO IR: native ops, but the CPU plugin's ranks
            issues = if_rank_issues(model, target, table)
        return Support(issues, 0, rel)
    fn, screen = EVALUATORS[table["kind"]]
    functions = model.functions
    # op-level facts the evaluator derives once per run, not once per node; the symbolic shapes,
    # for the dims ONNX inference leaves unknown (which ranks OpenVINO infers: dynrank)
    memo: dict[Any, Any] = {"shapes": ctx.analysis("shapes")}
    # A model-local function call is not evaluated: engines inline the body, whose nodes are.
    nodes = ctx.analysis("all_nodes")
    inlined = functions if table.get("local_functions", True) else {}  # OpenVINO 2026.4 expands none
    if functions or any(node.dialect != ONNX for node in nodes):
        nodes = [node for node in nodes if node.dialect == ONNX
                 and not (inlined and (node.domain, node.op_type) in inlined)]
    for node in nodes if screen is None else screen(nodes, table, memo):
        found = fn(node, target, table, model, memo)
        if found:
            issues[node] = found
    return Support(issues, len(nodes), rel)


def accepts(node: Node, target: Target, model: Model) -> bool:
    """Whether ``target``'s support table takes ``node`` (False when the target has none): the
    question another rule asks about one node, without the whole model's analysis."""
    table = target.data("support")
    if not table:
        return False
    fn, _ = EVALUATORS[table["kind"]]
    return not any(i.rejects for i in fn(node, target, table, model, {}))


def emit(ctx: Any, category: str) -> list[Any]:
    """Findings of one issue category, for the GL1xx rules (each rule is one category)."""
    sup: Support = ctx.analysis("support")
    out = []
    for node, issue in sup.by_category(category):
        props = {"constraint": issue.constraint, "source": issue.source, "domain": node.domain,
                 "opset": node.opset, **{k: v for k, v in issue.extra.items() if k != "value"}}
        if issue.rejects and "basis" not in props:  # the severity contract (docs/severity.md): the deciding entry
            key = (node.op_type if sup.table.startswith("support/trt") else
                   "local_functions" if issue.constraint == "function" else f"{node.domain}/{node.op_type}")
            props["basis"] = f"support-table:rules/data/{sup.table}#{key}"
        value = issue.extra.get("value")
        out.append(ctx.finding(node, message(node, issue), severity=issue.severity, rewrite=issue.rewrite,
                               value=value, **props))
    return out
