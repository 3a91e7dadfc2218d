"""The symbolic shape pass: one walk over the main graph in node order.

For each node the pass folds it with numpy when its inputs are small constants
(:mod:`.fold`), else runs the op's handler (:mod:`.handlers`) and merges its answer with the
shape ONNX inference found (the handler's own dims first), and tracks 1-D int outputs element
by element (:mod:`.svals`). Handlers record an event where an op needs two dims to agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from graphlint.analysis.shapes.facts import (
    MAX_CONST,
    MAX_SVAL,
    SHAPE_DTYPES,
    Event,
    SDim,
    ShapeFacts,
    SShape,
    contradicts,
    merge,
    to_polys,
    unnamed_symbol,
)
from graphlint.analysis.shapes.fold import FOLD, fold
from graphlint.analysis.shapes.handlers import CHECKED, HANDLED_DOMAINS, HANDLERS
from graphlint.analysis.shapes.openvino import OV_AS_ONNX, dynamic_dims, ov_symbol, view
from graphlint.analysis.shapes.svals import SVAL_OPS
from graphlint.analysis.symbolic import ONE, Poly, to_poly
from graphlint.ir import ONNX_DOMAIN, OPENVINO, Model, Node, Shape, Value

# IR layers whose twin records no events and carries no shape values: with every output dim
# known from the ports, the twin has nothing to add
_PLAIN = frozenset(ov for ov, spec in OV_AS_ONNX.items() if spec.op not in CHECKED and spec.op not in SVAL_OPS)
_ERRORS = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError)


class ShapeWalk:
    """One walk over the main graph; ``env`` binds symbols to numbers (a concrete evaluation),
    ``base`` gives each value's IR shape (default: as ONNX inference left it)."""

    def __init__(self, model: Model, env: Mapping[str, int] | None = None,
                 base: Callable[[Value], Shape] | None = None) -> None:
        self.model = model
        self.env = env
        self.f = ShapeFacts(env=env)
        self._ir_shape = base
        self._converted: dict[tuple, SShape] = {}  # IR shape -> polys (shapes repeat a lot)
        self.shape = self.f.shape  # handlers ask for input shapes all the time: one call, not two
        self.ir = model.dialect == OPENVINO  # IR layers run as their ONNX twins (.openvino)
        # values whose computed dims carry a dynamic input dim where the file declares a number
        # (an exporter's trace-time value_info): their readers are computed, not taken as declared
        self.overruled: set[Value] = set()

    def base(self, v: Value) -> SShape:
        """The value's IR shape as polys (symbols bound when evaluating)."""
        shape = v.shape if self._ir_shape is None else self._ir_shape(v)
        if shape is None:
            return None
        dims = self._converted.get(shape)
        if dims is None:
            dims = self._converted[shape] = to_polys(shape, self.env)
        return dims

    def declared(self, v: Value, base: SShape) -> SShape:
        """A graph output's shape as the file declares it (before inference merged into it); a
        negative dim (paddle2onnx's -1 for a dynamic one: GL4007 reports it) declares no size."""
        io = self.model.declared_io.get(v.name)
        if io is None:
            return base
        shape = io[1]
        return to_polys(None if shape is None else tuple(None if type(d) is int and d < 0 else d for d in shape))

    def run(self) -> ShapeFacts:
        f = self.f
        g = self.model.graph
        for v in g.inputs:
            if v.const is not None:
                continue
            shape = v.shape
            if shape is None:
                f.shapes[v] = None
                continue
            dims: list[SDim] = []
            dynamic = dynamic_dims(shape, v.rt_info.get("bounds")) if self.ir else None
            for axis, d in enumerate(shape):
                if dynamic is not None:  # IR: -1 is how a Parameter declares a dim dynamic
                    if not dynamic[axis]:
                        dims.append(to_poly(d))
                        continue
                    p = Poly.sym(ov_symbol(v.name, axis))
                # an empty dim_param is no name (writers that clear the name leave "")
                elif d is not None and d != "":
                    p = to_poly(d)
                else:
                    p = Poly.sym(unnamed_symbol(v.name, axis))
                for s in p.symbols:
                    f.origins.setdefault(s, []).append((v.name, axis))
                dims.append(p.subs(self.env) if self.env else p)
            f.shapes[v] = tuple(dims)
        visit = self.visit_ir if self.ir else self.visit
        for node in g.nodes:
            try:
                visit(node)
            except Exception:  # a malformed node must not cost every shape rule its answer
                for v in node.outputs:
                    f.shapes.setdefault(v, self.base(v))
        return f

    def visit_ir(self, node: Node) -> None:
        """An IR layer: as its ONNX twin, or with the dims its ports declare when it has none
        (or when its twin checks nothing, carries no values and its ports' dims are all known)."""
        op = node.op_type
        if op == "Parameter":
            return  # a graph input: run() gave it its symbols
        outs = node.outputs
        if op != "Const":
            spec = OV_AS_ONNX.get(op)
            if spec is not None and not self._ports_suffice(node, spec.fold):
                twin = view(node, spec, self.f)
                if twin is not None:
                    self.visit(twin, spec.fold)
                    return
        shapes = self.f.shapes
        for v in outs:
            shapes[v] = self.base(v)

    def _ports_suffice(self, node: Node, folds: bool) -> bool:
        """The twin would add nothing: it records no events and carries no shape values, every
        output dim is a number on the ports, and it has no constant inputs to fold."""
        return (node.op_type in _PLAIN and self._static(node.outputs)
                and not (folds and self._constant_inputs(node.inputs)[1]))

    def _static(self, outs: list[Value]) -> bool:
        for v in outs:
            b = self.base(v)
            if b is None or None in b or any(not d.is_const for d in b):  # type: ignore[union-attr]
                return False
        return True

    def visit(self, node: Node, values: bool = True) -> None:
        """``values``: fold constants and track shape values through the node (its ONNX op's values
        are its own), else its output shapes only."""
        f = self.f
        outs = node.outputs
        ins = node.inputs
        op = node.op_type
        if values and node.domain == ONNX_DOMAIN and ins:
            all_const, foldable = self._constant_inputs(ins)
            if all_const:
                f.build_const.update(outs)
            if foldable and outs and op in FOLD and self._try_fold(node, ins, outs):
                return
        if op == "Constant":
            f.build_const.update(outs)
        handler = HANDLERS.get(op) if node.domain in HANDLED_DOMAINS else None
        results: list[SShape] = []
        if handler is not None and (op in CHECKED or not self._known(outs, ins)):
            try:
                results = handler(node, self)
            except _ERRORS:
                results = []  # malformed node: leave its outputs to ONNX inference
        shapes = f.shapes
        for i, v in enumerate(outs):
            mine = results[i] if i < len(results) else None
            base = self.base(v)
            if mine is None:  # nothing computed here: ONNX inference's shape
                shapes[v] = base
                continue
            if v.is_output and not self.env:
                declared = self.declared(v, base)
                if contradicts(declared, mine):
                    f.output_conflicts.append((v, declared, mine))
            shapes[v] = merge(mine, base)
            if base is not None and mine != base and _overrules(mine, base):
                self.overruled.add(v)
        if values and op in SVAL_OPS and outs and _maybe_shape_value(outs[0], shapes.get(outs[0])):
            self._shape_value(node, outs[0])

    def _known(self, outs: list[Value], ins: list[Value | None]) -> bool:
        """Inference already knows the node's one output and no input is overruled: an op that
        constrains nothing has nothing to add."""
        if len(outs) != 1:
            return False
        base = self.base(outs[0])
        overruled = self.overruled
        return base is not None and None not in base and not (overruled and any(v in overruled for v in ins))

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
        folded = fold(node, arrays)
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
        except _ERRORS:
            sv = None
        if sv is not None and len(sv) <= MAX_SVAL:
            f.svals[out] = sv
            if all(d is not None and d.is_const for d in sv):
                arr = np.array([d.value for d in sv], dtype=np.int64)  # type: ignore[union-attr]
                shp = f.shapes.get(out)
                scalar = shp is not None and len(shp) == 0 and arr.size == 1
                f.consts.setdefault(out, arr.reshape(()) if scalar else arr)

    # helpers for handlers
    def event(self, kind: str, node: Node, a: Poly, b: Poly, va: Value | None, vb: Value | None,
              axis: int | None) -> None:
        # an IR layer's ONNX twin (.openvino.OvView) records its events on the layer
        self.f.events.append(Event(kind, getattr(node, "origin", node), a, b, va, vb, axis))

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


def _overrules(mine: SShape, base: SShape) -> bool:
    """The walk computes a symbol where the file declares a number (torch.export's value_info
    keeps the batch it specialized to while the input still says ``batch``)."""
    return len(mine) == len(base) and any(  # type: ignore[arg-type]
        m is not None and b is not None and b.is_const and not m.is_const and m.symbols
        for m, b in zip(mine, base, strict=True))  # type: ignore[arg-type]


def _maybe_shape_value(v: Value, shape: SShape) -> bool:
    """Only int tensors of rank 0 or 1 can carry dims (cheap filter before the value ops)."""
    return (v.dtype is None or v.dtype in SHAPE_DTYPES) and (shape is None or len(shape) <= 1)
