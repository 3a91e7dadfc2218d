"""Input-contract and shape passes: uint8 images, INT64/DOUBLE narrowing, static and shared dims.

These change the model's interface (an input's dtype or shape), so each returns an
``input_map`` telling the verifier how a caller's feed for the old interface maps onto the new
one; with that map the rewritten model is checked for equal outputs like any other pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass

INT32 = np.iinfo(np.int32)


def _names(requests: list[dict[str, Any]], key: str) -> list[str] | None:
    """Names the requests give under ``key`` (None when any request gives none: 'all')."""
    out: list[str] = []
    for r in requests or [{}]:
        v = r.get(key)
        if not v:
            return None
        out.extend([v] if isinstance(v, str) else v)
    return out


def _rewire(graph: onnx.GraphProto, old: str, new: str, skip: onnx.NodeProto | None = None) -> None:
    """Make every reader of ``old`` (nodes, subgraphs, graph outputs) read ``new``."""
    for n in graph.node:
        if n is skip:
            continue
        for k, name in enumerate(n.input):
            if name == old:
                n.input[k] = new
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                if old in gu.outer_names(g):
                    _rewire(g, old, new)
    for o in graph.output:
        if o.name == old:
            o.name = new


def _elem(vi: onnx.ValueInfoProto) -> int:
    return vi.type.tensor_type.elem_type


@register_pass
class InputCastNormalize(Pass):
    """Who owns the uint8 -> float conversion of an image input.

    side=caller: the input becomes float32 in [0,1] (the caller normalises; the model scales by 255
    to keep its results); side=model: the input becomes float32 holding 0..255; side=graph: the
    input stays uint8 and the graph converts it right at the input: a Cast first when uint8 feeds
    other ops (exact), or, when it already feeds only Casts, a Div by 255 after them (the graph
    expected [0,1]: this changes results on purpose).
    """

    name = "input-cast-normalize"
    preserves_results = False  # verified one at a time; exact unless side=graph scales

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        changes, skipped, imap = [], [], {}
        sides: dict[str, str] = {}
        for r in requests or [{}]:
            for i in g.input:
                if (not r.get("input") or r["input"] == i.name) and _elem(i) == TensorProto.UINT8:
                    sides[i.name] = r.get("side") or "caller"
        namer = gu.Namer(model)
        scaled_any = False
        for inp in g.input:
            side = sides.get(inp.name)
            if side is None:
                continue
            if side == "graph":
                change, scaled = _graph_side(model, inp.name, namer)
                scaled_any |= scaled
                if change:
                    changes.append(change)
                continue
            if side not in ("caller", "model"):
                skipped.append(f"{inp.name!r}: unknown side {side!r} (use caller, model or graph)")
                continue
            raw = namer(f"{inp.name}/pixels")  # float32 holding 0..255, what the old uint8 meant
            inp.type.tensor_type.elem_type = TensorProto.FLOAT
            new_nodes = []
            if side == "caller":
                k = namer(f"{inp.name}/255")
                g.initializer.append(numpy_helper.from_array(np.array(255.0, np.float32), k))
                scaled = namer(f"{inp.name}/scaled")
                new_nodes += [helper.make_node("Mul", [inp.name, k], [scaled], name=namer(f"{inp.name}/Mul255")),
                              helper.make_node("Round", [scaled], [raw], name=namer(f"{inp.name}/Round"))]
                imap[inp.name] = ("float32", lambda a: (a.astype(np.float32) / np.float32(255.0)))
            else:
                new_nodes.append(helper.make_node("Identity", [inp.name], [raw], name=namer(f"{inp.name}/raw")))
                imap[inp.name] = ("float32", lambda a: a.astype(np.float32))
            as_u8 = namer(f"{inp.name}/uint8")
            cast_back = helper.make_node("Cast", [raw], [as_u8], name=namer(f"{inp.name}/CastU8"), to=TensorProto.UINT8)
            users = [n for n in g.node if inp.name in n.input]
            for n in users:
                # A Cast to float32 of the uint8 input is exactly the float pixels: read them directly.
                if n.op_type == "Cast" and gu.attr(n, "to") == TensorProto.FLOAT and gu.is_default(n.domain):
                    n.op_type, n.input[0] = "Identity", raw
                    del n.attribute[:]
                else:
                    for k2, name in enumerate(n.input):
                        if name == inp.name:
                            n.input[k2] = as_u8
            if any(as_u8 in n.input for n in g.node) or any(o.name == inp.name for o in g.output):
                new_nodes.append(cast_back)
                for o in g.output:
                    if o.name == inp.name:
                        skipped.append(f"{inp.name!r} is also a graph output; left as is")
            for k2, n in enumerate(new_nodes):
                g.node.insert(k2, n)
            what = "in [0,1]; the model scales by 255" if side == "caller" else "holding 0..255 pixel values"
            changes.append(f"input {inp.name!r}: uint8 -> float32 {what}")
        if changes:
            gu.clear_value_info(model)
        return PassResult(model, bool(changes), changes, imap, skipped, changes_results=scaled_any)


def _graph_side(model: onnx.ModelProto, name: str, namer: gu.Namer) -> tuple[str | None, bool]:
    """Keep the uint8 input; convert in the graph. Returns (change line, whether results change)."""
    g = model.graph
    users = [n for n in g.node if name in n.input]
    casts = [n for n in users if n.op_type == "Cast" and gu.attr(n, "to") == TensorProto.FLOAT]
    if users and len(casts) == len(users):
        # The boundary is already a Cast: what is missing is the [0,1] scaling the graph expects.
        k = namer(f"{name}/255")
        g.initializer.append(numpy_helper.from_array(np.array(255.0, np.float32), k))
        for c in casts:
            old = c.output[0]
            raw = namer(f"{old}/0_255")
            c.output[0] = raw
            idx = gu.index_of(g, c)
            g.node.insert(idx + 1, helper.make_node("Div", [raw, k], [old], name=namer(f"{name}/Div255")))
        return f"input {name!r}: Div by 255 after its Cast (the graph expects [0,1]; results change)", True
    # uint8 feeds other ops: cast right at the input so everything after it runs on float.
    as_f = namer(f"{name}/float")
    _rewire(g, name, as_f)
    g.node.insert(0, helper.make_node("Cast", [name], [as_f], name=namer(f"{name}/CastF32"), to=TensorProto.FLOAT))
    for n in g.node:  # Casts to float32 downstream are now no-ops
        if n.op_type == "Cast" and gu.attr(n, "to") == TensorProto.FLOAT and n.input and n.input[0] == as_f:
            n.op_type = "Identity"
            del n.attribute[:]
    bad = [o.name for o in g.output if o.name == as_f]
    if bad:
        return None, False
    return f"input {name!r}: Cast to float32 right at the input (uint8 stays the input type)", False


@register_pass
class Int64ToInt32(Pass):
    """Narrow INT64 inputs (Cast back inside) and INT64 initializers whose values fit in INT32."""

    name = "int64-to-int32"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        wanted = _names(requests, "value")
        changes, skipped, imap = [], [], {}
        namer = gu.Namer(model)
        inputs = {i.name: i for i in g.input}
        inits = gu.initializers(g)
        targets = wanted if wanted is not None else [i.name for i in g.input if _elem(i) == TensorProto.INT64]
        front: list[onnx.NodeProto] = []
        for name in targets:
            if name in inputs and _elem(inputs[name]) == TensorProto.INT64:
                wide = namer(f"{name}/int64")
                _rewire(g, name, wide)
                inputs[name].type.tensor_type.elem_type = TensorProto.INT32
                front.append(helper.make_node("Cast", [name], [wide], name=namer(f"{name}/CastI64"),
                                              to=TensorProto.INT64))
                imap[name] = ("int32", _narrow)
                changes.append(f"input {name!r}: int64 -> int32 (Cast back to int64 inside)")
            elif name in inits and inits[name].data_type == TensorProto.INT64:
                arr = numpy_helper.to_array(inits[name])
                if arr.size and (arr.min() < INT32.min or arr.max() > INT32.max):
                    skipped.append(f"{name!r}: values outside the int32 range")
                    continue
                narrow = namer(f"{name}/int32")
                g.initializer.remove(inits[name])
                g.initializer.append(numpy_helper.from_array(arr.astype(np.int32), narrow))
                front.append(helper.make_node("Cast", [narrow], [name], name=namer(f"{name}/CastI64"),
                                              to=TensorProto.INT64))
                changes.append(f"initializer {name!r}: stored as int32 ({arr.size} values, all in range)")
            else:
                skipped.append(f"{name!r}: not an int64 graph input or initializer")
        for k, n in enumerate(front):
            g.node.insert(k, n)
        if changes:
            gu.clear_value_info(model)
        return PassResult(model, bool(changes), changes, imap, skipped)


def _narrow(a: np.ndarray) -> np.ndarray:
    if a.size and (a.min() < INT32.min or a.max() > INT32.max):
        raise ValueError("feed value outside the int32 range")
    return a.astype(np.int32)


@register_pass
class DoubleToFloat(Pass):
    """Every float64 tensor, input, output and Cast target in the graph becomes float32."""

    name = "double-to-float"
    after = ("fold-constants",)

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        D, F = TensorProto.DOUBLE, TensorProto.FLOAT
        changes, imap = [], {}
        for vi in (*g.input, *g.output):
            if _elem(vi) == D:
                vi.type.tensor_type.elem_type = F
                changes.append(f"{'input' if vi in g.input else 'output'} {vi.name!r}: float64 -> float32")
                if any(vi is i for i in g.input):
                    imap[vi.name] = ("float32", lambda a: a.astype(np.float32))
        for t in list(g.initializer):
            if t.data_type == D:
                new = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)
                t.CopyFrom(new)
                changes.append(f"initializer {t.name!r}: float64 -> float32")
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == D:
                    a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
                    changes.append(f"{gu.label(n)!r}: {a.name} tensor float64 -> float32")
                elif a.type == onnx.AttributeProto.INT and a.name in ("to", "dtype") and a.i == D:
                    a.i = F
                    changes.append(f"{gu.label(n)!r}: {a.name}=DOUBLE -> FLOAT")
        if changes:
            gu.clear_value_info(model)
        return PassResult(model, bool(changes), changes, imap)


def parse_shape(shape: Any) -> tuple[int | str, ...]:
    """``1x3x224x224`` or a list; a named dim in a list (``["batch", 3, 32, 32]``) stays dynamic."""
    if isinstance(shape, str):
        return tuple(int(d) for d in shape.lower().split("x"))
    return tuple(d if isinstance(d, str) else int(d) for d in shape)


@register_pass
class FixInputShape(Pass):
    """Make a dynamic input's dims static (shape from the finding or --shapes)."""

    name = "fix-input-shape"
    preserves_results = True  # for feeds of that shape; the verifier feeds exactly that shape

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        changes, skipped = [], []
        plan: dict[str, tuple[int | str, ...]] = {}
        for r in requests:
            if r.get("input"):
                shp = r.get("shape") or ctx.shapes.get(r["input"])
                if shp is None:
                    skipped.append(f"{r['input']!r}: no shape given (use --shapes {r['input']}:1x...)")
                    continue
                plan[r["input"]] = parse_shape(shp)
        inputs = {i.name: i for i in g.input}
        for name, shape in plan.items():
            vi = inputs.get(name)
            if vi is None:
                skipped.append(f"{name!r}: no such graph input")
                continue
            dims = vi.type.tensor_type.shape.dim
            if len(dims) != len(shape):
                skipped.append(f"{name!r}: rank {len(dims)} but shape {list(shape)} given")
                continue
            clash = [(d.dim_value, s) for d, s in zip(dims, shape, strict=True)
                     if d.HasField("dim_value") and isinstance(s, int) and d.dim_value != s]
            if clash:
                skipped.append(f"{name!r}: static dims {clash} disagree with {list(shape)}")
                continue
            if all(d.HasField("dim_value") for d in dims):
                continue
            for d, s in zip(dims, shape, strict=True):
                if isinstance(s, int):
                    d.Clear()
                    d.dim_value = s
            changes.append(f"input {name!r}: shape fixed to {'x'.join(map(str, shape))}")
        if changes:
            gu.clear_value_info(model)
            # Outputs whose dims were symbolic are recomputed by shape inference on the next load.
            for o in g.output:
                for d in o.type.tensor_type.shape.dim:
                    if d.HasField("dim_param"):
                        d.Clear()
        return PassResult(model, bool(changes), changes, skipped=skipped)


@register_pass
class ShareSymbol(Pass):
    """Give dims that must agree one symbolic name (params: inputs = ["name:axis", ...], symbol)."""

    name = "share-symbol"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        inputs = {i.name: i for i in model.graph.input}
        changes, skipped = [], []
        for r in requests:
            sym = r.get("symbol")
            for ref in r.get("inputs") or []:
                name, _, axis = (ref if isinstance(ref, str) else f"{ref[0]}:{ref[1]}").rpartition(":")
                vi = inputs.get(name)
                try:
                    d = vi.type.tensor_type.shape.dim[int(axis)] if vi is not None else None
                except (IndexError, ValueError):
                    d = None
                if d is None or not sym or d.HasField("dim_value"):
                    skipped.append(f"{ref!r}: not a dynamic dim of a graph input")
                    continue
                if d.dim_param != sym:
                    changes.append(f"input {name!r} axis {axis}: {d.dim_param or '?'} -> {sym}")
                    d.dim_param = sym
        return PassResult(model, bool(changes), changes, skipped=skipped)
