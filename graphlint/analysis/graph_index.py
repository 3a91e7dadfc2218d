"""Node indexes shared by the engine and rules."""

from __future__ import annotations

from collections import defaultdict

from graphlint.analysis import analysis, early_key
from graphlint.ir import Model, Node


def node_list(model: Model) -> list[Node]:
    """Every node in :meth:`Model.walk` order (graphs, subgraphs, then function bodies), as a list:
    made once per model (a loaded model's nodes do not change), usually while inference runs,
    for the op-type index."""
    nodes = model.precomputed.get("node_list")
    if nodes is None:
        nodes = model.precomputed["node_list"] = list(model.walk())
    return nodes


def _index(model: Model) -> dict[str, list[Node]]:
    index: dict[str, list[Node]] = defaultdict(list)
    for node in node_list(model):
        index[node.op_type].append(node)
    return dict(index)


@analysis("nodes_by_type", per_target=False, early=_index)
def nodes_by_type(model: Model, target) -> dict[str, list[Node]]:
    """op_type -> nodes (all graphs, subgraphs and functions), in walk order."""
    # Node types need no inferred value types: the index may have been built while the loader's
    # shape inference still ran (the early part), and merging the types adds no nodes.
    early = model.precomputed.get(early_key("nodes_by_type"))
    return early if early is not None else _index(model)


@analysis("all_nodes", per_target=False)
def all_nodes(model: Model, target) -> list[Node]:
    return node_list(model)
