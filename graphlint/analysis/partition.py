"""Partition the main graph into maximal connected supported / unsupported islands.

Like ``polygraphy inspect capability``: two nodes joined by a tensor belong to the same island
when the target takes both or rejects both. Every unsupported island is one engine fallback
(ORT-TRT/OpenVINO hetero) and a device copy at each boundary tensor. Nodes inside If/Loop/Scan
bodies count toward the node that owns the body; a call of a model-local function is rejected
when a node of its body is. Union-find over the value edges: linear in nodes + edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphlint.analysis import analysis, computed, early_key
from graphlint.ir import Graph, Model, Node, Value
from graphlint.target import Target

if TYPE_CHECKING:
    from graphlint.analysis.support import Support


@dataclass
class Island:
    supported: bool
    nodes: list[Node]  # in graph order
    inputs: list[Value] = field(default_factory=list)  # boundary tensors entering (non-constant)
    outputs: list[Value] = field(default_factory=list)  # boundary tensors leaving

    @property
    def first(self) -> Node:
        return self.nodes[0]

    @property
    def op_types(self) -> list[str]:
        return sorted({n.op_type for n in self.nodes})


@dataclass
class Partition:
    islands: list[Island]
    nodes: int
    supported_nodes: int

    @property
    def unsupported(self) -> list[Island]:
        return [i for i in self.islands if not i.supported]

    def summary(self, target: Target) -> dict[str, object]:
        pct = 100.0 * self.supported_nodes / self.nodes if self.nodes else 100.0
        return {
            "target": target.spec,
            "nodes": self.nodes,
            "supported_nodes": self.supported_nodes,
            "supported_pct": round(pct, 1),
            "islands": len(self.islands),
            "supported_islands": len(self.islands) - len(self.unsupported),
            "unsupported_islands": len(self.unsupported),
        }


def _top(node: Node) -> Node:
    while node.graph.owner is not None:
        node = node.graph.owner
    return node


def compute(model: Model, sup: Support) -> Partition:
    """Islands of the main graph given per-node support (use ``Support.partition``, cached)."""
    nodes = model.graph.nodes
    rejected: set[int] = set()
    bad_functions: set[tuple[str, str]] = set()
    main = model.graph
    for node, issues in sup.issues.items():
        if not any(i.rejects for i in issues):
            continue
        top = _top(node)
        if top.graph is main:
            rejected.add(top.index)
        else:  # a function body
            for key, body in model.functions.items():
                if body is top.graph:
                    bad_functions.add(key)
    if bad_functions:
        for n in nodes:
            if (n.domain, n.op_type) in bad_functions:
                rejected.add(n.index)

    if not rejected:  # the target takes every node: the islands are the graph's components
        shared = computed(model, "components")  # when GL1010 asked for them
        groups = shared if shared is not None else _all_components(model)
        return Partition([Island(True, members) for members in groups], len(nodes), len(nodes))
    ok = [True] * len(nodes)
    for i in rejected:
        ok[i] = False
    islands = []
    for members in _groups(nodes, _components(nodes, ok, main)):
        island = Island(ok[members[0].index], members)
        if not island.supported:  # boundaries are reported for unsupported islands only
            _boundaries(island)
        islands.append(island)
    return Partition(islands, len(nodes), len(nodes) - len(rejected))


def _all_components(model: Model) -> list[list[Node]]:
    nodes = model.graph.nodes
    return _groups(nodes, _components(nodes, [True] * len(nodes), model.graph))


@analysis("components", per_target=False, early=_all_components)
def components(model: Model, target: Target) -> list[list[Node]]:
    """The main graph's connected components (nodes joined by a tensor), each in graph order,
    ordered by first node: the partition of every target that takes every node.

    Needs no value types, so it may be computed while the loader's shape inference still runs
    (the early part); shared by every target of the run.
    """
    early = model.precomputed.get(early_key("components"))
    return early if early is not None else _all_components(model)


def _groups(nodes: list[Node], root: list[int]) -> list[list[Node]]:
    """Nodes grouped by root, each group in graph order, groups ordered by their first node."""
    groups: dict[int, list[Node]] = {}  # root -> members; roots are the groups' lowest indexes
    for n in nodes:
        r = root[n.index]
        members = groups.get(r)
        if members is None:
            groups[r] = [n]
        else:
            members.append(n)
    return sorted(groups.values(), key=lambda g: g[0].index)


def _components(nodes: list[Node], ok: list[bool], main: Graph) -> list[int]:
    """For each node index, the lowest index of its island (nodes joined by a tensor, same status).

    Union-find where a union always points the higher root at the lower one, so every parent
    index is at most its child's; one forward pass then resolves each node to its root.
    """
    parent = list(range(len(nodes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for n in nodes:
        i = n.index
        status = ok[i]
        ri = -1  # the root of n's set, looked up on its first edge and kept current after each union
        for v in n.outputs:
            for c in v.consumers:
                j = c.index
                if c.graph is main and ok[j] == status:
                    if ri < 0:
                        ri = find(i)
                    rj = j if parent[j] == j else find(j)  # most consumers are still singletons
                    if ri < rj:
                        parent[rj] = ri
                    elif rj < ri:
                        parent[ri] = rj
                        ri = rj
    for i, p in enumerate(parent):  # parents come first: parent[p] is already a root
        parent[i] = parent[p]
    return parent


def _boundaries(island: Island) -> None:
    inside = {id(n) for n in island.nodes}
    seen_in: set[str] = set()
    for n in island.nodes:
        for v in n.inputs:
            if v is None or not v.name or v.const is not None or v.name in seen_in:
                continue
            if v.producer is None or id(v.producer) not in inside:
                seen_in.add(v.name)
                island.inputs.append(v)
        for v in n.outputs:
            if v.name and (v.is_output or any(id(c) not in inside for c in v.consumers)):
                island.outputs.append(v)

