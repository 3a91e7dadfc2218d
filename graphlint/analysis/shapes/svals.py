"""Shape values: 1-D int tensors tracked element by element (the shape tensors TensorRT talks about).

Each op here gives its output's elements as dims from its inputs' (Shape of a tensor, Gather
of a shape, Concat, arithmetic...), so a Reshape target built from ``Shape`` is known symbolically.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphlint.analysis.shapes.facts import MAX_SVAL, SDim
from graphlint.analysis.shapes.handlers.registry import ShapePass, shape_range
from graphlint.analysis.symbolic import Poly, product
from graphlint.ir import Node


def _sv_shape(node: Node, p: ShapePass) -> list[SDim] | None:
    s = p.shape(node.input(0))
    if s is None:
        return None
    lo, hi = shape_range(node, len(s))
    return list(s[lo:hi])


def _sv_gather(node: Node, p: ShapePass) -> list[SDim] | None:
    data, idx = p.f.sval(node.input(0)), p.f.const(node.input(1))
    if data is None or idx is None or node.attr("axis", 0) != 0:
        return None
    n = len(data)
    return [data[int(i) + n if i < 0 else int(i)] for i in idx.reshape(-1).tolist()]


def _sv_concat(node: Node, p: ShapePass) -> list[SDim] | None:
    out: list[SDim] = []
    for v in node.inputs:
        s = p.f.sval(v)
        if s is None:
            return None
        out.extend(s)
    return out


def _sv_pass(node: Node, p: ShapePass) -> list[SDim] | None:
    return p.f.sval(node.input(0))


def _sv_slice(node: Node, p: ShapePass) -> list[SDim] | None:
    data = p.f.sval(node.input(0))
    c = [p.f.const(node.input(i)) for i in range(1, 5)]
    if data is None or c[0] is None or c[1] is None:
        return None
    step = int(c[3][0]) if c[3] is not None else 1
    return data[int(c[0][0]):int(min(c[1][0], len(data) + 1)) if c[1][0] >= 0 else int(c[1][0]):step]


def _sv_arith(node: Node, p: ShapePass) -> list[SDim] | None:
    a, b = p.f.sval(node.input(0)), p.f.sval(node.input(1))
    if a is None or b is None:
        return None
    if len(a) == 1 and len(b) > 1:
        a = a * len(b)
    if len(b) == 1 and len(a) > 1:
        b = b * len(a)
    if len(a) != len(b):
        return None
    out: list[SDim] = []
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            out.append(None)
        elif node.op_type == "Add":
            out.append(x + y)
        elif node.op_type == "Sub":
            out.append(x - y)
        elif node.op_type == "Mul":
            out.append(x * y)
        elif node.op_type == "Div":
            out.append(x.floordiv(y.value) if y.is_const and y.value else x.div_exact(y))
        else:
            out.append(None)
    return out


def _sv_where(node: Node, p: ShapePass) -> list[SDim] | None:
    cond = p.f.const(node.input(0))
    if cond is None:
        c = _sv_equal(node.input(0).producer, p) if node.input(0) and node.input(0).producer else None
        if c is None:
            return None
        cond = np.array(c)
    x, y = p.f.sval(node.input(1)), p.f.sval(node.input(2))
    if x is None or y is None:
        return None
    cond = cond.reshape(-1)
    n = max(len(cond), len(x), len(y))
    pick = [(x[i % len(x)] if bool(cond[i % len(cond)]) else y[i % len(y)]) for i in range(n)]
    return pick


def _sv_equal(node: Node, p: ShapePass) -> list[bool] | None:
    if node.op_type != "Equal":
        return None
    a, b = p.f.sval(node.input(0)), p.f.sval(node.input(1))
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    out = []
    for i in range(n):
        x, y = a[i % len(a)], b[i % len(b)]
        if x is None or y is None:
            return None
        if x == y:
            out.append(True)
        elif x.is_const and y.is_const:
            out.append(False)
        elif (y.is_const and (y.value or 0) < 0) or (x.is_const and (x.value or 0) < 0):
            out.append(False)  # a dim is never negative (the -1 test torch emits)
        else:
            return None
    return out


def _sv_reduce_prod(node: Node, p: ShapePass) -> list[SDim] | None:
    a = p.f.sval(node.input(0))
    return None if a is None else [product(a)]


def _sv_cos(node: Node, p: ShapePass) -> list[SDim] | None:
    t = p.f.sval(node.input(0))
    val = node.attr("value")
    if t is None or len(t) != 1 or t[0] is None or val is None:
        return None
    try:
        v = val.numpy().reshape(-1)
    except Exception:
        return None
    if v.dtype.kind not in "iu" or not v.size:
        return None
    return [Poly.const(int(v[0]))] * t[0].value if t[0].is_const and (t[0].value or 0) <= MAX_SVAL else None


SVAL_OPS: dict[str, Callable[[Node, ShapePass], list[SDim] | None]] = {
    "Shape": _sv_shape, "Gather": _sv_gather, "Concat": _sv_concat, "Unsqueeze": _sv_pass, "Squeeze": _sv_pass,
    "Cast": _sv_pass, "Identity": _sv_pass, "Reshape": _sv_pass, "Slice": _sv_slice, "Add": _sv_arith,
    "Sub": _sv_arith, "Mul": _sv_arith, "Div": _sv_arith, "Where": _sv_where, "ReduceProd": _sv_reduce_prod,
    "ConstantOfShape": _sv_cos,
}


