"""Synthetic inputs that keep each input's contract, so a failure is the model's and not the feed's.

What an input is follows from its dtype, its name and how the graph uses it:

- token ids: integers below the row count of the embedding table they index (followed through
  Cast / Reshape / Unsqueeze ... to a Gather on a constant table);
- masks: ones, every odd row of a batch right-padded by a quarter (a batch of unequal sentences);
- positions: ``past, past + 1, ...`` along the sequence (``position_ids``, ``cache_position``);
- KV caches: normal values, their length the ``past`` the point sets (the mask then spans past + new);
- images: the range the graph expects: what ``--input-range`` says, else 0..255 where the graph
  divides by 255 itself (and for uint8), [0, 1) where it subtracts a [0, 1] mean itself, else N(0, 1)
  (a processor's normalized output);
- other integers: below the table they index, else 0..7; booleans: True for masks and the
  ``use_cache_branch`` of a merged decoder with a past, else random; a boolean given a range
  (``--input-range use_cache_branch:0,0``) takes it, as numbers do.

Values are drawn from one seeded generator per point, so every engine is fed the same arrays.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from graphlint.analysis.inputs import channel_axis, preprocess_chain
from graphlint.ir import Model, Node, Value

PASS = frozenset({"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Convert"})
# Operand positions whose values set a shape, a size, axes or indices into a value the graph computes:
# a random array there tests the feed, not the model, so such an input is not generated (the plan
# says so) unless its values are given (--input-range). Found on the ONNX backend node tests, where
# random values there failed 400-odd cases that run on their own data.
_REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
           "ReduceLogSumExp", "ReduceSumSquare")
SHAPE_OPERANDS: dict[str, frozenset[int]] = {
    **{op: frozenset({1}) for op in _REDUCE},
    "Reshape": frozenset({1}), "Expand": frozenset({1}), "Tile": frozenset({1}), "Slice": frozenset({1, 2, 3, 4}),
    "ConstantOfShape": frozenset({0}), "Range": frozenset({0, 1, 2}), "OneHot": frozenset({1}),
    "TopK": frozenset({1}), "Pad": frozenset({1, 3}), "Resize": frozenset({1, 2, 3}), "Upsample": frozenset({1}),
    "Squeeze": frozenset({1}), "Unsqueeze": frozenset({1}), "Split": frozenset({1}), "AffineGrid": frozenset({1}),
    "BlackmanWindow": frozenset({0}), "HannWindow": frozenset({0}), "HammingWindow": frozenset({0}),
    "CenterCropPad": frozenset({1}), "Col2Im": frozenset({1, 2}), "DFT": frozenset({1, 2}), "STFT": frozenset({1, 3}),
    "MelWeightMatrix": frozenset({0, 1, 2}), "Trilu": frozenset({1}), "CumSum": frozenset({1}),
    "CumProd": frozenset({1}), "Compress": frozenset({1}), "ReverseSequence": frozenset({1}),
    "NonMaxSuppression": frozenset({2, 3, 4}), "MaxUnpool": frozenset({1, 2}), "RoiAlign": frozenset({2}),
    "Gather": frozenset({1}), "GatherElements": frozenset({1}), "GatherND": frozenset({1}),
    "Scatter": frozenset({1}), "ScatterElements": frozenset({1}), "ScatterND": frozenset({1}),
    "TensorScatter": frozenset({2}), "ArrayFeatureExtractor": frozenset({1}), "NegativeLogLikelihoodLoss": frozenset({1}),
    "SoftmaxCrossEntropyLoss": frozenset({1}), "Dropout": frozenset({1, 2}),
}
_POSITIONS = re.compile(r"position_ids|cache_position|position", re.I)
_MASK = re.compile(r"mask", re.I)
_PAST = re.compile(r"past|cache|present", re.I)


@dataclass(frozen=True)
class Contract:
    """What one graph input must be fed."""

    kind: str  # ids | mask | positions | past | image | float | int | bool | branch | string | shape
    dtype: str
    low: float = 0.0
    high: float = 1.0  # exclusive for integers


def contracts(model: Model, consts, ranges: dict[str, list[float]] | None = None) -> dict[str, Contract]:
    """Each fed input's contract; ``consts(value)`` gives a constant's data (the shape analysis's reader)."""
    out: dict[str, Contract] = {}
    for v in model.graph.inputs:
        if v.const is not None:
            continue
        out[v.name] = _contract(v, consts, (ranges or {}).get(v.name))
    return out


def _contract(v: Value, consts, given: list[float] | None) -> Contract:
    dt = v.dtype or "float32"
    name = v.name
    if dt == "string":
        return Contract("string", dt)
    if dt == "bool":
        if given is not None:  # what the feeder said (--input-range use_cache_branch:0,0): 0 false, 1 true
            return Contract("bool", dt, int(bool(given[0])), int(bool(given[1])) + 1)
        if name == "use_cache_branch":
            return Contract("branch", dt)
        return Contract("mask", dt) if _MASK.search(name) else Contract("bool", dt, 0, 2)
    is_float = dt.startswith(("float", "bfloat"))
    if given is not None:
        return Contract("image" if is_float else "int", dt, given[0], given[1] if is_float else given[1] + 1)
    role = operand_role(v)
    if role == "shape" and not table_rows(v, consts):
        return Contract("shape", dt)
    if role == "divisor" and not is_float:
        return Contract("int", dt, 1, 8)  # an integer Div / Mod by zero fails on every engine
    if is_float:
        if _PAST.search(name) and v.rank in (3, 4, 5):
            return Contract("past", dt)
        if _MASK.search(name):
            return Contract("mask", dt)
        image, _ = channel_axis(v.shape)
        if image:
            chain = preprocess_chain(v, consts)
            if chain.scale_255() is not None:
                return Contract("image", dt, 0.0, 255.0)
            if chain.unit_normalization() is not None:
                return Contract("image", dt, 0.0, 1.0)
            return Contract("float", dt)
        return Contract("float", dt)
    if dt == "uint8" and channel_axis(v.shape)[0]:
        return Contract("image", dt, 0, 256)
    rows = table_rows(v, consts)
    if _MASK.search(name):
        return Contract("mask", dt)
    if _POSITIONS.search(name):
        return Contract("positions", dt, 0, rows or 0)
    if rows:
        return Contract("ids", dt, 0, rows)
    lo = -8 if dt == "int8" else 0
    return Contract("int", dt, lo, 8)


def _uses(v: Value, through: Callable[[list[int]], bool]) -> Iterator[tuple[Node, list[int]]]:
    """Each consumer of ``v``, or of what shape-only ops (PASS) make of it, with the input positions
    it takes that value at; a PASS node is followed instead when ``through(positions)`` holds."""
    stack, seen = [v], set()
    while stack:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        for n in cur.consumers:
            idx = [i for i, x in enumerate(n.inputs) if x is cur]
            if n.op_type in PASS and through(idx):
                stack.extend(o for o in n.outputs if o is not None)
            else:
                yield n, idx


def operand_role(v: Value) -> str | None:
    """"shape" where ``v`` (through shape-only ops) is an operand of SHAPE_OPERANDS, "divisor" where it
    divides (Div, Mod input 1), else None."""
    role = None
    for n, idx in _uses(v, lambda idx: idx == [0]):  # a Reshape fed v twice reads it as a shape too
        if n.domain in ("", "ai.onnx") and any(i in SHAPE_OPERANDS.get(n.op_type, ()) for i in idx):
            return "shape"
        if n.op_type in ("Div", "Mod") and idx == [1]:
            role = "divisor"
    return role


def table_rows(v: Value, consts) -> int | None:
    """Rows of the smallest constant table ``v`` indexes (a Gather's indices, through shape-only ops)."""
    best: int | None = None
    for n, idx in _uses(v, lambda idx: 0 in idx):
        if n.op_type == "Gather" and 1 in idx and n.inputs[0] is not None:
            table = n.inputs[0]
            axis = int(n.attr("axis", 0) or 0) if n.dialect == "onnx" else 0
            shape = table.shape if _constant(table, consts) else None
            if shape and isinstance(shape[axis], int):
                best = shape[axis] if best is None else min(best, shape[axis])
    return best


def _constant(v: Value, consts) -> bool:
    """A constant, or a weight dequantized / cast from one (a quantized model's embedding table)."""
    for _ in range(4):
        if v.const is not None or consts(v) is not None:
            return True
        p = v.producer
        if p is None or p.op_type not in ("DequantizeLinear", "Cast", "Identity", "Convert") or not p.inputs \
                or p.inputs[0] is None:
            return False
        v = p.inputs[0]
    return False


def generate(c: Contract, shape: tuple[int, ...], rng: np.random.Generator, past: int) -> np.ndarray:
    """An array of ``shape`` that keeps contract ``c`` (``past``: the KV length of this point)."""
    dt = np.dtype("float32" if c.dtype == "bfloat16" else c.dtype)
    if c.kind == "string":
        raise ValueError("string inputs cannot be generated (give --inputs FILE.npz)")
    if c.kind == "branch":
        return np.full(shape, past > 0, dtype=bool)
    if c.kind == "mask":
        arr = np.ones(shape, dt)
        if len(shape) == 2 and shape[0] > 1 and shape[1] >= 4:
            arr[1::2, shape[1] - shape[1] // 4:] = 0
        return arr
    if c.kind == "positions":
        n = shape[-1] if shape else 1
        pos = np.arange(past, past + n, dtype=np.int64)
        if c.high and past + n > c.high:
            pos = pos % int(c.high)
        return np.broadcast_to(pos, shape).astype(dt).copy()
    if c.kind == "bool":
        return rng.integers(int(c.low), max(int(c.high), int(c.low) + 1), shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(int(c.low), max(int(c.high), int(c.low) + 1), shape).astype(dt)
    if c.kind == "image" and c.high > c.low:
        return rng.uniform(c.low, c.high, shape).astype(dt)
    scale = 0.5 if c.kind == "past" else 1.0
    return (scale * rng.standard_normal(shape)).astype(dt)
