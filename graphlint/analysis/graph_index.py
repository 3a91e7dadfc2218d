"""Node indexes shared by the engine and rules."""

from __future__ import annotations

from graphlint.analysis import AnalysisContext, analysis
from graphlint.ir import Node


@analysis("all_nodes", per_target=False)
def all_nodes(ctx: AnalysisContext) -> list[Node]:
    """Every node in :meth:`Model.walk` order (graphs, subgraphs, then function bodies)."""
    return list(ctx.model.walk())


@analysis("nodes_by_type", per_target=False, requires=("all_nodes",))
def nodes_by_type(ctx: AnalysisContext) -> dict[str, list[Node]]:
    """op_type -> nodes (all graphs, subgraphs and functions), in walk order."""
    index: dict[str, list[Node]] = {}
    for node in ctx.analysis("all_nodes"):
        found = index.get(node.op_type)
        if found is None:
            index[node.op_type] = [node]
        else:
            found.append(node)
    return index
