"""Small helpers for editing an onnx.ModelProto in place (used by the ONNX passes)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS = "com.microsoft"


def is_default(domain: str) -> bool:
    return domain in ("", "ai.onnx")


def opset(model: onnx.ModelProto, domain: str = "") -> int:
    for o in model.opset_import:
        if (is_default(o.domain) and is_default(domain)) or o.domain == domain:
            return o.version
    return 0


def ensure_opset(model: onnx.ModelProto, domain: str, version: int) -> None:
    for o in model.opset_import:
        if o.domain == domain:
            return
    model.opset_import.append(helper.make_opsetid(domain, version))


def label(node: onnx.NodeProto) -> str:
    """Same spelling as graphlint.ir.Node.label: the name, or op type and first output."""
    if node.name:
        return node.name
    return f"{node.op_type}->{node.output[0] if node.output else '?'}"


def find_nodes(graph: onnx.GraphProto, labels: Iterable[str] | str | None) -> list[onnx.NodeProto]:
    if labels is None:
        return []
    wanted = {labels} if isinstance(labels, str) else set(labels)
    return [n for n in graph.node if label(n) in wanted]


def select(graph: onnx.GraphProto, request: dict[str, Any], op_types: set[str] | None = None,
           domains: set[str] | None = None) -> list[onnx.NodeProto]:
    """Nodes a request names (``node`` or ``nodes``), or every matching node when it names none."""
    names = request.get("node") or request.get("nodes")
    nodes = find_nodes(graph, names) if names else list(graph.node)
    if op_types is not None:
        nodes = [n for n in nodes if n.op_type in op_types]
    if domains is not None:
        nodes = [n for n in nodes if (MS if n.domain == MS else "") in domains]
    return nodes


def attr(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    for a in node.attribute:
        if a.name == name:
            v = helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


def set_attr(node: onnx.NodeProto, name: str, value: Any) -> None:
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    node.attribute.append(helper.make_attribute(name, value))


def initializers(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    return {t.name: t for t in graph.initializer}


def const_value(graph: onnx.GraphProto, name: str) -> np.ndarray | None:
    """The value of an initializer or Constant output, or None."""
    for t in graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in graph.node:
        if n.op_type == "Constant" and n.output and n.output[0] == name and is_default(n.domain):
            for a in n.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
                if a.name == "value_float":
                    return np.array(a.f, np.float32)
                if a.name == "value_int":
                    return np.array(a.i, np.int64)
                if a.name == "value_floats":
                    return np.array(list(a.floats), np.float32)
                if a.name == "value_ints":
                    return np.array(list(a.ints), np.int64)
    return None


def consumers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    out: dict[str, list[onnx.NodeProto]] = {}
    for n in graph.node:
        for i in n.input:
            if i:
                out.setdefault(i, []).append(n)
    for n in graph.node:  # names read by subgraphs count as uses too
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                for name in outer_names(g):
                    out.setdefault(name, []).append(n)
    return out


def outer_names(graph: onnx.GraphProto) -> set[str]:
    """Names a subgraph reads from enclosing scopes."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    used: set[str] = set()
    for n in graph.node:
        used.update(i for i in n.input if i)
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                used |= outer_names(g)
        defined.update(n.output)
    used.update(o.name for o in graph.output)
    return used - defined


def producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {o: n for n in graph.node for o in n.output if o}


def value_info(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    g = model.graph
    return {v.name: v for v in itertools.chain(g.value_info, g.input, g.output)}


def shape_of(vi: onnx.ValueInfoProto | None) -> list[int | str | None] | None:
    if vi is None or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in vi.type.tensor_type.shape.dim]


def infer(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # passes use inferred facts opportunistically; verification is strict
        return model


class Namer:
    """Fresh, readable value/node names that cannot collide with names in the model."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.used: set[str] = set()
        for g in _graphs(model.graph):
            self.used.update(i.name for i in g.input)
            self.used.update(o.name for o in g.output)
            self.used.update(t.name for t in g.initializer)
            for n in g.node:
                self.used.update(n.output)
                self.used.add(n.name)

    def __call__(self, base: str) -> str:
        name = base
        k = 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    stack.extend(a.graphs)


class Builder:
    """Emit standard-ONNX nodes at the model's opset (e.g. ReduceMean axes as attribute or input)."""

    def __init__(self, model: onnx.ModelProto, prefix: str, namer: Namer | None = None) -> None:
        self.model = model
        self.opset = opset(model)
        self.new = namer or Namer(model)
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, value: Any, dtype: Any = np.float32, name: str = "c") -> str:
        arr = np.asarray(value, dtype=dtype)
        n = self.new(f"{self.prefix}/{name}")
        self.inits.append(numpy_helper.from_array(arr, n))
        return n

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, out: list[str] | None = None,
           **attrs: Any) -> Any:
        outs = out or [self.new(f"{self.prefix}/{op_type}_out") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.new(f"{self.prefix}/{op_type}"),
                                           **attrs))
        return outs[0] if len(outs) == 1 else outs

    def reduce(self, op_type: str, x: str, axes: list[int], keepdims: int = 1, out: list[str] | None = None) -> str:
        # ReduceSum took axes as an input from opset 13, the other reductions from opset 18.
        as_input = self.opset >= (13 if op_type == "ReduceSum" else 18)
        if as_input:
            return self.op(op_type, [x, self.const(axes, np.int64, "axes")], out=out, keepdims=keepdims)
        return self.op(op_type, [x], out=out, axes=axes, keepdims=keepdims)

    def unsqueeze(self, x: str, axes: list[int]) -> str:
        if self.opset >= 13:
            return self.op("Unsqueeze", [x, self.const(axes, np.int64, "axes")])
        return self.op("Unsqueeze", [x], axes=axes)

    def split(self, x: str, sizes: list[int], axis: int) -> list[str]:
        if self.opset >= 13:
            return self.op("Split", [x, self.const(sizes, np.int64, "split")], n_out=len(sizes), axis=axis)
        return self.op("Split", [x], n_out=len(sizes), axis=axis, split=sizes)

    def layer_norm(self, x: str, gamma: str, beta: str | None, eps: float, out: str,
                   rms: bool = False) -> None:
        """LayerNormalization (opset >= 17) or its decomposition; rms: no mean subtraction."""
        if not rms and self.opset >= 17:
            ins = [x, gamma] + ([beta] if beta else [])
            self.op("LayerNormalization", ins, out=[out], axis=-1, epsilon=float(eps))
            return
        if rms:
            centred = x
        else:
            mean = self.reduce("ReduceMean", x, [-1])
            centred = self.op("Sub", [x, mean])
        var = self.reduce("ReduceMean", self.op("Mul", [centred, centred]), [-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.const(eps, name="eps")])])
        normed = self.op("Div", [centred, std])
        if beta:
            self.op("Add", [self.op("Mul", [normed, gamma]), beta], out=[out])
        else:
            self.op("Mul", [normed, gamma], out=[out])

    def replace(self, graph: onnx.GraphProto, old: onnx.NodeProto) -> None:
        """Put the emitted nodes where ``old`` was (keeps topological order) and add the constants."""
        idx = index_of(graph, old)
        del graph.node[idx]
        for k, n in enumerate(self.nodes):
            graph.node.insert(idx + k, n)
        graph.initializer.extend(self.inits)
        self.nodes, self.inits = [], []


def index_of(graph: onnx.GraphProto, node: onnx.NodeProto) -> int:
    """Position of this very node (protobuf ``==`` compares contents, so ``list.index`` will not do)."""
    return next(i for i, n in enumerate(graph.node) if n is node)


def remove_node(graph: onnx.GraphProto, node: onnx.NodeProto) -> None:
    del graph.node[index_of(graph, node)]


def topo_sort(graph: onnx.GraphProto, outer: Iterable[str] = ()) -> None:
    """Reorder graph.node topologically (stable), after passes that insert nodes out of order;
    ``outer``: the names a subgraph sees from its enclosing graphs."""
    avail = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""} | set(outer)
    pending = list(graph.node)
    ordered: list[onnx.NodeProto] = []
    outer_cache: dict[int, set[str]] = {}
    while pending:
        rest = []
        for n in pending:
            need = set(n.input)
            if id(n) not in outer_cache:
                names: set[str] = set()
                for a in n.attribute:
                    for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                        names |= outer_names(g)
                outer_cache[id(n)] = names
            need |= outer_cache[id(n)]
            if need <= avail:
                ordered.append(n)
                avail.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):  # a cycle or a name from an outer scope: keep as is
            ordered.extend(rest)
            break
        pending = rest
    del graph.node[:]
    graph.node.extend(ordered)


def clear_value_info(model: onnx.ModelProto, names: Iterable[str] | None = None) -> None:
    """Drop stale intermediate value_info (after a pass changed types); None drops all."""
    keep = [] if names is None else [v for v in model.graph.value_info if v.name not in set(names)]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)
