"""Partition the main graph into maximal connected supported / unsupported islands.

Like ``polygraphy inspect capability``: two nodes joined by a tensor belong to the same island
when the target takes both or rejects both. Every unsupported island is one engine fallback
(ORT-TRT/OpenVINO hetero) and a device copy at each boundary tensor. Nodes inside If/Loop/Scan
bodies count toward the node that owns the body; a call of a model-local function is rejected
when a node of its body is. Islands are the connected components of the graph whose edges join
nodes of the same status, found with a union-find over node indices (:func:`groups`; networkx's
took five times as long on a 100k-node graph: bench/README.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from graphlint.analysis import AnalysisContext, analysis
from graphlint.analysis.support import Support
from graphlint.ir import Graph, Model, Node, Value
from graphlint.target import Target


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


def _edges(graph: Graph, ok: list[bool] | None) -> Iterator[tuple[int, int]]:
    """(producer index, consumer index) of every tensor between two main-graph nodes of the same status."""
    for n in graph.nodes:
        i = n.index
        for v in n.outputs:
            for c in v.consumers:
                if c.graph is graph and (ok is None or ok[c.index] == ok[i]):
                    yield i, c.index


def groups(count: int, pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The connected groups of the integers ``0..count-1`` joined by ``pairs``: each group
    ascending, groups ordered by their smallest member."""
    parent = list(range(count))
    for a, b in pairs:
        while parent[a] != a:  # path halving
            parent[a] = a = parent[parent[a]]
        while parent[b] != b:
            parent[b] = b = parent[parent[b]]
        if a < b:  # the smaller index is the root: a root is its group's smallest member
            parent[b] = a
        elif b < a:
            parent[a] = b
    out: list[list[int]] = []
    where: dict[int, list[int]] = {}
    for i in range(count):
        root = i
        while parent[root] != root:
            root = parent[root]
        if root == i:
            where[i] = [i]
            out.append(where[i])
        else:  # root < i: its group is already listed
            where[root].append(i)
    return out


def components(graph: Graph, ok: list[bool] | None = None) -> list[list[Node]]:
    """The graph's connected components (nodes joined by a tensor, of the same status in ``ok``),
    each in graph order, ordered by their first node."""
    nodes = graph.nodes
    return [[nodes[i] for i in members] for members in groups(len(nodes), _edges(graph, ok))]


@analysis("components", per_target=False)
def main_components(ctx: AnalysisContext) -> list[list[Node]]:
    """The main graph's connected components: the partition of every target that takes every node.
    They depend on the structure alone, so the ONNX loader computes them while its child infers
    the types, when a rule needs them (graphlint.lint: ``meanwhile``)."""
    early = ctx.background("components")
    return early if early is not None else components(ctx.model.graph)


@analysis("partition", requires=("support", "components"))
def partition(ctx: AnalysisContext) -> Partition:
    """Islands of the main graph given the target's per-node support."""
    model, sup = ctx.model, ctx.analysis("support")
    result = _partition(model, sup, ctx.analysis("components"))
    if sup.evaluated:
        ctx.record("partition", result.summary(ctx.target))
    return result


def _partition(model: Model, sup: Support, all_components: list[list[Node]]) -> Partition:
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
    # the counts include the nodes of If/Loop/Scan bodies (a merged decoder's work is in its If),
    # each counted with the main-graph node that holds it; islands stay main-graph nodes
    weight = _weights(model)
    total = len(nodes) + sum(weight.values())
    if not rejected:  # the target takes every node: the islands are the graph's components
        return Partition([Island(True, members) for members in all_components], total, total)
    ok = [True] * len(nodes)
    for i in rejected:
        ok[i] = False
    islands = []
    for members in components(main, ok):
        island = Island(ok[members[0].index], members)
        if not island.supported:  # boundaries are reported for unsupported islands only
            _boundaries(island)
        islands.append(island)
    lost = len(rejected) + sum(weight.get(i, 0) for i in rejected)
    return Partition(islands, total, total - lost)


def _weights(model: Model) -> dict[int, int]:
    """Main-graph node index -> how many nodes its subgraphs hold (nodes with subgraphs only)."""
    out: dict[int, int] = {}
    for n in model.graph.nodes:
        if n.subgraphs:
            out[n.index] = sum(sum(1 for _ in g.walk()) for g in n.subgraphs.values())
    return out


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
