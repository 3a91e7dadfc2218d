"""Which values an engine that merges If branches sees with a dynamic rank (checker ``static_rank``).

OpenVINO's ONNX frontend builds an ``If`` for every ONNX If and infers its output shapes the way
``ov::op::v8::If`` does: when the condition folds to a constant (OpenVINO folds through interval
bounds of dims, ``get_constant_from_source``) the output takes the taken branch's shape; otherwise
the two branches' shapes are merged, and branches of different rank give an output of *dynamic
rank*. Translators such as Conv then refuse the node ("The input data tensor's rank has to be known
(static)", conv.cpp). graphlint claims a dynamic rank only where it can show both premises:

* the condition cannot fold: it reads a graph input's data, the shape of a value of dynamic rank,
  or compares (Equal) a dim with a constant at or above the dim's lower bound (OpenVINO's dims from
  ``?`` inputs are intervals ``[lo, inf)``; Equal folds only when the constant is outside them). The
  lower bound is over-estimated here (``dim_floor``), so a claim holds for OpenVINO's own bound;
* the branches' ranks differ (both known), or a branch is itself of dynamic rank.

Anything it cannot follow is "not shown" (None), never dynamic.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from graphlint.analysis.shapes import ShapeFacts
from graphlint.analysis.support.common import outer_value
from graphlint.ir import Node, Value

DYNAMIC = "dynamic"
Rank = int | str | None  # an int, DYNAMIC, or None (not shown)

# Ops whose output has the rank of input 0 (elementwise, casts): a dynamic rank passes through.
_SAME_RANK = frozenset({
    "Identity", "Cast", "CastLike", "Relu", "Sigmoid", "Tanh", "Sqrt", "Exp", "Log", "Abs", "Neg", "Not",
    "Floor", "Ceil", "Round", "Sign", "Erf", "Softplus", "LeakyRelu", "Elu", "Selu", "HardSigmoid", "Clip",
    "Dropout", "Reciprocal", "Sin", "Cos", "Softmax", "LogSoftmax", "Gelu", "HardSwish", "Mish",
})
_BROADCAST = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Greater", "Less", "And", "Or",
                        "Where"})
_RESHAPE_VIEW = frozenset({"Identity", "Cast", "Squeeze", "Unsqueeze", "Reshape", "Not", "Flatten"})
_POOLS = frozenset({"Conv", "MaxPool", "AveragePool"})


class _Walk:
    """One question's walk over the graph; results memoized per value (graphs share subexpressions).

    ``shapes`` (the symbolic shape analysis, when the caller has it) tells dims that ONNX inference
    left unknown, such as those of a Reshape to a computed shape. ``empty_scalar_ranks``: the ranks
    at which the release's frontend makes an empty constant a scalar (2026.4: 1 to 8, 2024.6: 1),
    probed by the table's generator."""

    def __init__(self, shapes: ShapeFacts | None = None, empty_scalar_ranks: Collection[int] = ()) -> None:
        self.ranks: dict[int, Rank] = {}
        self.floors: dict[tuple[int, int], int | None] = {}
        self.shapes = shapes
        self.empty_scalar_ranks = frozenset(empty_scalar_ranks)

    def engine_rank(self, v: Value | None, depth: int = 64) -> Rank:
        if v is None or depth <= 0:
            return None
        v = outer_value(v)
        if id(v) not in self.ranks:
            self.ranks[id(v)] = None  # a cycle (malformed graph) ends as "not shown"
            self.ranks[id(v)] = self._rank(v, depth)
        return self.ranks[id(v)]

    def _rank(self, v: Value, depth: int) -> Rank:
        p = v.producer
        if v.rank in self.empty_scalar_ranks and (
                (p is None and v.const is not None) or (p is not None and p.op_type == "Constant")):
            value = folded(v)
            if value is not None and value.size == 0:
                return 0  # 2026.4 makes a (0, 4, 1, 8) constant []
        if p is None:
            return v.rank
        if p.op_type == "If":
            return self._if_rank(p, p.outputs.index(v), depth - 1)
        ins = [i for i in p.inputs if i is not None and i.name]
        if not ins or not (p.op_type in _SAME_RANK or p.op_type in ("Squeeze", "Unsqueeze") or p.op_type in _BROADCAST):
            return v.rank
        ranks = [self.engine_rank(i, depth - 1) for i in (ins if p.op_type in _BROADCAST else ins[:1])]
        if DYNAMIC in ranks:
            return DYNAMIC
        if v.rank is not None or None in ranks:
            return v.rank
        if p.op_type in _BROADCAST:
            return max(r for r in ranks if isinstance(r, int))
        if p.op_type in _SAME_RANK:
            return ranks[0]
        axes = p.attrs.get("axes")
        if axes is None and len(p.inputs) > 1:
            val = folded(p.input(1))
            axes = None if val is None else val.reshape(-1).tolist()
        if axes is None:  # Squeeze without axes drops the dims of size 1, unknown here
            return None
        return ranks[0] + (len(axes) if p.op_type == "Unsqueeze" else -len(axes))

    def _if_rank(self, node: Node, k: int, depth: int) -> Rank:
        then_g, else_g = node.subgraphs.get("then_branch"), node.subgraphs.get("else_branch")
        if then_g is None or else_g is None or k >= min(len(then_g.outputs), len(else_g.outputs)):
            return None
        a, b = self.engine_rank(then_g.outputs[k], depth), self.engine_rank(else_g.outputs[k], depth)
        cond = node.input(0)
        taken = folded(cond)
        if taken is not None and taken.size == 1:  # folds: the taken branch (sound either way, see module doc)
            return a if bool(taken.reshape(-1)[0]) else b
        if a == b:
            return a
        if cond is not None and self.cannot_fold(cond, depth) and (DYNAMIC in (a, b) or (a is not None and b is not None)):
            return DYNAMIC
        return None

    def cannot_fold(self, c: Value, depth: int = 32) -> bool:
        c = _through(c, _RESHAPE_VIEW)
        p = c.producer
        if p is None:
            return _is_graph_input(c)
        if p.op_type in ("Size", "Shape"):
            return self._length_unknown(p.input(0), depth)
        if p.op_type not in ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual") or len(p.inputs) != 2:
            return False
        x, y = p.inputs
        if x is None or y is None:
            return False
        cx, cy = folded(x), folded(y)
        if cx is None and cy is None:  # two run-time dims: intervals [lo, inf) overlap, so bounds never fold
            return all(self._dynamic_dim(_through(i, _RESHAPE_VIEW), depth) for i in (x, y))
        side, const = (y, cx) if cx is not None else (x, cy)
        if const.size != 1:
            return False
        side = _through(side, _RESHAPE_VIEW)
        if _is_graph_input(side):  # run-time data: its bounds are the type's whole range
            return True
        q = side.producer
        if q is None:
            return False
        if q.op_type in ("Size", "Shape"):
            return self._length_unknown(q.input(0), depth)
        if p.op_type == "Equal" and q.op_type == "Gather" and q.input(0) is not None:
            shp = _through(q.input(0), frozenset({"Identity"}))
            idx = folded(q.input(1)) if q.input(1) is not None else None
            if shp.producer is None or shp.producer.op_type != "Shape" or idx is None or idx.size != 1:
                return False
            src = shp.producer.input(0)
            if self.engine_rank(src, depth) == DYNAMIC:
                return True
            floor = self.dim_floor(src, int(idx.reshape(-1)[0]), depth)
            return floor is not None and int(const.reshape(-1)[0]) >= floor
        return False

    def _dynamic_dim(self, side: Value, depth: int) -> bool:
        """``side`` is one dim of a value (``Gather(Shape(x), i)``, or a one-element ``Slice`` of the
        Shape: what torch exports ``x.size(-2)`` as) whose engine bounds stay open above."""
        q = side.producer
        if q is None or q.op_type not in ("Gather", "Slice") or q.input(0) is None:
            return False
        shp = _through(q.input(0), frozenset({"Identity"}))
        if shp.producer is None or shp.producer.op_type != "Shape" or shp.producer.attrs.get("start"):
            return False
        if q.op_type == "Gather":
            idx = folded(q.input(1)) if q.input(1) is not None else None
            if idx is None or idx.size != 1:
                return False
            axis = int(idx.reshape(-1)[0])
        else:
            starts, ends = (folded(q.input(i)) if q.input(i) is not None else None for i in (1, 2))
            if starts is None or ends is None or starts.size != 1 or ends.size != 1:
                return False
            start, end = int(starts.reshape(-1)[0]), int(ends.reshape(-1)[0])
            if end != start + 1 and not (start == -1 and end >= 2**30):
                return False
            axis = start
        src = outer_value(shp.producer.input(0))
        if self.engine_rank(src, depth) == DYNAMIC or self.dim_floor(src, axis, depth) is not None:
            return True
        dims = self.shapes.shapes.get(src) if self.shapes is not None and src.shape is None else None
        if dims is None or not -len(dims) <= axis < len(dims) or dims[axis] is None:
            return False
        # a dim that grows with a dynamic input dim: the engine's bounds for it are open above
        d = dims[axis]
        return not d.is_const and all(c > 0 for mono, c in d.terms if mono)

    def _length_unknown(self, v: Value | None, depth: int) -> bool:
        """``v`` is of dynamic rank, or the shape of such a value (a 1-D tensor of dynamic length):
        neither its Shape nor its Size folds."""
        if v is None:
            return False
        if self.engine_rank(v, depth) == DYNAMIC:
            return True
        p = outer_value(v).producer
        return p is not None and p.op_type == "Shape" and self.engine_rank(p.input(0), depth) == DYNAMIC

    def dim_floor(self, v: Value | None, axis: int, depth: int = 32) -> int | None:
        if v is None or depth <= 0:
            return None
        v = outer_value(v)
        key = (id(v), axis)
        if key not in self.floors:
            self.floors[key] = None
            self.floors[key] = self._floor(v, axis, depth)
        return self.floors[key]

    def _floor(self, v: Value, axis: int, depth: int) -> int | None:
        if self.engine_rank(v, depth) == DYNAMIC:
            return 0
        rank = v.rank
        if rank is None or not -rank <= axis < rank:
            return None
        axis %= rank
        if isinstance(v.shape[axis], int):
            return None  # static
        p = v.producer
        if p is None:
            return 0 if _is_graph_input(v) else None
        op, x = p.op_type, _in(p, 0)
        if op in _SAME_RANK:
            return self.dim_floor(x, axis, depth - 1)
        if op in _BROADCAST:
            return self._broadcast_floor(p, v, axis, depth)
        if op in _POOLS:
            return self._pool_floor(p, x, axis, depth)
        if op == "Pad":
            pads = folded(p.input(1)) if p.input(1) is not None else None
            lo = self.dim_floor(x, axis, depth - 1)
            if pads is None or lo is None or x is None or x.rank is None or pads.size != 2 * x.rank:
                return None
            pads = pads.reshape(-1)
            return lo + max(0, int(pads[axis])) + max(0, int(pads[axis + x.rank]))
        if op == "Concat":
            return self._concat_floor(p, axis, depth)
        if op == "Slice" and _slices_open_end(p, axis):
            return self.dim_floor(x, axis, depth - 1)  # out = d - start (- k): no more than d, unbounded
        if op in ("Unsqueeze", "Squeeze", "Transpose", "Slice"):
            src = _source_axis(p, axis, rank)
            return None if src is None else self.dim_floor(x, src, depth - 1)
        if op in ("LSTM", "GRU", "RNN") and p.outputs.index(v) in (1, 2) and axis == 1 \
                and not p.attrs.get("layout"):
            floors = [self.dim_floor(i, 1, depth - 1) for i in (x, _in(p, 5), _in(p, 6)) if i is not None]
            return None if not floors or None in floors else max(f for f in floors if f is not None)
        return None

    def _broadcast_floor(self, p: Node, v: Value, axis: int, depth: int) -> int | None:
        floors = []
        back = v.rank - axis  # the axis counted from the right
        for i in map(outer_value, filter(None, p.inputs)):
            if not i.name:
                continue
            r = i.rank
            if r is None:
                return None
            if back > r:
                continue
            d = i.shape[r - back]
            if d == 1:
                continue
            if isinstance(d, int):
                return None  # the engine takes the static dim
            f = self.dim_floor(i, r - back, depth - 1)
            if f is None:
                return None
            floors.append(f)
        return max(floors) if floors else None

    def _pool_floor(self, p: Node, x: Value | None, axis: int, depth: int) -> int | None:
        if axis == 0:
            return self.dim_floor(x, 0, depth - 1)
        if axis == 1 or x is None or x.rank is None:
            return None
        s = axis - 2
        lo = self.dim_floor(x, axis, depth - 1)
        kernel = p.attrs.get("kernel_shape")
        w = _in(p, 1)
        if kernel is None and p.op_type == "Conv" and w is not None and w.shape:
            kernel = w.shape[2:]
        if lo is None or not kernel or s >= len(kernel) or not isinstance(kernel[s], int):
            return None
        n = len(kernel)
        stride = (p.attrs.get("strides") or [1] * n)[s]
        dil = (p.attrs.get("dilations") or [1] * n)[s]
        auto = p.attrs.get("auto_pad", "NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            return max(1, -(-lo // stride))
        pads = p.attrs.get("pads") or [0] * (2 * n)
        if auto == "VALID":
            pads = [0] * (2 * n)
        span = lo + pads[s] + pads[s + n] - dil * (kernel[s] - 1) - 1
        # ceil over-estimates floor: safe for an upper estimate of the engine's lower bound
        return max(1, -(-span // stride) + 1)

    def _concat_floor(self, p: Node, axis: int, depth: int) -> int | None:
        cat = p.attrs.get("axis", 0)
        total, floors = 0, []
        for i in (None if i is None else outer_value(i) for i in p.inputs):
            if i is None or not i.name or i.rank is None:
                return None
            if cat % i.rank == axis:
                d = i.shape[axis]
                f = d if isinstance(d, int) else self.dim_floor(i, axis, depth - 1)
                if f is None:
                    return None
                total += f
            else:
                if isinstance(i.shape[axis], int):
                    return None
                f = self.dim_floor(i, axis, depth - 1)
                if f is None:
                    return None
                floors.append(f)
        return total if cat % (p.outputs[0].rank or 1) == axis else (max(floors) if floors else None)


def engine_rank(v: Value | None, shapes: ShapeFacts | None = None, empty_scalar_ranks: Collection[int] = ()) -> Rank:
    """The rank the engine infers for ``v``: an int, DYNAMIC (shown), or None (not shown)."""
    return _Walk(shapes, empty_scalar_ranks).engine_rank(v)


def cannot_fold(c: Value) -> bool:
    """Whether the engine cannot fold the (boolean) value ``c`` to a constant (shown)."""
    return _Walk().cannot_fold(c)


def dim_floor(v: Value | None, axis: int) -> int | None:
    """An upper estimate of the engine's lower bound for dim ``axis`` of ``v``, shown unbounded
    above (it derives from a dynamic graph-input dim); None where not shown."""
    return _Walk().dim_floor(v, axis)


def _slices_open_end(p: Node, axis: int) -> bool:
    """A Slice (opset 10+) over ``axis`` with step 1, start >= 0 and an end from the back or past any
    length: its output dim grows with the input's, never above it."""
    x = p.input(0)
    vals = [folded(p.input(i)) if p.input(i) is not None and p.input(i).name else None for i in range(1, 5)]
    starts, ends, axes, steps = vals
    if x is None or x.rank is None or starts is None or ends is None or (p.input(3) is not None and axes is None):
        return False
    axes = np.arange(len(starts.reshape(-1))) if axes is None else axes.reshape(-1) % x.rank
    hit = [j for j, a in enumerate(axes.tolist()) if a == axis]
    if len(hit) != 1:
        return False
    j = hit[0]
    step = 1 if steps is None else int(steps.reshape(-1)[j])
    start, end = int(starts.reshape(-1)[j]), int(ends.reshape(-1)[j])
    return step == 1 and start >= 0 and (end < 0 or end >= 2**30)


def _source_axis(p: Node, axis: int, rank: int) -> int | None:
    """The input axis an output axis of Unsqueeze / Squeeze / Transpose / Slice comes from."""
    x = _in(p, 0)
    if x is None or x.rank is None:
        return None
    if p.op_type == "Transpose":
        perm = p.attrs.get("perm") or list(range(rank))[::-1]
        return int(perm[axis])
    if p.op_type == "Slice":
        axes = folded(p.input(3)) if p.input(3) is not None and p.input(3).name else np.arange(x.rank)
        return None if axes is None or axis in {int(a) % x.rank for a in axes.reshape(-1)} else axis
    raw = p.attrs.get("axes")
    if raw is None and p.input(1) is not None and p.input(1).name:
        raw = folded(p.input(1))
        raw = None if raw is None else raw.reshape(-1).tolist()
    if raw is None:
        return None
    if p.op_type == "Unsqueeze":
        added = {int(a) % rank for a in raw}
        return None if axis in added else axis - sum(1 for a in added if a < axis)
    removed = sorted(int(a) % x.rank for a in raw)
    src = axis
    for a in removed:
        if a <= src:
            src += 1
    return src


def folded(v: Value | None, depth: int = 12) -> np.ndarray | None:
    """The numpy value of ``v`` when it is a build-time constant small enough to fold, else None."""
    from graphlint.analysis.shapes.fold import fold

    if v is None or not v.name or depth <= 0:
        return None
    v = outer_value(v)
    if v.const is not None:
        try:
            return v.const.numpy() if v.const.size <= 4096 else None
        except Exception:  # unreadable external data: GL0005 reports it
            return None
    p = v.producer
    if p is None or p.subgraphs or (p.op_type == "Shape" and not _static(p.input(0))):
        return None
    if p.op_type == "Gather" and p.input(0) is not None and outer_value(p.input(0)).producer is not None \
            and outer_value(p.input(0)).producer.op_type == "Shape" \
            and not outer_value(p.input(0)).producer.attrs.get("start"):
        dims, idx = outer_value(outer_value(p.input(0)).producer.input(0)).shape, folded(p.input(1), depth - 1)
        if dims is None or idx is None or any(not -len(dims) <= int(i) < len(dims) for i in idx.reshape(-1)):
            return None
        picked = [dims[int(i)] for i in idx.reshape(-1)]
        if not all(isinstance(d, int) for d in picked):
            return None
        return np.array(picked, dtype=np.int64).reshape(idx.shape)
    if p.op_type == "Shape":
        dims = p.input(0).shape
        return np.array(dims[p.attrs.get("start", 0):p.attrs.get("end", len(dims))], dtype=np.int64)
    args: list[Any] = []
    for i in p.inputs:
        val = None if i is None or not i.name else folded(i, depth - 1)
        if i is not None and i.name and val is None:
            return None
        args.append(val)
    out = fold(p, args)
    return out if out is not None and len(p.outputs) == 1 else None


def _in(p: Node, i: int) -> Value | None:
    v = p.input(i)
    return None if v is None or not v.name else outer_value(v)


def _static(v: Value | None) -> bool:
    return v is not None and v.shape is not None and all(isinstance(d, int) for d in v.shape)


def _through(v: Value, ops: frozenset[str]) -> Value:
    v = outer_value(v)
    while v.producer is not None and v.producer.op_type in ops and v.producer.input(0) is not None:
        v = outer_value(v.producer.input(0))
    return v


def _is_graph_input(v: Value) -> bool:
    v = outer_value(v)
    return v.producer is None and v.is_input and v.const is None and v.graph.owner is None
