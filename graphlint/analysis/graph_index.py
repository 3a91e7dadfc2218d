"""Node indexes shared by the engine and rules."""

from __future__ import annotations

from collections import defaultdict

from graphlint.analysis import analysis
from graphlint.ir import Model, Node


@analysis("nodes_by_type", per_target=False)
def nodes_by_type(model: Model, target) -> dict[str, list[Node]]:
    """op_type -> nodes (all graphs, subgraphs and functions), in walk order."""
    index: dict[str, list[Node]] = defaultdict(list)
    for node in model.walk():
        index[node.op_type].append(node)
    return dict(index)


@analysis("all_nodes", per_target=False)
def all_nodes(model: Model, target) -> list[Node]:
    return list(model.walk())
