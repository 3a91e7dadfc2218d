"""Ops that move, cut or join dims: Concat, Reshape, Expand, Transpose, (Un)Squeeze, Flatten,
Gather, Slice, Tile, Split, Pad."""

from __future__ import annotations

import numpy as np

from graphlint.analysis.shapes.facts import INT_MAX, SDim, SShape
from graphlint.analysis.shapes.handlers.elementwise import broadcast
from graphlint.analysis.shapes.handlers.registry import ShapePass, axes_of, handles
from graphlint.analysis.symbolic import ONE, Poly, product
from graphlint.ir import Node


@handles("Concat")
def _concat(node: Node, p: ShapePass) -> list[SShape]:
    vals = [v for v in node.inputs if v is not None]
    shapes = [p.shape(v) for v in vals]
    if not shapes or any(s is None for s in shapes):
        return [None]
    rank = len(shapes[0])  # type: ignore[arg-type]
    if any(len(s) != rank for s in shapes):  # type: ignore[arg-type]
        return [None]
    axis = node.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    out: list[SDim] = []
    for k in range(rank):
        if k == axis:
            out.append(_sum([s[k] for s in shapes]))  # type: ignore[index]
            continue
        cur, cur_v = shapes[0][k], vals[0]  # type: ignore[index]
        for v, s in zip(vals[1:], shapes[1:], strict=True):
            cur = p.agree(node, cur, s[k], cur_v, v, k, False)  # type: ignore[index]
        out.append(cur)
    return [tuple(out)]


def _sum(dims: list[SDim]) -> SDim:
    out = Poly.const(0)
    for d in dims:
        if d is None:
            return None
        out = out + d
    return out



@handles("Reshape")
def _reshape(node: Node, p: ShapePass) -> list[SShape]:
    data = node.input(0)
    sin, target = p.shape(data), p.f.sval(node.input(1))
    if target is None:
        # the target's values are run-time, its length is not: the rank is known, the dims are not
        tshape = p.shape(node.input(1))
        n = tshape[0] if tshape is not None and len(tshape) == 1 else None
        return [(None,) * n.value if n is not None and n.is_const and 0 <= (n.value or 0) <= 64 else None]
    out: list[SDim] = []
    neg = None
    for i, d in enumerate(target):
        # allowzero only matters for a 0 in the target: read it then (decoding attributes costs)
        if d is not None and d.is_const and d.value == 0 and not node.attr("allowzero", 0):
            out.append(sin[i] if sin is not None and i < len(sin) else None)
        elif d is not None and d.is_const and d.value == -1:
            neg = i
            out.append(None)
        else:
            out.append(d)
    total = product(sin) if sin is not None else None
    if neg is not None:
        known = product(d for i, d in enumerate(out) if i != neg)
        if total is not None and known is not None:
            q = total.div_exact(known) if not known.is_const else total.floordiv(known.value or 1)
            if known.is_const and q is not None and total.is_const and (total.value or 0) % (known.value or 1):
                p.event("reshape", node, total, known, data, node.input(1), None)
                q = None
            out[neg] = q
            lead = sin[0] if sin else None
            if (q is not None and neg > 0 and lead is not None and not lead.is_const and out[0] is not None
                    and out[0].is_const and lead.symbols <= q.symbols):
                # x.reshape(1, -1, D) on [batch, ...]: the batch is folded into another axis
                p.event("fold", node, lead, q, data, node.input(1), neg)
    elif total is not None:
        want = product(tuple(out))
        if want is not None and want != total:
            p.event("reshape", node, total, want, data, node.input(1), None)
    return [tuple(out)]


@handles("Expand")
def _expand(node: Node, p: ShapePass) -> list[SShape]:
    target = p.f.sval(node.input(1))
    sin = p.shape(node.input(0))
    if target is None or sin is None:
        return [None]
    return [broadcast(p, node, [node.input(0), node.input(1)], [sin, tuple(target)])]


@handles("Transpose")
def _transpose(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    perm = node.attr("perm") or list(reversed(range(len(s))))
    return [tuple(s[i] for i in perm)]


@handles("Unsqueeze")
def _unsqueeze(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    axes = axes_of(node, p, 1, 13)
    if s is None or axes is None:
        return [None]
    rank = len(s) + len(axes)
    axes = sorted(a + rank if a < 0 else a for a in axes)
    out = list(s)
    for a in axes:
        out.insert(a, ONE)
    return [tuple(out)]


@handles("Squeeze")
def _squeeze(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    axes = axes_of(node, p, 1, 13)
    if axes is None:
        if node.input(1) is not None and not (isinstance(node.opset, int) and node.opset < 13):
            return [None]
        return [tuple(d for d in s if d != ONE)]
    axes = [a + len(s) if a < 0 else a for a in axes]
    return [tuple(d for i, d in enumerate(s) if i not in axes)]


@handles("Flatten")
def _flatten(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    axis = node.attr("axis", 1)
    axis = axis + len(s) if axis < 0 else axis
    return [(product(s[:axis]), product(s[axis:]))]


@handles("Gather")
def _gather(node: Node, p: ShapePass) -> list[SShape]:
    s, si = p.shape(node.input(0)), p.shape(node.input(1))
    if s is None or si is None:
        return [None]
    axis = node.attr("axis", 0)
    axis = axis + len(s) if axis < 0 else axis
    return [(*s[:axis], *si, *s[axis + 1:])]


@handles("GatherElements")
def _gather_elements(node: Node, p: ShapePass) -> list[SShape]:
    return [p.shape(node.input(1))]


def _slice_dim(d: SDim, start: int, end: int, step: int) -> SDim:
    if d is not None and d.is_const:
        n = d.value or 0
        return Poly.const(len(range(*slice(start, end, step).indices(n))))
    if d is None or step != 1:
        return None
    if start >= 0 and end >= INT_MAX:
        return d - Poly.const(start)
    if 0 <= start <= end < INT_MAX:
        return None  # depends on whether d >= end
    if start < 0 and end >= INT_MAX:
        return Poly.const(-start)  # assumes d >= -start
    if start >= 0 and end < 0:
        return d - Poly.const(start - end)
    return None


def _slice_symbolic_end(s: tuple[SDim, ...], starts: np.ndarray, ends: list[SDim] | None,
                        axes: np.ndarray | None, steps: np.ndarray | None) -> SShape:
    """x[0:e] with e a symbolic dim (position ids sliced to the sequence length): the result is e.

    Assumes e does not exceed the sliced dim, as onnxruntime's symbolic inference does.
    """
    if ends is None or len(ends) != len(starts):
        return None
    ax_list = [int(a) for a in axes] if axes is not None else list(range(len(starts)))
    out = list(s)
    for i, ax in enumerate(ax_list):
        ax = ax + len(s) if ax < 0 else ax
        st = int(starts[i])
        step = int(steps[i]) if steps is not None else 1
        e = ends[i]
        if e is None or step != 1 or st < 0:
            out[ax] = None
        elif e.is_const:
            out[ax] = _slice_dim(s[ax], st, e.value or 0, 1)
        else:
            out[ax] = e - Poly.const(st)
    return tuple(out)


@handles("Slice")
def _slice(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    if isinstance(node.opset, int) and node.opset < 10:
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    else:
        c = [p.f.const(node.input(i)) for i in range(1, 5)]
        if (node.input(3) is not None and c[2] is None) or (node.input(4) is not None and c[3] is None):
            return [None]
        if c[0] is not None and c[1] is None:
            return [_slice_symbolic_end(s, c[0], p.f.sval(node.input(2)), c[2], c[3])]
        if c[0] is None or c[1] is None:
            return [None]
        starts, ends = [int(x) for x in c[0]], [int(x) for x in c[1]]
        axes = [int(x) for x in c[2]] if c[2] is not None else None
        steps = [int(x) for x in c[3]] if c[3] is not None else None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    out = list(s)
    for st, en, ax, sp in zip(starts, ends, axes, steps, strict=False):
        ax = ax + len(s) if ax < 0 else ax
        out[ax] = _slice_dim(s[ax], st, en, sp)
    return [tuple(out)]


@handles("Tile")
def _tile(node: Node, p: ShapePass) -> list[SShape]:
    s, r = p.shape(node.input(0)), p.f.sval(node.input(1))
    if s is None or r is None or len(r) != len(s):
        return [None]
    return [tuple(None if a is None or b is None else a * b for a, b in zip(s, r, strict=True))]



@handles("Split")
def _split(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return []
    axis = node.attr("axis", 0)
    axis = axis + len(s) if axis < 0 else axis
    sizes = node.attr("split") if isinstance(node.opset, int) and node.opset < 13 else None
    if sizes is None and node.input(1) is not None:
        a = p.f.const(node.input(1))
        sizes = [int(x) for x in a] if a is not None else None
    n = len(node.outputs)
    if sizes is None:
        d = s[axis]
        part = d.floordiv(n) if d is not None else None
        sizes_p: list[SDim] = [part] * n
    else:
        sizes_p = [Poly.const(x) for x in sizes]
        if s[axis] is not None and all(x >= 0 for x in sizes):
            # the parts must add up to the dim (ONNX Split): constant sizes on a dynamic dim pin it (a
            # traced `features.split(1)` unrolled for batch 1: ORT fails at batch 2, OpenVINO keeps the first)
            p.agree(node, s[axis], Poly.const(sum(sizes)), node.input(0), node.input(1), axis, broadcast=False)
    return [(*s[:axis], sz, *s[axis + 1:]) for sz in sizes_p]



@handles("Pad")
def _pad(node: Node, p: ShapePass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    pads = node.attr("pads") if isinstance(node.opset, int) and node.opset < 11 else None
    if pads is None:
        a = p.f.const(node.input(1))
        if a is None or node.input(3) is not None:
            return [None]
        pads = [int(x) for x in a]
    n = len(s)
    return [tuple(None if d is None else d + Poly.const(pads[i] + pads[i + n]) for i, d in enumerate(s))]


