"""Numpy constant folding of small build-time constants (at most MAX_CONST elements)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphlint import dtypes
from graphlint.analysis.shapes.facts import MAX_CONST
from graphlint.analysis.shapes.handlers.registry import shape_range
from graphlint.ir import Node


def fold(node: Node, a: list[np.ndarray | None]) -> np.ndarray | None:
    op = node.op_type
    fn = FOLD.get(op)
    if fn is None:
        return None
    try:
        with np.errstate(all="ignore"):
            out = fn(node, a)
    except Exception:  # any malformed constant: not foldable, not our finding
        return None
    return None if out is None else np.asarray(out)


def _fold_cast(node: Node, a: list[Any]) -> np.ndarray | None:
    dt = dtypes.to_numpy(dtypes.onnx_dtype(node.attr("to", 0)) or "")
    return a[0].astype(dt) if dt is not None else None


def _fold_div(node: Node, a: list[Any]) -> np.ndarray:
    x, y = a[0], a[1]
    if x.dtype.kind in "iu":
        return np.trunc(x / y).astype(x.dtype)
    return x / y


def _fold_unsqueeze(node: Node, a: list[Any]) -> np.ndarray | None:
    axes = node.attr("axes") if isinstance(node.opset, int) and node.opset < 13 else (
        [int(x) for x in a[1].reshape(-1)] if len(a) > 1 and a[1] is not None else None)
    if axes is None:
        return None
    x = a[0]
    rank = x.ndim + len(axes)
    for ax in sorted(ax + rank if ax < 0 else ax for ax in axes):
        x = np.expand_dims(x, ax)
    return x


def _fold_squeeze(node: Node, a: list[Any]) -> np.ndarray | None:
    axes = node.attr("axes") if isinstance(node.opset, int) and node.opset < 13 else (
        [int(x) for x in a[1].reshape(-1)] if len(a) > 1 and a[1] is not None else None)
    return np.squeeze(a[0], axis=tuple(axes) if axes else None)


def _fold_slice(node: Node, a: list[Any]) -> np.ndarray | None:
    if isinstance(node.opset, int) and node.opset < 10:
        return None
    x, starts, ends = a[0], a[1], a[2]
    axes = a[3] if len(a) > 3 and a[3] is not None else range(len(starts))
    steps = a[4] if len(a) > 4 and a[4] is not None else [1] * len(starts)
    idx = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=False):
        idx[int(ax)] = slice(int(s), int(min(e, 2**62)) if e > 0 else int(e), int(st))
    return x[tuple(idx)]


def _fold_reshape(node: Node, a: list[Any]) -> np.ndarray:
    shape = [int(d) for d in a[1]]
    shape = [a[0].shape[i] if d == 0 and not node.attr("allowzero", 0) else d for i, d in enumerate(shape)]
    return a[0].reshape(shape)


def _fold_cos(node: Node, a: list[Any]) -> np.ndarray | None:
    shape = [int(d) for d in a[0].reshape(-1)]
    if int(np.prod(shape)) > MAX_CONST:
        return None
    val = node.attr("value")
    base = val.numpy().reshape(-1)[:1] if val is not None else np.zeros(1, np.float32)
    return np.full(shape, base[0], dtype=base.dtype)


FOLD: dict[str, Callable[[Node, list[Any]], np.ndarray | None]] = {
    "Identity": lambda n, a: a[0],
    "Add": lambda n, a: a[0] + a[1],
    "Sub": lambda n, a: a[0] - a[1],
    "Mul": lambda n, a: a[0] * a[1],
    "Div": _fold_div,
    "Neg": lambda n, a: -a[0],
    "Sqrt": lambda n, a: np.sqrt(a[0]),
    "Reciprocal": lambda n, a: 1 / a[0],
    "Pow": lambda n, a: np.power(a[0], a[1]).astype(a[0].dtype),
    "Equal": lambda n, a: np.equal(a[0], a[1]),
    "Less": lambda n, a: np.less(a[0], a[1]),
    "Greater": lambda n, a: np.greater(a[0], a[1]),
    "Not": lambda n, a: np.logical_not(a[0]),
    "Where": lambda n, a: np.where(a[0], a[1], a[2]),
    "Cast": _fold_cast,
    "Concat": lambda n, a: np.concatenate(a, axis=n.attr("axis", 0)),
    "Gather": lambda n, a: np.take(a[0], a[1], axis=n.attr("axis", 0)),
    "Unsqueeze": _fold_unsqueeze,
    "Squeeze": _fold_squeeze,
    "Reshape": _fold_reshape,
    "Slice": _fold_slice,
    "Shape": lambda n, a: np.array(a[0].shape[slice(*shape_range(n, a[0].ndim))], np.int64),
    "Size": lambda n, a: np.array(a[0].size, np.int64),
    "Transpose": lambda n, a: np.transpose(a[0], n.attr("perm")),
    "ConstantOfShape": _fold_cos,
    "Range": lambda n, a: np.arange(a[0], a[1], a[2]) if abs((a[1] - a[0]) / a[2]) <= MAX_CONST else None,
    "And": lambda n, a: np.logical_and(a[0], a[1]),
    "Or": lambda n, a: np.logical_or(a[0], a[1]),
    "Xor": lambda n, a: np.logical_xor(a[0], a[1]),
    "LessOrEqual": lambda n, a: np.less_equal(a[0], a[1]),
    "GreaterOrEqual": lambda n, a: np.greater_equal(a[0], a[1]),
    "Mod": lambda n, a: np.fmod(a[0], a[1]) if n.attr("fmod", 0) else np.mod(a[0], a[1]),
    "Abs": lambda n, a: np.abs(a[0]),
    "Floor": lambda n, a: np.floor(a[0]),
    "Ceil": lambda n, a: np.ceil(a[0]),
    "Expand": lambda n, a: a[0] * np.ones([int(d) for d in a[1]], a[0].dtype)
    if int(np.prod([int(d) for d in a[1]])) <= MAX_CONST else None,
    "Max": lambda n, a: np.maximum.reduce(a),
    "Min": lambda n, a: np.minimum.reduce(a),
}


