"""Symbolic shape analysis and constant-value analysis over the IR (analysis ``"shapes"``).

The ONNX loader already ran ``onnx.shape_inference`` with data propagation. This pass walks
the main graph once more, in order, and:

* computes every value's shape as polynomials over dim symbols (:mod:`.symbolic`), so a
  Reshape fed by ``Shape -> Gather -> Concat`` gets ``[batch, seq + 16, 32]`` instead of
  unknowns, and contrib ops (SkipLayerNormalization, Attention, QuickGelu...) that ONNX
  inference skips get shapes too;
* folds small constant subgraphs with numpy and tracks 1-D int "shape values" symbolically
  (the data propagation TensorRT calls shape tensors), and which values are build-time constants;
* records *events* where an op needs two dims to agree: two different symbols (``mismatch``),
  a symbol forced to a number (``pinned``), two different numbers (``conflict``), or a
  Reshape whose element count cannot match (``reshape``). The GL3xx rules read these.

Where values stay unknown after the pass, ``onnxruntime.tools.symbolic_shape_infer`` runs as
a fallback; if it crashes, the crash is kept (``ort_error``) for a finding, never raised.
The same pass with every symbol bound to a number (:func:`evaluate`) checks a concrete input
shape, which is how ``--shapes`` profiles are checked.

The pass can also run *early* (:func:`shapes_early`), while the loader's child process is still
running ONNX inference: it then reads only the declared graph inputs, constants and attributes.
When types arrive, :func:`shapes_analysis` checks the early facts against inference in one walk
and keeps them only if they are exactly what the full pass would compute (see
:func:`_reconcile`); otherwise it runs the full pass. Either way the facts are the same.

Counts go to ``model.stats``: ``shape_values``, ``shape_unknown_onnx``,
``shape_unknown_graphlint``, ``shape_unknown_final``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter, ne
from typing import Any

import numpy as np

from graphlint import dtypes
from graphlint.analysis import analysis, early_key
from graphlint.analysis.symbolic import ONE, Poly, product, to_poly
from graphlint.ir import ONNX, ONNX_DOMAIN, Graph, Model, Node, Value

SDim = Poly | None
SShape = tuple[SDim, ...] | None
MAX_CONST = 4096  # elements: larger constants are never folded or read for analysis
MAX_SVAL = 64  # longest 1-D int tensor tracked symbolically
ORT_FALLBACK_MAX_NODES = 20000
INT_MAX = 2**62
SHAPE_DTYPES = frozenset({"int64", "int32"})  # what shape values are computed in  # ONNX "to the end" sentinels (INT64_MAX) are anything above this


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
    ort_error: str | None = None
    unknown: list[Value] = field(default_factory=list)  # values whose shape stayed (partly) unknown
    # graph outputs whose declared shape disagrees with what the graph computes: (value, declared, computed)
    output_conflicts: list[tuple[Value, SShape, SShape]] = field(default_factory=list)
    env: Mapping[str, int] | None = None
    early: _EarlyNotes | None = None  # set while these are early facts (before ONNX inference)
    # how the analysis got these facts: "full" pass, early facts "reconciled", or "fallback: why"
    path: str = "full"

    def shape(self, v: Value | None) -> SShape:
        if v is None:
            return None
        s = self.shapes.get(v)
        if s is None and v.const is not None:  # constants: from their declared dims, on first use
            s = self.shapes[v] = tuple(map(Poly.const, v.const.shape))
        return s

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
        dt = v.dtype if self.early is None else _early_dtype(self, v)
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


@dataclass
class _EarlyNotes:
    """What the early pass assumed, so the analysis can check it against ONNX inference later."""

    inputs: dict[Value, Any] = field(default_factory=dict)  # graph input -> the IR shape the pass read
    folded: set[Node] = field(default_factory=set)  # nodes numpy folded (their shapes need no check)
    crashed_at: int | None = None  # position of the first node that raised (its facts are partial)
    stopped_at: int | None = None  # position of the first node not visited (asked to stop there)
    # graph outputs whose declared shape disagrees with the handler's: (value, declared, computed)
    conflicts: list[tuple[Value, SShape, SShape]] = field(default_factory=list)
    index: _EarlyIndex | None = None  # set once the walk is done


@dataclass
class _EarlyIndex:
    """Lists over the whole graph that the analysis needs once types arrive, made while inference
    still runs (the node lists during the walk, where the nodes are at hand): after it they would
    cost a walk over every node and value on the serial path."""

    singles: list[int] = field(default_factory=list)  # positions of the nodes with exactly one output
    outs: list[Value] = field(default_factory=list)  # ... those outputs
    others: list[int] = field(default_factory=list)  # positions of the other nodes (no output or several)
    shapes: list[SShape] = field(default_factory=list)  # the early shapes of ``outs``
    values: list[Value] = field(default_factory=list)  # the tensor values (_tensor_values but for dtypes)
    unknown: list[Value] = field(default_factory=list)  # those whose early shape is missing or has an unknown dim
    consts: list[Value] = field(default_factory=list)  # the values holding constant data

    def add(self, i: int, outs: list[Value]) -> None:
        if len(outs) == 1:
            self.singles.append(i)
            self.outs.append(outs[0])
        else:
            self.others.append(i)

    def finish(self, model: Model, facts: ShapeFacts) -> None:
        self.shapes = list(map(facts.shapes.get, self.outs))
        self.values = _named_tensors(model)
        self.unknown = _unknown_facts(self.values, facts)
        self.consts = [v for v in model.graph.values.values() if v.const is not None]


def _early_dtype(facts: ShapeFacts, v: Value) -> str | None:
    """A value's dtype without ONNX inference: a constant's own, a folded array's, else unknown."""
    if v.const is not None:
        return v.const.dtype
    a = facts.consts.get(v)
    return None if a is None else str(a.dtype)


def _shape_dtype(dt: str | None) -> bool:
    """Whether a value of this dtype may carry a shape (unknown dtypes may)."""
    return dt is None or dt in SHAPE_DTYPES


def dim_text(d: SDim) -> str:
    return "?" if d is None else str(d)


def shape_text(s: SShape) -> str:
    return "[?]" if s is None else "[" + ", ".join(dim_text(d) for d in s) + "]"


# ------------------------------------------------------------------------------------
# the pass


class _Pass:
    """One walk over a graph in node order.

    ``early``: ONNX inference has not run yet, so the pass reads no inferred shape or dtype: only
    graph inputs (as the file declares them), constants and attributes. Every handler then runs,
    and If gets a handler of its own (:func:`_if_early`); :func:`_reconcile` checks the result
    against inference afterwards.
    """

    def __init__(self, model: Model, env: Mapping[str, int] | None, *, early: bool = False,
                 facts: ShapeFacts | None = None) -> None:
        self.model = model
        self.env = env
        self.early = early
        self.f = facts if facts is not None else ShapeFacts(env=env, early=_EarlyNotes() if early else None)
        self._converted: dict[tuple, SShape] = {}  # IR shape -> polys (shapes repeat a lot)
        self.shape = self.f.shape  # handlers ask for input shapes all the time: one call, not two
        self.handlers = _EARLY_HANDLERS if early else HANDLERS

    def base(self, v: Value) -> SShape:
        """The shape ONNX inference left on the value, as polys (symbols bound when evaluating)."""
        shape = v.shape
        if shape is None or self.early:
            return None
        dims = self._converted.get(shape)
        return dims if dims is not None else self.convert(shape)

    def convert(self, shape: Any) -> SShape:
        """An IR shape as polys: ``unk__N`` placeholders are unknown dims."""
        if shape is None:
            return None
        dims = self._converted.get(shape)
        if dims is None:
            dims = tuple(None if is_placeholder(d) else to_poly(d) for d in shape)
            if self.env:
                dims = tuple(None if d is None else d.subs(self.env) for d in dims)
            self._converted[shape] = dims
        return dims

    def declared(self, v: Value, base: SShape) -> SShape:
        """A graph output's shape as the file declares it (before inference merged into it)."""
        io = getattr(self.model, "declared_io", {}).get(v.name)
        if io is None:
            return base
        shape = io[1]
        return None if shape is None else tuple(None if is_placeholder(d) else to_poly(d) for d in shape)

    def input_shape(self, v: Value) -> Any:
        """A graph input's IR shape; the early pass takes it as the file declares it."""
        if not self.early:
            return v.shape
        io = self.model.declared_io.get(v.name)
        shape = v.shape if io is None else io[1]
        self.f.early.inputs[v] = shape  # type: ignore[union-attr]
        return shape

    def run(self, stop: Callable[[], bool] | None = None, index: _EarlyIndex | None = None) -> ShapeFacts:
        f = self.f
        g = self.model.graph
        for v in g.inputs:
            if v.const is not None:
                continue
            shape = self.input_shape(v)
            if shape is None:
                f.shapes[v] = None
                continue
            dims: list[SDim] = []
            for axis, d in enumerate(shape):
                # an empty dim_param is no name (writers that clear the name leave "")
                p = to_poly(d) if d is not None and d != "" else Poly.sym(unnamed_symbol(v.name, axis))
                for s in p.symbols:
                    f.origins.setdefault(s, []).append((v.name, axis))
                dims.append(p.subs(self.env) if self.env else p)
            f.shapes[v] = tuple(dims)
        self.visit_all(g.nodes, stop, index)
        return f

    def visit_all(self, nodes: list[Node], stop: Callable[[], bool] | None = None,
                  index: _EarlyIndex | None = None) -> None:
        f = self.f
        for i, node in enumerate(nodes):
            if stop is not None and not i % 1024 and f.early is not None and stop():
                f.early.stopped_at = i  # reconciling resumes the full pass here
                return
            try:
                self.visit(node)
            except Exception:  # a malformed node must not cost every shape rule its answer
                for v in node.outputs:
                    f.shapes.setdefault(v, self.base(v))
                if f.early is not None and f.early.crashed_at is None:
                    f.early.crashed_at = i
            if index is not None:
                index.add(i, node.outputs)

    def visit(self, node: Node) -> None:
        f = self.f
        outs = node.outputs
        ins = node.inputs
        op = node.op_type
        if node.domain == ONNX_DOMAIN and ins:
            all_const, foldable = self._constant_inputs(ins)
            if all_const:
                f.build_const.update(outs)
            if foldable and outs and op in _FOLD and self._try_fold(node, ins, outs):
                if f.early is not None:
                    f.early.folded.add(node)
                return
        if op == "Constant":
            f.build_const.update(outs)
        handler = self.handlers.get(op) if node.domain in _HANDLED_DOMAINS else None
        bases = [None] * len(outs) if self.early else [self.base(v) for v in outs]
        if handler is not None and op not in CHECKED and len(outs) == 1 and bases[0] is not None \
                and None not in bases[0]:
            handler = None  # inference already knows it and the op constrains nothing: skip the work
        results: list[SShape] = []
        if handler is not None:
            try:
                results = handler(node, self)
            except (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError):
                results = []  # malformed node: leave its outputs to ONNX inference
        shapes = f.shapes
        for i, v in enumerate(outs):
            mine = results[i] if i < len(results) else None
            base = bases[i]
            if v.is_output and not self.env:
                declared = self.declared(v, base)
                if _contradicts(declared, mine):
                    # early: whether the full pass would have run this handler is decided later
                    (f.early.conflicts if f.early is not None else f.output_conflicts).append((v, declared, mine))
            shapes[v] = mine if base is None else _merge(mine, base)
        if op in SVAL_OPS and outs and _maybe_shape_value(outs[0], shapes.get(outs[0]), self.early):
            self._shape_value(node, outs[0])

    def _constant_inputs(self, ins: list[Value | None]) -> tuple[bool, bool]:
        """(every input is a build-time constant, every input's data is known so numpy can fold).

        Omitted optional inputs count as both. One loop that stops at the first input that is
        neither: on a large graph almost every node has one as its first input.
        """
        build_const, consts = self.f.build_const, self.f.consts
        all_const = True
        for v in ins:
            if v is None or v.const is not None or v in build_const:
                continue
            all_const = False
            if v not in consts:
                return False, False
        return all_const, True

    def _try_fold(self, node: Node, ins: list[Value | None], outs: list[Value]) -> bool:
        """Fold a node whose inputs are all small constants; True when its output is now a constant."""
        f = self.f
        arrays = [f.const(v) if v is not None else None for v in ins]
        if any(a is None for a, v in zip(arrays, ins, strict=True) if v is not None):
            return False
        folded = _fold(node, arrays)
        if folded is None or folded.size > MAX_CONST:
            return False
        f.consts[outs[0]] = folded
        f.shapes[outs[0]] = tuple(Poly.const(d) for d in folded.shape)
        return True

    def _shape_value(self, node: Node, out: Value) -> None:
        """Track a 1-D int output element by element (the shape tensors TensorRT talks about)."""
        f = self.f
        try:
            sv = SVAL_OPS[node.op_type](node, self)
        except (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError):
            sv = None
        if sv is not None and len(sv) <= MAX_SVAL:
            f.svals[out] = sv
            if all(d is not None and d.is_const for d in sv):
                arr = np.array([d.value for d in sv], dtype=np.int64)  # type: ignore[union-attr]
                shp = f.shapes.get(out)
                scalar = shp is not None and len(shp) == 0 and arr.size == 1
                f.consts.setdefault(out, arr.reshape(()) if scalar else arr)

    def branch_outputs(self, owner: Node, g: Graph) -> list[SShape]:
        """Shapes of a subgraph's outputs, from a scratch pass that sees the enclosing scope."""
        sub = _Pass(self.model, self.env, early=self.early)
        outer = owner.graph.values
        for v in g.values.values():  # names the branch takes from the enclosing graph
            if v.producer is None and not v.is_input and v.const is None and v.name in outer:
                sub.import_value(v, self.f, outer[v.name])
        for node in g.nodes:
            sub.visit(node)  # a crash propagates: the early pass marks the If node crashed
        return [sub.f.shape(v) for v in g.outputs]

    def import_value(self, v: Value, facts: ShapeFacts, src: Value) -> None:
        f = self.f
        f.shapes[v] = facts.shape(src)
        sv, const = facts.sval(src), facts.const(src)
        if sv is not None:
            f.svals[v] = sv
        if const is not None:
            f.consts[v] = const
        if facts.is_build_constant(src):
            f.build_const.add(v)

    # helpers for handlers
    def shape(self, v: Value | None) -> SShape:
        return self.f.shape(v)  # (shadowed per instance by the bound method itself: see __init__)

    def event(self, kind: str, node: Node, a: Poly, b: Poly, va: Value | None, vb: Value | None,
              axis: int | None) -> None:
        self.f.events.append(Event(kind, node, a, b, va, vb, axis))

    def agree(self, node: Node, a: SDim, b: SDim, va: Value | None, vb: Value | None, axis: int | None,
              broadcast: bool) -> SDim:
        """Two dims that must be equal (or one of them 1 under broadcasting); returns the result dim."""
        if a is None or b is None:
            if broadcast:
                other = a if b is None else b
                return other if other is not None and other != ONE and other.is_const else None
            return a if a is not None else b
        if a == b:
            return a
        if broadcast and a == ONE:
            return b
        if broadcast and b == ONE:
            return a
        if a.is_const and b.is_const:
            self.event("conflict", node, a, b, va, vb, axis)
            return a
        if a.is_const or b.is_const:
            self.event("pinned", node, a, b, va, vb, axis)
            return a if a.is_const else b
        self.event("mismatch", node, a, b, va, vb, axis)
        return a


def _maybe_shape_value(v: Value, shape: SShape, early: bool = False) -> bool:
    """Only int tensors of rank 0 or 1 can carry dims (cheap filter before the value ops).

    The early pass does not know the dtype yet: it assumes int, and reconciling checks it."""
    return (early or v.dtype is None or v.dtype in SHAPE_DTYPES) and (shape is None or len(shape) <= 1)


def _contradicts(declared: SShape, computed: SShape) -> bool:
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


def _merge(mine: SShape, base: SShape) -> SShape:
    if mine is None:
        return base
    if base is None or len(base) != len(mine) or None not in mine:
        return mine
    return tuple(m if m is not None else b for m, b in zip(mine, base, strict=True))


# ------------------------------------------------------------------------------------
# shape handlers: (node, pass) -> output shapes

Handler = Callable[[Node, _Pass], list[SShape]]
HANDLERS: dict[str, Handler] = {}
_HANDLED_DOMAINS = frozenset({ONNX_DOMAIN, "com.microsoft"})


def handles(*ops: str) -> Callable[[Handler], Handler]:
    def reg(fn: Handler) -> Handler:
        for op in ops:
            HANDLERS[op] = fn
        return fn

    return reg


SAME_SHAPE = ["Identity", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round", "Sign", "Not", "Cast", "CastLike", "Softmax", "LogSoftmax", "Hardmax", "Gelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish", "Clip", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "IsNaN", "IsInf", "LpNormalization", "InstanceNormalization", "BatchNormalization", "LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization", "GroupNormalization", "CumSum", "Trilu", "Dropout", "QuantizeLinear", "DequantizeLinear", "ScatterND", "ScatterElements", "Scatter", "Shrink", "ThresholdedRelu", "QuickGelu", "FastGelu", "BiasGelu", "BiasAdd", "BiasSplitGelu", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "RotaryEmbedding", "DynamicQuantizeLinear"]


@handles(*SAME_SHAPE)
def _same(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    if node.op_type in ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization"):
        return [s, None, None, s]  # output 3 is input + skip (+ bias)
    if node.op_type == "Dropout":
        return [s, s]
    return [s]


BROADCAST = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "BitShift", "Max", "Min", "Sum", "Mean", "PRelu", "Where", "BitwiseAnd", "BitwiseOr", "BitwiseXor"]


def broadcast(p: _Pass, node: Node, vals: list[Value | None], shapes: list[SShape]) -> SShape:
    if None in shapes:
        return None
    if len(shapes) == 2:  # the common cases: identical shapes, or x + bias (one shape is the other's tail)
        a, b = shapes
        if len(a) < len(b):  # type: ignore[arg-type]
            a, b = b, a
        if None not in a and (not b or a[-len(b):] == b):  # type: ignore[index,arg-type,operator]
            return a
    else:
        first = shapes[0]
        if None not in first and all(s == first for s in shapes[1:]):  # type: ignore[operator]
            return first
    rank = max(len(s) for s in shapes)  # type: ignore[arg-type]
    out: list[SDim] = []
    for k in range(rank):
        cur: SDim = ONE
        cur_v: Value | None = None
        for v, s in zip(vals, shapes, strict=True):
            off = k - (rank - len(s))  # type: ignore[arg-type]
            if off < 0:
                continue
            d = s[off]  # type: ignore[index]
            before = cur
            cur = p.agree(node, cur, d, cur_v, v, k - rank, True)
            if before == ONE or before is None:
                cur_v = v
        out.append(cur)
    return tuple(out)


# Ops whose handler records events (dims that must agree): always run, even when inference knows the output.
CHECKED = frozenset({*BROADCAST, "MatMul", "MatMulInteger", "FusedMatMul", "Gemm", "Concat", "Reshape", "Expand",
                     "RotaryEmbedding"})


@handles(*BROADCAST)
def _broadcast(node: Node, p: _Pass) -> list[SShape]:
    vals = node.inputs if None not in node.inputs else [v for v in node.inputs if v is not None]
    return [broadcast(p, node, vals, [p.shape(v) for v in vals])]


@handles("MatMul", "MatMulInteger", "FusedMatMul")
def _matmul(node: Node, p: _Pass) -> list[SShape]:
    a, b = node.input(0), node.input(1)
    sa, sb = p.shape(a), p.shape(b)
    if sa is None or sb is None or not sa or not sb:
        return [None]
    if node.op_type == "FusedMatMul":
        if node.attr("transA", 0) and len(sa) >= 2:
            sa = (*sa[:-2], sa[-1], sa[-2])
        if node.attr("transB", 0) and len(sb) >= 2:
            sb = (*sb[:-2], sb[-1], sb[-2])
    a2 = sa if len(sa) >= 2 else (ONE, sa[0])
    b2 = sb if len(sb) >= 2 else (sb[0], ONE)
    p.agree(node, a2[-1], b2[-2], a, b, -1, False)
    batch = broadcast(p, node, [a, b], [a2[:-2], b2[:-2]]) or ()
    out = (*batch, a2[-2], b2[-1])
    if len(sa) == 1:
        out = (*out[:-2], out[-1])
    if len(sb) == 1:
        out = out[:-1]
    return [tuple(out)]


@handles("Gemm")
def _gemm(node: Node, p: _Pass) -> list[SShape]:
    sa, sb = p.shape(node.input(0)), p.shape(node.input(1))
    if sa is None or sb is None or len(sa) != 2 or len(sb) != 2:
        return [None]
    m, k = (sa[1], sa[0]) if node.attr("transA", 0) else sa
    k2, n = (sb[1], sb[0]) if node.attr("transB", 0) else sb
    p.agree(node, k, k2, node.input(0), node.input(1), None, False)
    return [(m, n)]


@handles("Concat")
def _concat(node: Node, p: _Pass) -> list[SShape]:
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


def _axes(node: Node, p: _Pass, idx: int, attr_until: int) -> list[int] | None:
    """Axes from the attribute (older opsets) or the given input (newer ones)."""
    if isinstance(node.opset, int) and node.opset < attr_until:
        ax = node.attr("axes")
        return list(ax) if ax is not None else None
    a = p.f.const(node.input(idx))
    return [int(x) for x in a.reshape(-1).tolist()] if a is not None else None  # tolist: no numpy scalars


@handles("Reshape")
def _reshape(node: Node, p: _Pass) -> list[SShape]:
    data = node.input(0)
    sin, target = p.shape(data), p.f.sval(node.input(1))
    if target is None:
        return [None]
    allowzero = node.attr("allowzero", 0)
    out: list[SDim] = []
    neg = None
    for i, d in enumerate(target):
        if d is not None and d.is_const and d.value == 0 and not allowzero:
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
def _expand(node: Node, p: _Pass) -> list[SShape]:
    target = p.f.sval(node.input(1))
    sin = p.shape(node.input(0))
    if target is None or sin is None:
        return [None]
    return [broadcast(p, node, [node.input(0), node.input(1)], [sin, tuple(target)])]


@handles("Transpose")
def _transpose(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    perm = node.attr("perm") or list(reversed(range(len(s))))
    return [tuple(s[i] for i in perm)]


@handles("Unsqueeze")
def _unsqueeze(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    axes = _axes(node, p, 1, 13)
    if s is None or axes is None:
        return [None]
    rank = len(s) + len(axes)
    axes = sorted(a + rank if a < 0 else a for a in axes)
    out = list(s)
    for a in axes:
        out.insert(a, ONE)
    return [tuple(out)]


@handles("Squeeze")
def _squeeze(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    axes = _axes(node, p, 1, 13)
    if axes is None:
        if node.input(1) is not None and not (isinstance(node.opset, int) and node.opset < 13):
            return [None]
        return [tuple(d for d in s if d != ONE)]
    axes = [a + len(s) if a < 0 else a for a in axes]
    return [tuple(d for i, d in enumerate(s) if i not in axes)]


@handles("Flatten")
def _flatten(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    axis = node.attr("axis", 1)
    axis = axis + len(s) if axis < 0 else axis
    return [(product(s[:axis]), product(s[axis:]))]


@handles("Gather")
def _gather(node: Node, p: _Pass) -> list[SShape]:
    s, si = p.shape(node.input(0)), p.shape(node.input(1))
    if s is None or si is None:
        return [None]
    axis = node.attr("axis", 0)
    axis = axis + len(s) if axis < 0 else axis
    return [(*s[:axis], *si, *s[axis + 1:])]


@handles("GatherElements")
def _gather_elements(node: Node, p: _Pass) -> list[SShape]:
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
def _slice(node: Node, p: _Pass) -> list[SShape]:
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


@handles("Shape")
def _shape(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    lo, hi = _shape_range(node, len(s))
    return [(Poly.const(max(hi - lo, 0)),)]


def _shape_range(node: Node, rank: int) -> tuple[int, int]:
    lo, hi = node.attr("start", 0), node.attr("end", rank)
    lo = min(max(lo + rank if lo < 0 else lo, 0), rank)
    hi = min(max(hi + rank if hi < 0 else hi, 0), rank)
    return lo, hi


@handles("Size")
def _size(node: Node, p: _Pass) -> list[SShape]:
    return [()]


@handles("ConstantOfShape")
def _const_of_shape(node: Node, p: _Pass) -> list[SShape]:
    t = p.f.sval(node.input(0))
    return [tuple(t) if t is not None else None]


@handles("Range")
def _range(node: Node, p: _Pass) -> list[SShape]:
    st, lim, de = (p.f.sval(node.input(i)) for i in range(3))
    if st and lim and de and st[0] is not None and lim[0] is not None and de[0] == ONE:
        return [(lim[0] - st[0],)]
    return [(None,)]


@handles("Tile")
def _tile(node: Node, p: _Pass) -> list[SShape]:
    s, r = p.shape(node.input(0)), p.f.sval(node.input(1))
    if s is None or r is None or len(r) != len(s):
        return [None]
    return [tuple(None if a is None or b is None else a * b for a, b in zip(s, r, strict=True))]


@handles("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin")
def _reduce(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None:
        return [None]
    keep = node.attr("keepdims", 1)
    if node.op_type in ("ArgMax", "ArgMin"):
        axes: list[int] | None = [node.attr("axis", 0)]
    else:
        until = 13 if node.op_type == "ReduceSum" else 18
        axes = _axes(node, p, 1, until)
        if axes is None:
            if node.input(1) is not None and not (isinstance(node.opset, int) and node.opset < until):
                return [None]
            if node.attr("noop_with_empty_axes", 0):
                return [s]
            axes = list(range(len(s)))
    axes = [a + len(s) if a < 0 else a for a in axes]
    if keep:
        return [tuple(ONE if i in axes else d for i, d in enumerate(s))]
    return [tuple(d for i, d in enumerate(s) if i not in axes)]


@handles("Split")
def _split(node: Node, p: _Pass) -> list[SShape]:
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
    return [(*s[:axis], sz, *s[axis + 1:]) for sz in sizes_p]


@handles("Conv", "MaxPool", "AveragePool", "LpPool")
def _conv(node: Node, p: _Pass) -> list[SShape]:
    s = p.shape(node.input(0))
    if s is None or len(s) < 3:
        return [None]
    if node.op_type == "Conv":
        w = p.shape(node.input(1))
        if w is None:
            return [None]
        kernel, cout = list(w[2:]), w[0]
    else:
        kernel, cout = [Poly.const(k) for k in node.attr("kernel_shape", [])], s[1]
    nsp = len(s) - 2
    strides = node.attr("strides") or [1] * nsp
    dil = node.attr("dilations") or [1] * nsp
    pads = node.attr("pads") or [0] * (2 * nsp)
    auto = node.attr("auto_pad", "NOTSET")
    out: list[SDim] = [s[0], cout]
    for i in range(nsp):
        d, k = s[2 + i], kernel[i] if i < len(kernel) else None
        if d is None or k is None or not k.is_const:
            out.append(None)
            continue
        kv = ((k.value or 1) - 1) * dil[i] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(d if strides[i] == 1 else (d.floordiv(strides[i]) if d.is_const else None))
            continue
        pads_i = 0 if auto == "VALID" else pads[i] + pads[i + nsp]
        span = d + Poly.const(pads_i - kv)
        if span.is_const:
            ceil = node.attr("ceil_mode", 0)
            v = span.value or 0
            out.append(Poly.const((-(-v // strides[i]) if ceil else v // strides[i]) + 1))
        elif strides[i] == 1:
            out.append(span + ONE)
        else:
            exact = span.div_exact(Poly.const(strides[i]))
            out.append((exact if exact is not None else _derived(p, f"({span})//{strides[i]}", span)) + ONE)
    return [tuple(out)]


def _derived(p: _Pass, name: str, base: Poly) -> Poly:
    """A symbol for an input-dim expression polynomials cannot hold (a floor division): it stands
    for the same input dims as ``base``, so constraints on it still name them (a strided patch
    embedding whose patch count a constant position table pins)."""
    if name not in p.f.origins:
        p.f.origins[name] = [o for s in sorted(base.symbols) for o in p.f.origins.get(s, ())]
    return Poly.sym(name)


@handles("Pad")
def _pad(node: Node, p: _Pass) -> list[SShape]:
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


@handles("RotaryEmbedding")
def _rotary(node: Node, p: _Pass) -> list[SShape]:
    """ONNX RotaryEmbedding-23: without position_ids, cos_cache and sin_cache are (batch, sequence,
    rotary_dim/2) of x itself; the spec does not broadcast them (a cache built for batch 1 fails
    at batch 2 in onnxruntime)."""
    x = p.shape(node.input(0))
    if node.domain != ONNX_DOMAIN or x is None or len(x) not in (3, 4):
        return [x]
    if node.input(3) is None:
        batch, seq = x[0], x[2] if len(x) == 4 else x[1]
        for i in (1, 2):
            cache = p.shape(node.input(i))
            if cache is not None and len(cache) == 3:
                p.agree(node, batch, cache[0], node.input(0), node.input(i), 0, broadcast=False)
                p.agree(node, seq, cache[1], node.input(0), node.input(i), 1, broadcast=False)
    return [x]


@handles("Attention")
def _attention(node: Node, p: _Pass) -> list[SShape]:
    s, w = p.shape(node.input(0)), p.shape(node.input(1))
    if s is None or len(s) != 3:
        return [None]
    sizes = node.attr("qkv_hidden_sizes")
    if sizes:
        hidden: SDim = Poly.const(sizes[2])
    elif w is not None and len(w) == 2 and w[1] is not None:
        hidden = w[1].floordiv(3)
    else:
        hidden = None
    return [(s[0], s[1], hidden)]


@handles("MultiHeadAttention")
def _mha(node: Node, p: _Pass) -> list[SShape]:
    q, v = p.shape(node.input(0)), p.shape(node.input(2))
    if q is None or len(q) != 3:
        return [None]
    hidden = v[2] if v is not None and len(v) == 3 else q[2]
    return [(q[0], q[1], hidden)]


@handles("EmbedLayerNormalization")
def _embed_ln(node: Node, p: _Pass) -> list[SShape]:
    ids, emb = p.shape(node.input(0)), p.shape(node.input(2))
    if ids is None or emb is None or len(ids) != 2:
        return [None]
    return [(ids[0], ids[1], emb[-1]), (ids[0],)]


def _if_early(node: Node, p: _Pass) -> list[SShape]:
    """If, in the early pass only (the full pass takes ONNX inference's answer): each branch is
    walked by a scratch pass, and an output keeps the dims both branches agree on, as ONNX
    inference merges them. Nothing from inside the branches (events, facts) leaks out."""
    branches = [node.subgraphs.get("then_branch"), node.subgraphs.get("else_branch")]
    if branches[0] is None or branches[1] is None:
        return []
    then_out, else_out = (p.branch_outputs(node, g) for g in branches)
    out: list[SShape] = []
    for a, b in zip(then_out, else_out, strict=False):
        if a is None or b is None or len(a) != len(b):
            out.append(None)
        else:
            out.append(tuple(x if x == y else None for x, y in zip(a, b, strict=True)))
    return out


def _constant_early(node: Node, p: _Pass) -> list[SShape]:
    """Constant, in the early pass only: the tensor's own shape (the full pass takes inference's)."""
    return [p.shape(node.outputs[0])] if node.outputs else []


_EARLY_HANDLERS: dict[str, Handler] = {**HANDLERS, "If": _if_early, "Constant": _constant_early}


# ------------------------------------------------------------------------------------
# shape values: 1-D int tensors tracked element by element


def _sv_shape(node: Node, p: _Pass) -> list[SDim] | None:
    s = p.shape(node.input(0))
    if s is None:
        return None
    lo, hi = _shape_range(node, len(s))
    return list(s[lo:hi])


def _sv_gather(node: Node, p: _Pass) -> list[SDim] | None:
    data, idx = p.f.sval(node.input(0)), p.f.const(node.input(1))
    if data is None or idx is None or node.attr("axis", 0) != 0:
        return None
    n = len(data)
    return [data[int(i) + n if i < 0 else int(i)] for i in idx.reshape(-1).tolist()]


def _sv_concat(node: Node, p: _Pass) -> list[SDim] | None:
    out: list[SDim] = []
    for v in node.inputs:
        s = p.f.sval(v)
        if s is None:
            return None
        out.extend(s)
    return out


def _sv_pass(node: Node, p: _Pass) -> list[SDim] | None:
    return p.f.sval(node.input(0))


def _sv_slice(node: Node, p: _Pass) -> list[SDim] | None:
    data = p.f.sval(node.input(0))
    c = [p.f.const(node.input(i)) for i in range(1, 5)]
    if data is None or c[0] is None or c[1] is None:
        return None
    step = int(c[3][0]) if c[3] is not None else 1
    return data[int(c[0][0]):int(min(c[1][0], len(data) + 1)) if c[1][0] >= 0 else int(c[1][0]):step]


def _sv_arith(node: Node, p: _Pass) -> list[SDim] | None:
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


def _sv_where(node: Node, p: _Pass) -> list[SDim] | None:
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


def _sv_equal(node: Node, p: _Pass) -> list[bool] | None:
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


def _sv_reduce_prod(node: Node, p: _Pass) -> list[SDim] | None:
    a = p.f.sval(node.input(0))
    return None if a is None else [product(a)]


def _sv_cos(node: Node, p: _Pass) -> list[SDim] | None:
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


SVAL_OPS: dict[str, Callable[[Node, _Pass], list[SDim] | None]] = {
    "Shape": _sv_shape, "Gather": _sv_gather, "Concat": _sv_concat, "Unsqueeze": _sv_pass, "Squeeze": _sv_pass,
    "Cast": _sv_pass, "Identity": _sv_pass, "Reshape": _sv_pass, "Slice": _sv_slice, "Add": _sv_arith,
    "Sub": _sv_arith, "Mul": _sv_arith, "Div": _sv_arith, "Where": _sv_where, "ReduceProd": _sv_reduce_prod,
    "ConstantOfShape": _sv_cos,
}


# ------------------------------------------------------------------------------------
# numpy constant folding of small build-time constants


def _fold(node: Node, a: list[np.ndarray | None]) -> np.ndarray | None:
    op = node.op_type
    fn = _FOLD.get(op)
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


_FOLD: dict[str, Callable[[Node, list[Any]], np.ndarray | None]] = {
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
    "Shape": lambda n, a: np.array(a[0].shape[slice(*_shape_range(n, a[0].ndim))], np.int64),
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


# ------------------------------------------------------------------------------------
# the analysis


def _unknown_ir(values: list[Value]) -> list[Value]:
    """Values whose IR shape is missing or has an unknown dim (None or an ``unk__N`` placeholder)."""
    verdicts: dict[tuple, bool] = {}  # the loader shares one tuple per distinct type: decide each once
    out = []
    for v in values:
        s = v.shape
        if s is None:
            out.append(v)
            continue
        unknown = verdicts.get(s)
        if unknown is None:
            unknown = verdicts[s] = any(d is None or is_placeholder(d) for d in s)
        if unknown:
            out.append(v)
    return out


def _unknown_facts(values: list[Value], facts: ShapeFacts) -> list[Value]:
    """Values whose computed shape is missing or has an unknown dim (values here are not constants)."""
    shapes = facts.shapes
    return [v for v in values if (s := shapes.get(v)) is None or None in s]


_SHAPE = attrgetter("shape")
_DTYPE = attrgetter("dtype")


def _named_tensors(model: Model) -> list[Value]:
    """Non-constant named values of the main graph that are graph inputs or node outputs."""
    return [v for v in model.graph.values.values()
            if v.const is None and v.name and (v.producer is not None or v.is_input)]


def _tensor_values(model: Model, named: list[Value] | None = None) -> list[Value]:
    """Non-constant named values of the main graph that carry tensors (what the counts count).

    ``named``: :func:`_named_tensors`, when already made (the test left is by dtype).
    """
    values = named if named is not None else _named_tensors(model)
    # sequence/optional/map values have no shape; a graph has few dtypes, so test each once
    no_shape = {d for d in set(map(_DTYPE, values)) if d and d.endswith("_type")}
    return [v for v in values if v.dtype not in no_shape] if no_shape else values


def run(model: Model, env: Mapping[str, int] | None = None) -> ShapeFacts:
    """The symbolic pass (``env`` None) or a concrete evaluation with symbols bound to ints."""
    return _Pass(model, env).run()


def evaluate(model: Model, input_shapes: Mapping[str, tuple[int, ...]]) -> ShapeFacts:
    """Run the pass with graph inputs at concrete shapes; breaks show up as conflict/reshape events."""
    env: dict[str, int] = {}
    for v in model.graph.inputs:
        shp = input_shapes.get(v.name)
        if shp is None or v.shape is None or len(shp) != len(v.shape):
            continue
        for axis, (d, n) in enumerate(zip(v.shape, shp, strict=True)):
            if d is None:
                env[unnamed_symbol(v.name, axis)] = n
            elif isinstance(d, str):
                p = to_poly(d)
                if p is not None and len(p.terms) == 1 and p.terms[0][1] == 1 and len(p.terms[0][0]) == 1:
                    env.setdefault(p.terms[0][0][0], n)
    return run(model, env)


def shapes_early(model: Model, stop: Callable[[], bool] | None = None) -> ShapeFacts | None:
    """The pass before ONNX inference has typed the values (it runs while the loader's child infers).

    Reads graph inputs as declared, constants and attributes only; :func:`shapes_analysis`
    reconciles the result with inference once types arrive. ``stop``, polled every 1024 nodes,
    ends the walk early (say, when inference is done): the analysis then resumes from there.
    """
    if model.dialect != ONNX:
        return None
    index = _EarlyIndex()
    facts = _Pass(model, None, early=True).run(stop, index)
    index.finish(model, facts)
    facts.early.index = index  # type: ignore[union-attr]
    return facts


def _early_until_inferred(model: Model) -> ShapeFacts | None:
    """The early part as the linter runs it: once inference has finished, the rest of the walk
    is cheaper on the typed path (it skips ops whose shapes inference already knows)."""
    return shapes_early(model, stop=model.types_arrived)


@analysis("shapes", per_target=False, early=_early_until_inferred)  # target-independent: once per model
def shapes_analysis(model: Model, target) -> ShapeFacts:
    early = model.precomputed.pop(early_key("shapes"), None)
    index = early.early.index if early is not None and early.early is not None else None
    values = _tensor_values(model, index.values if index is not None else None)
    stats = model.stats
    stats["shape_values"] = len(values)
    if model.dialect != ONNX:
        unk = _unknown_ir(values)
        stats["shape_unknown_onnx"] = stats["shape_unknown_final"] = len(unk)
        f = ShapeFacts(unknown=unk)
        for v in model.graph.values.values():
            f.shapes[v] = None if v.shape is None else tuple(to_poly(d) for d in v.shape)
        return f
    before = _unknown_ir(values)
    stats["shape_unknown_onnx"] = len(before)
    facts = _reconcile(model, early) if early is not None else None
    if facts is None:
        facts = run(model)
        if early is not None:
            facts.path = early.path
    if facts.path == "reconciled" and index is not None and values is index.values:
        unk = index.unknown  # the early facts, kept as they were: so are their unknowns
    else:
        unk = _unknown_facts(values, facts)
    stats["shape_unknown_graphlint"] = len(unk)
    if unk and model.proto is not None and model.node_count <= ORT_FALLBACK_MAX_NODES:
        facts.ort_error = _ort_fallback(model, facts, unk)
        unk = _unknown_facts(values, facts)
    stats["shape_unknown_final"] = len(unk)
    facts.unknown = unk
    _write_back(facts, before)  # only values ONNX inference left (partly) unknown can gain dims
    return facts


def _reconcile(model: Model, early: ShapeFacts) -> ShapeFacts | None:
    """The early facts, made exactly what the full pass would compute now; None to run it afresh.

    The full pass merges each handler's shape with inference's (its own dims first), and skips
    handlers of ops that constrain nothing when inference knows the whole output. By induction
    over the nodes in order, the two passes agree up to the first node where they could part:
    an output whose early shape is not that merge, a value tracked as a shape value (or folded)
    whose inferred dtype says otherwise, a node that raised. The early pass must also have read
    the input shapes and constants' int-ness the full pass reads (else nothing is kept). Facts
    from that node on are dropped and the full pass resumes there, so the result is always the
    full pass's: the early pass can only save time, never change a finding. ``early.path`` says
    what happened ("reconciled", "resumed at node ...", "fallback: ...").
    """
    notes = early.early
    if notes is None:
        early.path = "fallback: not early facts"
        return None
    nodes = model.graph.nodes
    k, why = _divergence(model, early, notes)
    if k == 0:
        early.path = f"fallback: {why}"
        return None
    late = nodes[k:]
    # only nodes the early pass reached have facts to drop (it may have stopped short)
    _forget(early, notes, late if notes.stopped_at is None else nodes[k:notes.stopped_at])
    convert = _Pass(model, None).convert
    # an output's declaration is only compared where the full pass runs the producer's handler
    early.output_conflicts = [c for c in notes.conflicts if c[0].producer is not None and _full_pass_runs_handler(
        c[0].producer, [convert(o.shape) for o in c[0].producer.outputs])]
    early.early = None  # from now on lookups read the inferred dtypes like the full pass's
    if late:
        _Pass(model, None, facts=early).visit_all(late)
        early.path = f"resumed at node {k} of {len(nodes)}: {why}"
    else:
        early.path = "reconciled"
    return early


def _divergence(model: Model, early: ShapeFacts, notes: _EarlyNotes) -> tuple[int, str]:
    """Position of the first main-graph node whose early facts may differ from the full pass's,
    and why (the node count and "" when none does)."""
    for v, shape in notes.inputs.items():
        if v.shape != shape:
            return 0, f"input {v.name!r} changed shape"
    consts = notes.index.consts if notes.index is not None else model.graph.values.values()
    for v in consts:
        if v.const is not None and v.dtype != v.const.dtype and _shape_dtype(v.dtype) != _shape_dtype(v.const.dtype):
            return 0, f"constant {v.name!r} is typed {v.dtype}"
    nodes = model.graph.nodes
    k, why = len(nodes), ""
    if notes.stopped_at is not None:
        k, why = notes.stopped_at, "the early pass stopped there"
    if notes.crashed_at is not None and notes.crashed_at < k:
        k, why = notes.crashed_at, "a node raised in the early pass"
    convert = _Pass(model, None).convert
    shapes, folded = early.shapes, notes.folded
    for i in _suspects(notes, k, convert):
        node = nodes[i]
        outs = node.outputs
        if node in folded:
            continue
        bases = [convert(v.shape) for v in outs]
        runs = _full_pass_runs_handler(node, bases)
        mismatch = next((v for v, base in zip(outs, bases, strict=True)
                         if (_merge(shapes.get(v), base) if runs else base) != shapes.get(v)), None)
        if mismatch is not None:
            k, why = i, (f"inference says {shape_text(convert(mismatch.shape))} for {mismatch.name!r}, "
                         f"early {shape_text(shapes.get(mismatch))}")
            break
    # values whose early shape value or folded data assumed an int dtype inference contradicts
    typed = [v for v in (*early.consts, *early.svals) if v.const is None and v.producer is not None and (
        not _shape_dtype(v.dtype) if v in early.svals else
        _shape_dtype(v.dtype) != _shape_dtype(str(early.consts[v].dtype)))]
    if typed:
        position = {node: i for i, node in enumerate(nodes)}
        for v in typed:
            i = position.get(v.producer, k)  # type: ignore[arg-type]
            if i < k:
                k, why = i, f"{v.name!r} is typed {v.dtype}"
    return k, why


def _suspects(notes: _EarlyNotes, k: int, convert: Callable[[Any], SShape]) -> list[int]:
    """Positions below ``k`` of the nodes whose early facts need a closer look, in order: all but
    the common case, a node with one output whose early shape is exactly inference's (whatever
    the op). Compared with map/compress over the early index rather than a Python loop per node,
    and each inferred shape converted once (the loader shares one tuple per distinct type)."""
    index = notes.index
    if index is None:  # early facts not made by shapes_early: look at every node
        return list(range(k))
    inferred = list(map(_SHAPE, index.outs))
    by_id = dict(zip(map(id, inferred), inferred, strict=True))
    polys = {key: convert(shape) for key, shape in by_id.items()}
    differ = compress(index.singles, map(ne, index.shapes, map(polys.__getitem__, map(id, inferred))))
    return sorted(i for i in (*differ, *index.others) if i < k)


def _forget(facts: ShapeFacts, notes: _EarlyNotes, late: list[Node]) -> None:
    """Drop what the early pass found from these nodes on (the full pass redoes them)."""
    gone = set(late)
    for node in late:
        for v in node.outputs:
            facts.shapes.pop(v, None)
            facts.svals.pop(v, None)
            facts.consts.pop(v, None)
            facts.build_const.discard(v)
    if gone:
        facts.events = [e for e in facts.events if e.node not in gone]
        notes.conflicts = [c for c in notes.conflicts if c[0].producer not in gone]


def _full_pass_runs_handler(node: Node, bases: list[SShape]) -> bool:
    """Whether the full pass runs the node's handler, given inference's output shapes (see visit)."""
    if node.domain not in _HANDLED_DOMAINS or node.op_type not in HANDLERS:
        return False
    op_known = len(bases) == 1 and bases[0] is not None and None not in bases[0]
    return not (op_known and node.op_type not in CHECKED)


def _ort_symbolic_shape_infer() -> Any:
    """Load onnxruntime's symbolic_shape_infer.py by file, bypassing ``onnxruntime.tools``'s
    package __init__, which imports torch when installed (8-10 s on the lint path)."""
    import importlib.util
    import sys

    name = "graphlint._ort_symbolic_shape_infer"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("onnxruntime is not installed")
    path = os.path.join(next(iter(spec.submodule_search_locations)), "tools", "symbolic_shape_infer.py")
    mod_spec = importlib.util.spec_from_file_location(name, path)
    if mod_spec is None or mod_spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[name] = module
    mod_spec.loader.exec_module(module)
    return module


def _ort_fallback(model: Model, facts: ShapeFacts, unknown: list[Value]) -> str | None:
    """Fill what is still unknown from onnxruntime's symbolic shape inference; return its crash, if any."""
    try:
        import io
        import logging
        from contextlib import redirect_stderr, redirect_stdout

        module = _ort_symbolic_shape_infer()
        logging.getLogger("onnxruntime.tools.symbolic_shape_infer").setLevel(logging.CRITICAL)
        sink = io.StringIO()
        with redirect_stdout(sink), redirect_stderr(sink):
            out = _run_ort_inference(module, model.proto)
    except Exception as e:  # its crashes are findings (GL3009), never ours
        text = str(e).strip().splitlines()
        return f"{type(e).__name__}: {text[0] if text else ''}".strip().rstrip(":")
    if out is None:
        return "returned no model"
    g = out.graph
    found: dict[str, Any] = {vi.name: vi.type for vi in (*g.value_info, *g.output)}
    from graphlint.load.onnx_loader import _dims

    for v in unknown:
        t = found.get(v.name)
        if t is None:
            continue
        _, dims = _dims(t)
        if dims is None:
            continue
        fill = tuple(_known_to_us(facts, to_poly(d) if d not in ("", None) else None) for d in dims)
        facts.shapes[v] = _merge(facts.shapes.get(v), fill)
    return None


def _run_ort_inference(module: Any, proto: Any) -> Any:
    """SymbolicShapeInference.infer_shapes without its side effect: on incomplete inference the
    upstream method saves ``sym_shape_infer_temp.onnx`` and uuid-named data files into the
    current folder (the user's); this runs the same steps and only raises."""
    opset = module.get_opset(proto)
    if not opset or opset < 7:
        return None
    ssi = module.SymbolicShapeInference(2**31 - 1, True, True, 0)  # int_max, auto_merge, guess_rank, verbose
    done = False
    ssi._preprocess(proto)
    while ssi.run_:
        done = ssi._infer_impl()
    ssi._update_output_from_vi()
    if not done:
        raise Exception("Incomplete symbolic shape inference")
    return ssi.out_mp_


def _known_to_us(facts: ShapeFacts, d: SDim) -> SDim:
    """Keep onnxruntime's dims only when they are numbers or built from input symbols.

    With ``guess_output_rank`` it invents per-output names (``Op_0_o0__d0``) for ops it cannot
    infer: a guessed rank, not a known shape.
    """
    if d is None or d.is_const or all(s in facts.origins for s in d.symbols):
        return d
    return None


def _write_back(facts: ShapeFacts, values: list[Value]) -> None:
    """Refine the IR's shapes where ONNX inference left gaps (never contradicting it)."""
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
        v.shape = tuple(new)


# ------------------------------------------------------------------------------------
# helpers for rules


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
