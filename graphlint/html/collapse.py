"""Collapse a main graph into at most a few hundred drawable items before the page lays it out.

The browser lays out what this module keeps (dagre's crossing minimisation grows fast with the
node count), so repeated structure is folded first, in linear passes over nodes and edges:

1. *Units*. When node names (or the dynamo exporter's scope metadata, see page.scoped_paths)
   carry module paths (``/text_model/encoder/layers.3/mlp/fc1/Add``), each indexed module
   (``.../layers.3``) is one unit, and the nodes around the stacks fold by module folder.
   Otherwise the graph is cut where a single tensor is live between one node and the next in
   graph order (the residual stream between transformer halves; a few more tensors where that
   leaves stretches too long), and each stretch between cuts is a unit.
2. *Runs*. When the units still exceed the budget, consecutive units with the same op sequence
   and the same findings are folded into one run (``layers.0-11 ×12``); a unit whose findings
   differ from its neighbours' breaks the run, so the odd layer stays visible.
3. *Chunks*. Whatever is still over budget is folded by graph order into chunks of nodes without
   warnings or errors; flagged items stay separate as long as they fit.

Small graphs (at most ``DRAW_ALL`` nodes) are drawn node by node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

from graphlint.html.status import top_node
from graphlint.ir import Graph

BUDGET = 160  # items the page lays out
DRAW_ALL = 120  # graphs up to this size are not collapsed
MAX_PERIOD = 8  # longest repeating unit sequence a run may have (e.g. attention + MLP halves)
MAX_UNIT = 48  # longest stretch between cuts, unless the graph is big (then 1/16 of it)
MAX_PORTS = 24  # graph inputs/outputs drawn; the rest are left out of the picture
_INDEXED = re.compile(r"^(?:[A-Za-z_][\w]*\.)?\d+$")  # layers.3, h.11, 0


@dataclass
class Item:
    """One box of the drawing: a node, a folded unit (block), a run of units, a chunk, or a port."""

    kind: str  # "op" | "block" | "run" | "chunk" | "input" | "output"
    nodes: list[int]  # main-graph node indexes, in graph order (empty for ports)
    label: str
    title: str = ""  # full name or range
    reps: int = 1  # units folded into a run
    value: str = ""  # ports: the graph input/output name
    ports: list[int] = field(default_factory=list)  # ports: the nodes reading the input / writing the output


def _module_units(paths: list[str]) -> tuple[list[list[int]], dict[int, str]] | None:
    """Units by indexed module path, or None when too few paths carry one."""
    keys: dict[str, list[int]] = {}
    for i, path in enumerate(paths):
        segs = path.split("/")[:-1] if "/" in path else ()
        for j, seg in enumerate(segs):
            if _INDEXED.match(seg) and j > 0:
                keys.setdefault("/".join(segs[: j + 1]), []).append(i)
                break
    parents: dict[str, set[str]] = {}
    for k in keys:
        parents.setdefault(_parent(k), set()).add(k)
    names = {m[0]: k for k, m in keys.items() if len(m) > 1 and len(parents[_parent(k)]) > 1}
    units = [keys[k] for k in names.values()]
    if sum(map(len, units)) < 0.3 * len(paths):
        return None
    return units, names


def _parent(key: str) -> str:
    """The stack a unit belongs to: .../encoder/layers for .../encoder/layers.3 (or .../blocks/3)."""
    last = key.rsplit("/", 1)[-1]
    return key.rsplit(".", 1)[0] if "." in last else key.rsplit("/", 1)[0]


def _cut_units(graph: Graph) -> list[list[int]]:
    """Stretches of graph order between cuts where at most ``limit`` tensors are live, with the
    smallest ``limit`` whose stretches are all short enough: one for a single residual stream;
    more where exporters interleave two towers (the dynamo exporter's CLIP)."""
    live = _live_counts(graph)
    longest = max(MAX_UNIT, len(graph.nodes) // 16)
    units: list[list[int]] = []
    for limit in sorted(set(live))[:16]:  # a few linear passes at most
        units = _cut(live, limit)
        if max(map(len, units), default=0) <= longest:
            break
    return units


def _cut(live: list[int], limit: int) -> list[list[int]]:
    units, start = [], 0
    for k in range(1, len(live)):
        if live[k] <= limit:
            units.append(list(range(start, k)))
            start = k
    if live:
        units.append(list(range(start, len(live))))
    return units


def _live_counts(graph: Graph) -> list[int]:
    """For each position k of graph order, the tensors produced before node k and read at or after it."""
    nodes = graph.nodes
    n = len(nodes)
    diff = [0] * (n + 2)
    for node in nodes:
        i = node.index
        for v in node.outputs:
            if v.const is not None:
                continue
            last = n if v.is_output else i
            if last < n:
                for c in v.consumers:
                    j = c.index if c.graph is graph else top_node(c).index
                    if j > last:
                        last = j
            if last > i:
                diff[i + 1] += 1
                diff[last + 1] -= 1
    out, live = [0] * n, 0
    for k in range(n):
        live += diff[k]
        out[k] = live
    return out


def runs(sigs: list[Hashable], max_period: int = MAX_PERIOD) -> list[tuple[int, int, int]]:
    """Greedy tandem repeats: (start, period, repetitions) covering ``sigs`` left to right."""
    out, i, m = [], 0, len(sigs)
    while i < m:
        best_p, best_k = 1, 1
        for p in range(1, min(max_period, (m - i) // 2) + 1):
            unit = sigs[i:i + p]
            k = 1
            while i + (k + 1) * p <= m and sigs[i + k * p:i + (k + 1) * p] == unit:
                k += 1
            if k >= 2 and k * p > best_p * best_k:
                best_p, best_k = p, k
        out.append((i, best_p, best_k))
        i += best_p * best_k
    return out


def collapse(graph: Graph, profile: Callable[[int], Hashable], flagged: Callable[[int], bool],
             budget: int = BUDGET, paths: Callable[[], list[str] | None] | None = None,
             ) -> tuple[list[Item], set[tuple[int, int]]]:
    """The items to draw and the edges between them (item index pairs).

    ``profile(i)``: what the findings say about node i (units fold into a run only when their
    members' profiles match); ``flagged(i)``: node i has a warning or worse on some target;
    ``paths()``: module paths per node from elsewhere than the names (the dynamo exporter's
    metadata), asked for only when the names carry none."""
    nodes = graph.nodes
    items: list[Item] = []
    if len(nodes) <= DRAW_ALL:
        items = [_op(graph, i) for i in range(len(nodes))]
    else:
        names = [n.name for n in nodes]
        found = _module_units(names)
        if found is None and paths is not None and (scoped := paths()) is not None:
            found = _module_units(scoped)
            names = scoped
        units, keys = found if found is not None else (_cut_units(graph), {})
        items = _fold_units(graph, units, keys, profile, flagged, budget, names)
        if len(items) > budget:
            items = _chunk(graph, items, flagged, budget)
    return _with_ports(graph, items)


def _op(graph: Graph, i: int) -> Item:
    n = graph.nodes[i]
    return Item("op", [i], n.label, f"{n.label} ({n.op_type})")


def _short(key: str) -> str:
    """A module path short enough for a box: its stack's parent and the module (vision_model/…/layers.0)."""
    segs = key.strip("/").split("/")
    if len(segs) <= 3:
        return "/".join(segs[-2:])
    return f"{segs[1]}/…/{segs[-1]}"


def _fold_units(graph: Graph, units: list[list[int]], keys: dict[int, str], profile: Callable[[int], Hashable],
                flagged: Callable[[int], bool], budget: int, paths: list[str]) -> list[Item]:
    """``keys``: a module unit's first node -> its module path (empty for cut units)."""
    nodes = graph.nodes
    in_unit: set[int] = set()
    blocks: list[Item] = []
    for members in units:
        if len(members) < 2:
            continue
        in_unit.update(members)
        key = keys.get(members[0])
        label = _short(key) if key else f"{nodes[members[0]].label} …"
        blocks.append(Item("block", members, label, key or f"nodes {members[0]}–{members[-1]} in graph order"))
    singles = [_op(graph, i) for i in range(len(nodes)) if i not in in_unit]
    if keys:  # the nodes around the stacks, folded by module (flagged ones stay out)
        singles = _fold_modules(paths, singles, flagged)
    items = sorted(singles + blocks, key=lambda it: it.nodes[0])
    if len(items) > budget and blocks:
        # Module units fold only with siblings (layers of one stack); cut units with whatever
        # follows in graph order, so a single node between two stretches breaks their run.
        stacks: dict[str, list[Item]] = {}
        for it in items if not keys else blocks:
            stacks.setdefault(_parent(it.title) if keys else "", []).append(it)
        folded = [it for seq in stacks.values() for it in _fold_runs(graph, seq, profile, 1 if keys else MAX_PERIOD)]
        units_at = {id(b) for b in blocks}
        rest = [it for it in items if id(it) not in units_at] if keys else []
        items = sorted(rest + folded, key=lambda it: it.nodes[0])
    return items


def _fold_modules(paths: list[str], singles: list[Item], flagged: Callable[[int], bool]) -> list[Item]:
    by_dir: dict[str, list[Item]] = {}
    for it in singles:
        name = paths[it.nodes[0]]
        by_dir.setdefault(name.rsplit("/", 1)[0] if "/" in name else "", []).append(it)
    out: list[Item] = []
    for folder, group in by_dir.items():
        plain = [it.nodes[0] for it in group if not flagged(it.nodes[0])]
        if not folder or len(plain) < 3:
            out.extend(group)
            continue
        out.extend(it for it in group if flagged(it.nodes[0]))
        out.append(Item("block", plain, _short(folder), folder))
    return out


def _fold_runs(graph: Graph, seq: list[Item], profile: Callable[[int], Hashable], max_period: int) -> list[Item]:
    """Consecutive items with the same op sequence and findings, folded into runs."""
    nodes = graph.nodes
    sigs = [hash((tuple(nodes[i].op_type for i in it.nodes), tuple(profile(i) for i in it.nodes))) for it in seq]
    out: list[Item] = []
    for start, p, k in runs(sigs, max_period):
        group = seq[start:start + p * k]
        if k < 2:
            out.extend(group)
            continue
        members = [i for it in group for i in it.nodes]
        first, last = group[0], group[-1]
        if max_period == 1:  # a module stack: layers.0–11
            label = f"{first.label}–{last.label.rsplit('.', 1)[-1]}"
        else:
            label = f"{len(members) // k} nodes from {nodes[members[0]].label}"
        what = f"{k} repeats of {len(members) // k} nodes" + (f" ({p} parts)" if p > 1 else "")
        out.append(Item("run", members, label, f"{first.title} … {last.title}: {what}", reps=k))
    return out


def _chunk(graph: Graph, items: list[Item], flagged: Callable[[int], bool], budget: int) -> list[Item]:
    """Fold consecutive unflagged items (all flagged ones too if they alone exceed the budget)."""
    keep = [any(map(flagged, it.nodes)) for it in items]
    kept = sum(keep)
    if kept > budget // 2:
        keep = [False] * len(items)
        kept = 0
    plain = len(items) - kept
    size = -(-plain // max(1, budget - kept))  # items per chunk
    out: list[Item] = []
    pending: list[Item] = []

    def flush() -> None:
        if len(pending) == 1:
            out.append(pending[0])
        elif pending:
            members = sorted(i for it in pending for i in it.nodes)
            out.append(Item("chunk", members, f"{len(members)} nodes",
                            f"nodes {members[0]}–{members[-1]} in graph order ({len(pending)} parts)"))
        pending.clear()

    for it, k in zip(items, keep, strict=True):
        if k:
            flush()
            out.append(it)
        else:
            pending.append(it)
            if len(pending) >= size:
                flush()
    flush()
    return out


def node_edges(graph: Graph) -> Iterator[tuple[int, int]]:
    """(producer, consumer) node index pairs of the main graph, once per tensor read (so repeats
    are possible); a body's reads count for its owner."""
    for node in graph.nodes:
        a = node.index
        for v in node.outputs:
            for c in v.consumers:
                b = c.index if c.graph is graph else top_node(c).index
                if a != b:
                    yield a, b


def _with_ports(graph: Graph, items: list[Item]) -> tuple[list[Item], set[tuple[int, int]]]:
    item_of = [0] * len(graph.nodes)
    for k, it in enumerate(items):
        for i in it.nodes:
            item_of[i] = k
    edges: set[tuple[int, int]] = set()
    for a, b in node_edges(graph):
        ia, ib = item_of[a], item_of[b]
        if ia != ib:
            edges.add((ia, ib))
    for v in graph.inputs[:MAX_PORTS]:
        if v.const is not None or not v.consumers:
            continue
        readers = sorted({top_node(c).index for c in v.consumers})
        items.append(Item("input", [], v.name, f"graph input {v.name}", value=v.name, ports=readers))
        edges.update((len(items) - 1, item_of[i]) for i in readers)
    for v in graph.outputs[:MAX_PORTS]:
        writer = [top_node(v.producer).index] if v.producer is not None else []
        items.append(Item("output", [], v.name, f"graph output {v.name}", value=v.name, ports=writer))
        edges.update((item_of[i], len(items) - 1) for i in writer)
    return items, edges
