"""The graph around a node as inline SVG: neighbourhood, layered layout, drawing.

No layout engine or CDN: a longest-path layering of the neighbourhood (a DAG), two
barycentre sweeps to reduce crossings, and boxes sized to their text. Small on purpose:
a neighbourhood is at most ``MAX_NODES`` nodes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from html import escape

from graphlint.ir import Node, Value

MAX_NODES = 28
RADIUS = 2
BOX_H = 38
LAYER_GAP = 34
NODE_GAP = 18
CHAR_W = 6.6
PAD = 14


@dataclass
class Style:
    fill: str = "#ffffff"
    stroke: str = "#8a94a6"
    width: float = 1.2
    css: str = ""  # extra class names
    note: str = ""  # tooltip line


class Port:
    """A graph input or output drawn as a small box so the picture shows where data enters and leaves."""

    def __init__(self, value: Value, kind: str) -> None:
        self.value = value
        self.kind = kind  # "input" | "output"
        self.op_type = kind
        self.label = value.name
        self.domain = ""
        self.graph = value.graph
        self.index = -1 if kind == "input" else 1 << 30
        self.outputs = [value] if kind == "input" else []
        self.inputs = [value] if kind == "output" else []


def with_ports(nodes: list[Node], seed_value: str | None = None) -> list:
    """``nodes`` plus ports for the graph inputs they read and the graph outputs they write."""
    ports: dict[tuple[str, str], Port] = {}
    for n in nodes:
        for v in n.inputs:
            if v is not None and v.is_input and v.const is None and v.producer is None:
                ports.setdefault(("input", v.name), Port(v, "input"))
        for v in n.outputs:
            if v.is_output:
                ports.setdefault(("output", v.name), Port(v, "output"))
    return [*nodes, *ports.values()]


def _neighbours(node: Node) -> tuple[list[Node], list[Node]]:
    preds = [v.producer for v in node.inputs if v is not None and v.producer is not None and v.const is None
             and v.producer.graph is node.graph]
    succs = [c for v in node.outputs for c in v.consumers if c.graph is node.graph]
    return preds, succs


def neighbourhood(seed: Node, radius: int = RADIUS, limit: int = MAX_NODES) -> list[Node]:
    """Nodes within ``radius`` edges of ``seed`` (same graph), nearest first, at most ``limit``."""
    seen = {id(seed): seed}
    queue = deque([(seed, 0)])
    while queue and len(seen) < limit:
        n, d = queue.popleft()
        if d == radius:
            continue
        preds, succs = _neighbours(n)
        for m in (*preds, *succs):
            if id(m) not in seen and len(seen) < limit:
                seen[id(m)] = m
                queue.append((m, d + 1))
    return list(seen.values())


def _label(node: Node | Port) -> tuple[str, str]:
    name = node.label
    if len(name) > 30:
        name = "…" + name[-29:]
    return node.op_type, name


def layout(nodes: list) -> tuple[dict[int, tuple[float, float, float]], list[tuple[Node, Node, Value]]]:
    """Positions (x, y, width) per node id and the edges among ``nodes``."""
    ids = {id(n) for n in nodes}
    edges: list[tuple[Node, Node, Value]] = []
    preds: dict[int, list[Node]] = {id(n): [] for n in nodes}
    for n in nodes:
        for v in n.outputs:
            for c in v.consumers:
                if id(c) in ids and c.graph is n.graph:
                    edges.append((n, c, v))
                    preds[id(c)].append(n)
        if isinstance(n, Port) and n.kind == "output" and id(n.value.producer) in ids:
            edges.append((n.value.producer, n, n.value))
            preds[id(n)].append(n.value.producer)
    # longest-path layering in the subgraph's topological order (graph order is topological)
    order = sorted(nodes, key=lambda n: n.index)
    layer: dict[int, int] = {}
    for n in order:
        layer[id(n)] = max((layer.get(id(p), -1) + 1 for p in preds[id(n)] if id(p) in layer), default=0)
    layers: dict[int, list[Node]] = {}
    for n in order:
        layers.setdefault(layer[id(n)], []).append(n)
    succs: dict[int, list[Node]] = {id(n): [] for n in nodes}
    for a, b, _ in edges:
        succs[id(a)].append(b)
    pos_in: dict[int, float] = {}

    def assign(row: list[Node]) -> None:
        for i, n in enumerate(row):
            pos_in[id(n)] = float(i)

    for row in layers.values():
        assign(row)
    keys = sorted(layers)
    for sweep in range(4):  # down, up, down, up
        seq = keys[1:] if sweep % 2 == 0 else list(reversed(keys[:-1]))
        for k in seq:
            row = layers[k]
            nbr = preds if sweep % 2 == 0 else succs

            def bary(n: Node, nbr=nbr) -> float:
                ps = [pos_in[id(m)] for m in nbr[id(n)] if id(m) in pos_in]
                return sum(ps) / len(ps) if ps else pos_in[id(n)]

            row.sort(key=bary)
            assign(row)
    widths = {id(n): max(70.0, CHAR_W * max(len(t) for t in _label(n)) + 18) for n in nodes}
    row_w = {k: sum(widths[id(n)] for n in row) + NODE_GAP * (len(row) - 1) for k, row in layers.items()}
    total = max(row_w.values(), default=0)
    pos: dict[int, tuple[float, float, float]] = {}
    for k, row in layers.items():
        x = PAD + (total - row_w[k]) / 2
        y = PAD + k * (BOX_H + LAYER_GAP)
        for n in row:
            pos[id(n)] = (x, y, widths[id(n)])
            x += widths[id(n)] + NODE_GAP
    return pos, edges


def render_svg(seed: Node, styles: dict[int, Style], title: str, port_styles: dict[str, Style] | None = None) -> str:
    """An inline SVG of ``seed``'s neighbourhood; ``styles`` colours nodes by id, ``port_styles`` graph I/O by name."""
    nodes = with_ports(neighbourhood(seed))
    pos, edges = layout(nodes)
    width = max((x + w for x, _, w in pos.values()), default=100) + PAD
    height = max((y + BOX_H for _, y, _ in pos.values()), default=40) + PAD
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" role="img" viewBox="0 0 {width:.0f} {height:.0f}" '
           f'width="{width:.0f}" height="{height:.0f}" aria-label="{escape(title)}">']
    for a, b, v in edges:
        ax, ay, aw = pos[id(a)]
        bx, by, bw = pos[id(b)]
        x1, y1, x2, y2 = ax + aw / 2, ay + BOX_H, bx + bw / 2, by - 6
        mid = (y1 + y2) / 2
        shape = "" if v.shape is None else " [" + ",".join("?" if d is None else str(d) for d in v.shape) + "]"
        tip = escape(f"{v.name}: {v.dtype or '?'}{shape}")
        out.append(f'<g class="edge"><title>{tip}</title><path d="M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} '
                   f'{x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}" fill="none" stroke="#9aa3b2" stroke-width="1.3"/>'
                   f'<polygon points="{x2 - 4:.1f},{y2:.1f} {x2 + 4:.1f},{y2:.1f} {x2:.1f},{y2 + 6:.1f}" '
                   f'fill="#9aa3b2"/></g>')
    for n in nodes:
        x, y, w = pos[id(n)]
        port = isinstance(n, Port)
        st = (port_styles or {}).get(n.label, Style(fill="#eef1f5")) if port else styles.get(id(n), Style())
        op, name = _label(n)
        seed_cls = " seed" if n is seed else (f" port {n.kind}" if port else "")
        tip = escape(f"{n.label} ({n.op_type}, {n.domain})" + (f"\n{st.note}" if st.note else ""))
        out.append(
            f'<g class="node{seed_cls}{" " + st.css if st.css else ""}" data-node="{escape(n.label)}">'
            f"<title>{tip}</title>"
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{BOX_H}" rx="{BOX_H / 2 if port else 6}" '
            f'fill="{st.fill}" '
            f'stroke="{st.stroke}" stroke-width="{st.width}"/>'
            f'<text x="{x + w / 2:.1f}" y="{y + 16:.1f}" text-anchor="middle" class="op">{escape(op)}</text>'
            f'<text x="{x + w / 2:.1f}" y="{y + 30:.1f}" text-anchor="middle" class="nm">{escape(name)}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)
