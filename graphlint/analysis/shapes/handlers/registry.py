"""The shape handlers' registry, and helpers several handlers (and the folding) share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from graphlint.analysis.shapes.facts import SDim, ShapeFacts, SShape
from graphlint.analysis.symbolic import Poly
from graphlint.ir import ONNX_DOMAIN, Node, Value


class ShapePass(Protocol):
    """What handlers use of the pass (graphlint.analysis.shapes.walk.ShapeWalk)."""

    f: ShapeFacts

    def shape(self, v: Value | None) -> SShape: ...

    def agree(self, node: Node, a: SDim, b: SDim, va: Value | None, vb: Value | None, axis: int | None,
              broadcast: bool) -> SDim: ...

    def event(self, kind: str, node: Node, a: Poly, b: Poly, va: Value | None, vb: Value | None,
              axis: int | None) -> None: ...


# A handler: (node, pass) -> the shapes of the node's outputs, in order (fewer: the rest unknown).
Handler = Callable[[Node, ShapePass], list[SShape]]
HANDLERS: dict[str, Handler] = {}
HANDLED_DOMAINS = frozenset({ONNX_DOMAIN, "com.microsoft"})


def handles(*ops: str) -> Callable[[Handler], Handler]:
    def reg(fn: Handler) -> Handler:
        for op in ops:
            HANDLERS[op] = fn
        return fn

    return reg


def axes_of(node: Node, p: ShapePass, idx: int, attr_until: int) -> list[int] | None:
    """Axes from the attribute (older opsets) or the given input (newer ones)."""
    if isinstance(node.opset, int) and node.opset < attr_until:
        ax = node.attr("axes")
        return list(ax) if ax is not None else None
    a = p.f.const(node.input(idx))
    return [int(x) for x in a.reshape(-1).tolist()] if a is not None else None  # tolist: no numpy scalars


def shape_range(node: Node, rank: int) -> tuple[int, int]:
    """The [start, end) of Shape's output (its start/end attributes, clamped to the rank)."""
    lo, hi = node.attr("start", 0), node.attr("end", rank)
    lo = min(max(lo + rank if lo < 0 else lo, 0), rank)
    hi = min(max(hi + rank if hi < 0 else hi, 0), rank)
    return lo, hi
