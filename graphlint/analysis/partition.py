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

from graphlint.ir import Model, Node, Value
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

    parent = list(range(len(nodes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    ok = [True] * len(nodes)
    for i in rejected:
        ok[i] = False
    for n in nodes:
        i, status = n.index, ok[n.index]
        for v in n.outputs:
            for c in v.consumers:
                j = c.index
                if c.graph is main and ok[j] == status:
                    a, b = find(i), find(j)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
    groups: dict[int, list[Node]] = {}
    for n in nodes:
        groups.setdefault(find(n.index), []).append(n)
    islands = []
    for members in sorted(groups.values(), key=lambda g: g[0].index):
        island = Island(ok[members[0].index], members)
        if not island.supported:  # boundaries are reported for unsupported islands only
            _boundaries(island)
        islands.append(island)
    return Partition(islands, len(nodes), len(nodes) - len(rejected))


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

