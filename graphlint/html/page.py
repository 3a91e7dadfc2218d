"""The data the page's script draws: per model, the collapsed graph with each item's status per target.

One model linted for several targets is drawn once; every item carries one status, finding
count and island number per target, so the script colours the same layout for whichever
target is selected and shows all of them side by side in the node's chips.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from graphlint.analysis.origins import NAME_SCOPES, name_scopes
from graphlint.html.collapse import Item, collapse, node_edges
from graphlint.html.status import OK, WARNING, TargetView
from graphlint.ir import Model, Node

EXPAND_LIMIT = 3000  # models up to this size carry what opening a folded box needs (node-level data)
FOLDED = ("block", "run", "chunk")
MAX_ITEM_FINDINGS = 200  # finding ids per item in the page data; the count is exact
MAX_ATTRS = 12
ATTR_CHARS = 80
_MODULE_DOT = re.compile(r"\.(?!\d)")  # a dot before a digit belongs to a list index (layers.0)


def _attr_text(value: Any) -> str:
    if hasattr(value, "nodes") and hasattr(value, "path"):  # a subgraph
        return f"graph ({len(value.nodes)} nodes)"
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # an array: small ones in full
        value = value.tolist() if value.size <= 16 else f"<{value.dtype} array {list(value.shape)}>"
    text = value if isinstance(value, str) and value.startswith("<") else repr(value)
    return text if len(text) <= ATTR_CHARS else text[:ATTR_CHARS - 1] + "…"


def node_attrs(node: Node) -> dict[str, str]:
    """A node's attributes as short text for the details panel (unreadable ones are skipped)."""
    try:
        attrs = node.attrs
    except Exception:  # an attribute the loader cannot decode is a finding elsewhere, not a crash here
        return {}
    return {k: _attr_text(v) for k, v in list(attrs.items())[:MAX_ATTRS]}


def _ranges(members: list[int]) -> list[list[int]]:
    """Sorted node indexes as [first, last] runs of consecutive indexes (the script maps nodes to items)."""
    out: list[list[int]] = []
    for i in sorted(members):
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def _ops_summary(model: Model, members: list[int]) -> str:
    counts = Counter(model.graph.nodes[i].op_type for i in members)
    top = [f"{op}×{n}" if n > 1 else op for op, n in counts.most_common(3)]
    return " · ".join(top) + (" · …" if len(counts) > 3 else "")


def scoped_paths(model: Model) -> list[str] | None:
    """Node names prefixed with their module path (``/clip/text_model/encoder/layers.0/self_attn/...``)
    from the dynamo exporter's per-node ``name_scopes`` metadata (its node names carry no path);
    None without it."""
    nodes = model.graph.nodes
    if not any(NAME_SCOPES in n.metadata for n in nodes[:8]):
        return None  # another exporter: no scopes anywhere (checked on the first nodes)
    out: list[str] = []
    for node in nodes:
        found = name_scopes(node)  # ('', 'clip', 'clip.text_model', ..., 'view_1')
        if len(found) < 2:
            out.append(node.name)
            continue
        out.append("/" + _MODULE_DOT.sub("/", found[-2]) + "/" + node.name)
    return out


def model_graph(model: Model, views: list[TargetView]) -> dict[str, Any]:
    """The page data for one model: items, edges, islands (per target)."""
    statuses = [v.status for v in views]
    islands = [v.island_of for v in views]

    placed = set().union(*statuses)  # nodes some finding is about: most nodes have none

    def profile(i: int) -> tuple:
        if i not in placed:
            return ()
        return tuple((s.get(i, OK), isl.get(i, 0) > 0) for s, isl in zip(statuses, islands, strict=True))

    def flagged(i: int) -> bool:
        return i in placed and any(s.get(i, OK) >= WARNING for s in statuses)

    items, edges = collapse(model.graph, profile, flagged, paths=lambda: scoped_paths(model))
    out_items = [_item(model, it, views) for it in items]
    item_of = {i: k for k, it in enumerate(items) for i in it.nodes if it.kind == "op"}
    data = {
        "path": model.path,
        "nodes": len(model.graph.nodes),
        "items": out_items,
        "edges": sorted(edges),
        "islands": [[{"k": k, "n": len(comp), "items": sorted({item_of[n.index] for n in comp if n.index in item_of})}
                     for k, comp in enumerate(v.islands, 1)] for v in views],
    }
    if len(model.graph.nodes) <= EXPAND_LIMIT and len(item_of) < len(model.graph.nodes):
        data.update(_expandable(model, items, views))
    return data


def _expandable(model: Model, items: list[Item], views: list[TargetView]) -> dict[str, Any]:
    """What the script needs to open a folded box in place: its nodes as items of their own
    (``sub``, each naming its box in ``p``), the node-level edges, and which nodes the ports touch."""
    nodes = model.graph.nodes
    sub = []
    for k, it in enumerate(items):
        if it.kind in FOLDED:
            for i in it.nodes:
                d = _item(model, Item("op", [i], nodes[i].label, f"{nodes[i].label} ({nodes[i].op_type})"), views)
                d["p"] = k
                sub.append(d)
    ports = [[k, i] for k, it in enumerate(items) if it.kind in ("input", "output") for i in it.ports]
    return {"sub": sub, "nedges": sorted(set(node_edges(model.graph))), "pedges": ports}


def _item(model: Model, it: Item, views: list[TargetView]) -> dict[str, Any]:
    d: dict[str, Any] = {"k": it.kind, "l": it.label, "t": it.title}
    if it.kind in ("input", "output"):
        return d
    nodes = model.graph.nodes
    d["n"] = len(it.nodes)
    d["rg"] = _ranges(it.nodes)
    if it.reps > 1:
        d["r"] = it.reps
    st, fc, fids = [], [], []
    for v in views:
        worst, count = OK, 0
        for i in it.nodes:
            s = v.status.get(i)
            if s is not None:
                worst = max(worst, s)
                found = v.findings.get(i, ())
                count += len(found)
                if len(fids) < MAX_ITEM_FINDINGS:
                    fids.extend(found[:MAX_ITEM_FINDINGS - len(fids)])
        st.append(worst)
        fc.append(count)
    d["st"], d["fc"], d["f"] = st, fc, fids
    if it.kind == "op":
        node = nodes[it.nodes[0]]
        d["op"] = node.op_type
        d["dom"] = node.domain
        d["i"] = node.index
        d["isl"] = [v.island_of.get(node.index, 0) for v in views]
        d["a"] = node_attrs(node)
    else:
        d["op"] = _ops_summary(model, it.nodes)
    return d
