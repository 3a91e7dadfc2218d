"""GL0007 impossible-dims: dimensions below -1, or shapes with more elements than int64 holds."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from graphlint.ir import INT64_MAX, ONNX, OPENVINO, Model, Value, impossible_shape
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote


class ImpossibleDims(Rule):
    """A declared dimension is below -1, or a shape has more elements than an int64 can count.

    ## What it checks
    The shapes the model declares: ONNX graph inputs, outputs and `value_info` (every graph),
    and every port of an OpenVINO IR. A `dim_value` below -1, or static dims whose product
    exceeds 2^63 - 1, describes a tensor that cannot exist. In an IR, a `<dim>` OpenVINO's
    reader refuses (below -1, not a number, `?`) is reported at its layer's line.

    ## Why it matters
    Such a graph input cannot be fed. The engines differ in how they fail: OpenVINO's ONNX
    frontend reads a negative dim as 0 (only empty tensors are accepted) and `compile_model`
    fails on an input too large to allocate; ONNX Runtime treats a negative dim as unknown but
    refuses every feed for an input of more than 2^63 - 1 elements; TensorRT's parser turns a
    negative dim into -1. An error where the target fails, a warning where it tolerates the
    dim (and for outputs and intermediate values, which the engines recompute). OpenVINO's IR
    reader refuses the whole .xml on a bad `<dim>`. A negative dim even aborts ONNX's own shape
    inference (https://github.com/onnx/onnx/issues/8481); graphlint hides such dims from it.

    ## Example
    `helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, -5])`, or an input declared
    `[1099511627776, 1099511627776]`.

    ## Fix
    Use a named dim (`dim_param`, e.g. `"batch"`) or leave the dim unset for a dynamic size,
    and the real static size otherwise; re-export the IR with `openvino.save_model`.
    """

    id = "GL0007"
    name = "impossible-dims"
    severity = Severity.ERROR
    dialects = frozenset({ONNX, OPENVINO})
    source = "engine runs (onnxruntime 1.32, openvino 2026.4) and onnx-tensorrt convertOnnxDims"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        model = ctx.model
        for issue in model.issues:
            if issue.kind == "dim-refused":  # OpenVINO IR: the loader saw the raw <dim> text
                f = ctx.finding(issue.node, issue.message[:1].upper() + issue.message[1:]
                                + "; OpenVINO's read_model refuses the model.", kind=f"dim {issue.key}")
                yield f
        if not _suspect(model):
            return
        for v_name, graph_path, shape, where in _declared(model):
            yield from self._check(ctx, v_name, graph_path, shape, where)

    def _check(self, ctx: RuleContext, name: str, graph_path: str, shape: tuple, where: str) -> Iterator[Finding]:
        value: Value | str = _value(ctx.model, graph_path, name) or name
        is_input = where == "input"
        what = {"input": "Graph input", "output": "Graph output"}.get(where, "Value")
        negative = [str(d) for d in shape if isinstance(d, int) and d < -1]
        if negative:
            zero = is_input and ctx.target.option("negative_input_dim") == "zero"
            engine = (f"{ctx.target.title} reads such a dim as 0, so only empty tensors can be fed" if zero else
                      f"{ctx.target.title} treats such a dim as dynamic" if is_input
                      and ctx.target.option("negative_input_dim") == "dynamic" else
                      "no dim can be negative (-1 at most, meaning unknown)")
            yield ctx.finding(None, f"{what} {quote(name)} declares {_fmt(shape)}, with {', '.join(negative)} "
                                    f"below -1: {engine}.",
                              value=value, severity=Severity.ERROR if zero else Severity.WARNING, kind="negative")
        static = [d for d in shape if isinstance(d, int)]
        if 0 in static or any(d < 0 for d in static) or math.prod(static) <= INT64_MAX:
            return
        exact = len(static) == len(shape)  # a symbolic dim could still be 0
        refused = is_input and exact and ctx.target.option("input_over_int64") == "refused"
        engine = (f"{ctx.target.title} cannot be fed such an input" if refused else
                  "no tensor can have that many")
        yield ctx.finding(None, f"{what} {quote(name)} declares {_fmt(shape)}: more than 2^63 - 1 elements; "
                                f"{engine}.", value=value,
                          severity=Severity.ERROR if refused else Severity.WARNING, kind="overflow")


def _suspect(model: Model) -> bool:
    """Whether the model has a shape with a dim below -1 or too many elements. The loaders flag
    one ("impossible-dims": from the few dozen distinct types ONNX inference returns, the dims
    they hid from it, the IR's ports), so the declared types are read from the protobuf only
    for a model that has one; the main graph's declared inputs and outputs are checked here."""
    if any(i.kind == "impossible-dims" for i in model.issues):
        return True
    return any(impossible_shape(shape) for _, shape in model.declared_io.values())


def _declared(model: Model) -> Iterator[tuple[str, str, tuple, str]]:
    """(value name, graph path, declared shape, "input" | "output" of the main graph | "") for every
    declared shape with a bad dim that its producer's inputs do not already have (an exporter or
    shape inference copied it downstream: it is reported once, where it starts)."""
    if model.proto is None:  # OpenVINO IR: every port declares its dims
        bad = {(g.path, v.name): (v.shape, "input" if v.is_input and g.owner is None else "")
               for g in model.graph.graphs() for v in g.values.values() if v.shape and impossible_shape(v.shape)}
    else:
        bad = dict(_declared_onnx(model))
    for (path, name), (shape, where) in bad.items():
        v = _value(model, path, name)
        if where == "input" or v is None or not _inherited(v, shape, bad):
            yield name, path, shape, where


def _declared_onnx(model: Model) -> Iterator[tuple[tuple[str, str], tuple[tuple, str]]]:
    nodes = {(n.graph.path, n.index): n for n in model.graph.walk()}
    stack = [("main", model.proto.graph)]
    while stack:  # the protobuf graphs, addressed by the IR's graph paths (as GL0001 walks them)
        path, gp = stack.pop()
        inits = {t.name for t in gp.initializer}
        for where, infos in (("input", gp.input), ("output", gp.output), ("value_info", gp.value_info)):
            for vi in infos:
                if path == "main" and where != "value_info":  # the proto's outputs carry inferred types
                    shape = model.declared_io.get(vi.name, (None, None))[1]
                else:
                    shape = _shape(vi.type)
                if shape and impossible_shape(shape) and vi.name not in inits:
                    yield (path, vi.name), (shape, where if path == "main" and where != "value_info" else "")
        for i, np_ in enumerate(gp.node):
            node = nodes.get((path, i))
            for attr, sub in (node.subgraphs.items() if node is not None else ()):
                name, _, k = attr.partition("[")
                a = next((a for a in np_.attribute if a.name == name), None)
                if a is not None and a.type == a.GRAPH:
                    stack.append((sub.path, a.g))
                elif a is not None and a.type == a.GRAPHS and k.rstrip("]").isdigit() and int(k.rstrip("]")) < len(a.graphs):
                    stack.append((sub.path, a.graphs[int(k.rstrip("]"))]))


def _shape(tp: Any) -> tuple | None:
    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tp.tensor_type.shape.dim)


def _inherited(v: Value, shape: tuple, declared: dict[tuple[str, str], tuple[tuple, str]]) -> bool:
    """Whether an input of ``v``'s producer already has the same offending dims, as declared
    (``declared``) or as inferred."""
    producer = v.producer
    if producer is None:
        return False
    bad = [d for d in shape if isinstance(d, int) and (d < -1 or d > 1)]
    for u in producer.inputs:
        if u is not None:
            have = declared.get((u.graph.path, u.name), (u.shape, ""))[0]
            if have and all(d in have for d in bad):
                return True
    return False


def _value(model: Model, graph_path: str, name: str) -> Value | None:
    for g in model.graph.graphs():
        if g.path == graph_path:
            return g.values.get(name)
    return None


def _fmt(shape: tuple) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
