"""What the shape analysis finds: symbolic shapes, small constants, shape values and events."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from graphlint.analysis.symbolic import Poly, to_poly
from graphlint.ir import Model, Node, Shape, Value

SDim = Poly | None
SShape = tuple[SDim, ...] | None
MAX_CONST = 4096  # elements: larger constants are never folded or read for analysis
MAX_SVAL = 64  # longest 1-D int tensor tracked symbolically
INT_MAX = 2**62  # ONNX "to the end" sentinels (INT64_MAX) are anything above this
SHAPE_DTYPES = frozenset({"int64", "int32"})  # what shape values are computed in

_PLACEHOLDER = re.compile(r"^unk__\d+$")


def is_placeholder(d: object) -> bool:
    """ONNX shape inference names dims it cannot compute ``unk__N``: unknown, not a symbol."""
    return isinstance(d, str) and d.startswith("unk__") and _PLACEHOLDER.match(d) is not None


def unnamed_symbol(inp: str, axis: int) -> str:
    """Symbol standing for an input dim the model leaves unnamed (distinct per input and axis)."""
    return f"{inp}[{axis}]?"


@dataclass
class Event:
    """An op needs two dims to agree. ``kind``: mismatch | pinned | conflict | reshape, or
    ``fold``: a Reshape with a constant leading dim moved the dynamic leading dim ``a`` into axis
    ``axis`` (now ``b``)."""

    kind: str
    node: Node
    a: Poly
    b: Poly
    va: Value | None = None
    vb: Value | None = None
    axis: int | None = None


@dataclass
class ShapeFacts:
    shapes: dict[Value, SShape] = field(default_factory=dict)
    consts: dict[Value, np.ndarray] = field(default_factory=dict)
    svals: dict[Value, list[SDim]] = field(default_factory=dict)
    build_const: set[Value] = field(default_factory=set)  # computed from constants only
    events: list[Event] = field(default_factory=list)
    origins: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # symbol -> (input, axis)
    unknown: list[Value] = field(default_factory=list)  # values whose shape stayed (partly) unknown
    # graph outputs whose declared shape disagrees with what the graph computes: (value, declared, computed)
    output_conflicts: list[tuple[Value, SShape, SShape]] = field(default_factory=list)
    env: Mapping[str, int] | None = None
    # Shapes of the values ONNX inference left (partly) unknown, with the dims found here filled
    # in (IR dims, never contradicting inference): see refined().
    filled: dict[Value, Shape] = field(default_factory=dict)

    def shape(self, v: Value | None) -> SShape:
        if v is None:
            return None
        s = self.shapes.get(v)
        if s is None and v.const is not None:  # constants: from their declared dims, on first use
            s = self.shapes[v] = tuple(map(Poly.const, v.const.shape))
        return s

    def refined(self, v: Value) -> Shape:
        """The value's IR shape (as ONNX inference left it) with the gaps this analysis could fill."""
        return self.filled.get(v, v.shape)

    def const(self, v: Value | None) -> np.ndarray | None:
        """The value's numpy data if it is a small build-time constant."""
        if v is None:
            return None
        a = self.consts.get(v)
        if a is None and v.const is not None and v.const.size <= MAX_CONST:
            try:
                a = np.asarray(v.const.numpy())
            except Exception:  # unreadable weights are GL0005's concern
                return None
            self.consts[v] = a
        return a

    def is_build_constant(self, v: Value | None) -> bool:
        return v is not None and (v.const is not None or v in self.build_const)

    def sval(self, v: Value | None) -> list[SDim] | None:
        """A 1-D (or scalar) int tensor's elements as dims, when known."""
        if v is None:
            return None
        s = self.svals.get(v)
        if s is not None:
            return s
        dt = v.dtype
        if dt is not None and dt not in SHAPE_DTYPES:
            return None
        a = self.const(v)
        if a is not None and a.ndim <= 1 and a.size <= MAX_SVAL and a.dtype.kind in "iu":
            s = [Poly.const(int(x)) for x in a.reshape(-1)]
            self.svals[v] = s
            return s
        return None

    def inputs_of(self, symbols: frozenset[str]) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for s in sorted(symbols):
            out.extend(self.origins.get(s, ()))
        return out


def dim_text(d: SDim) -> str:
    return "?" if d is None else str(d)


def shape_text(s: SShape) -> str:
    return "[?]" if s is None else "[" + ", ".join(dim_text(d) for d in s) + "]"


def contradicts(declared: SShape, computed: SShape) -> bool:
    """Rank differs, two numbers differ, or a declared number where the graph computes a symbol."""
    if declared is None or computed is None:
        return False
    if len(declared) != len(computed):
        return True
    for d, c in zip(declared, computed, strict=True):
        if d is None or c is None or not d.is_const:
            continue
        if c != d:
            return True
    return False


def merge(mine: SShape, base: SShape) -> SShape:
    if mine is None:
        return base
    if base is None or len(base) != len(mine) or None not in mine:
        return mine
    return tuple(m if m is not None else b for m, b in zip(mine, base, strict=True))


def fill(facts: ShapeFacts, values: list[Value]) -> None:
    """Record in ``facts.filled`` the IR shapes of ``values`` (those ONNX inference left partly
    unknown) with the dims the analysis found: numbers and symbols of named input dims."""
    for v in values:
        cur = v.shape
        if cur is not None and None not in cur:
            continue
        s = facts.shapes.get(v)
        if s is None or (cur is not None and len(cur) != len(s)):
            continue
        new = []
        for i, d in enumerate(s):
            old = cur[i] if cur is not None else None
            if (old is not None and not is_placeholder(old)) or d is None or any(sym.endswith("?") for sym in d.symbols):
                new.append(old)
            else:
                new.append(d.to_dim())
        facts.filled[v] = tuple(new)


def input_symbols(facts: ShapeFacts, d: Poly | None) -> bool:
    """True when every symbol of ``d`` is a graph-input dim (so people can act on it)."""
    return d is not None and bool(d.symbols) and all(s in facts.origins for s in d.symbols)


def describe_dim(facts: ShapeFacts, d: Poly) -> str:
    """``'seq' (input 'input_ids' axis 1)``; unnamed dims read as ``dim 1 of input 'x'``."""
    parts = []
    for s in sorted(d.symbols):
        where = facts.origins.get(s, [])
        loc = ", ".join(f"input '{i}' axis {a}" for i, a in where[:2])
        if s.endswith("?"):
            i, a = where[0] if where else (s, "?")
            parts.append(f"the unnamed dim {a} of input '{i}'")
        else:
            parts.append(f"'{s}'" + (f" ({loc})" if loc else ""))
    body = " and ".join(parts)
    return body if len(d.terms) == 1 and d.terms[0][1] == 1 and len(d.terms[0][0]) == 1 else f"'{d}' from {body}"


def dynamic_inputs(model: Model) -> list[Value]:
    """Graph inputs (not initializers) with at least one non-static dim or no shape."""
    return [v for v in model.graph.inputs if v.const is None and (
        v.shape is None or any(not isinstance(d, int) for d in v.shape))]


def to_polys(shape: Shape, env: Mapping[str, int] | None = None) -> SShape:
    """An IR shape as polys: ``unk__N`` placeholders are unknown dims."""
    if shape is None:
        return None
    dims = tuple(None if is_placeholder(d) else to_poly(d) for d in shape)
    if env:
        dims = tuple(None if d is None else d.subs(env) for d in dims)
    return dims
