"""Build the IR from a parsed onnx.ModelProto: graphs, subgraphs, function bodies, tensors, types.

Graphs are converted breadth-first without recursion (deeply nested If/Loop bodies are safe),
node attributes are decoded only when a rule reads them, and weights are read only on demand
(external data only inside the model's folder, see graphlint.load.external). Types come last
(:meth:`Builder.apply_types`): from shape inference, or from the file when inference gave up.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Callable, Mapping
from operator import attrgetter, methodcaller
from sys import intern
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx

from graphlint import dtypes
from graphlint.errors import DataError
from graphlint.ir import (
    NO_RT_INFO,
    NO_SUBGRAPHS,
    ONNX_DOMAIN,
    Graph,
    LoadIssue,
    Node,
    Tensor,
    Value,
    impossible_shape,
    norm_domain,
)
from graphlint.load import external, inference
from graphlint.load.onnx_types import Types, decode_types, may_hold_graphs, subgraphs

_NAME = attrgetter("name")
_TENSOR = onnx.AttributeProto.TENSOR
_GRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
# How each plain attribute type is read (a dict lookup, not a chain of comparisons).
_PLAIN_ATTRS: dict[int, Callable[[Any], Any]] = {
    onnx.AttributeProto.INT: attrgetter("i"),
    onnx.AttributeProto.INTS: lambda a: list(a.ints),
    onnx.AttributeProto.FLOAT: attrgetter("f"),
    onnx.AttributeProto.FLOATS: lambda a: list(a.floats),
    onnx.AttributeProto.STRING: lambda a: a.s.decode("utf-8", "replace"),
    onnx.AttributeProto.STRINGS: lambda a: [s.decode("utf-8", "replace") for s in a.strings],
}
# Nodes whose attributes the builder reads: those that may hold graphs, and Constants.
_PICKED_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap", "Constant"})


class OnnxNode(Node):
    """A Node built from a NodeProto, decoding its attributes from it on first use."""

    __slots__ = ("_builder",)  # the NodeProto is found by graph and index: no wrapper kept per node

    def __init__(self, name: str, builder: Builder, graph: Graph, index: int, op_type: str,
                 domain: str, opset: int | None) -> None:
        super().__init__(op_type, name, graph, index, domain=domain, opset=opset)
        self.subgraphs = NO_SUBGRAPHS  # type: ignore[assignment]  # most nodes have none: one shared mapping
        self._builder = builder  # inputs and outputs: set by the builder
        self._meta = None  # read from the NodeProto on first use (only reports and origins ask)

    @property
    def attrs(self) -> dict[str, Any]:
        if self._attrs is None:  # a cache: allowed once frozen
            graph = self.graph
            object.__setattr__(self, "_attrs", decode_attrs(self._builder.node_protos[graph][self.index],
                                                            self._builder, graph.path))
        return self._attrs

    @property
    def metadata(self) -> Mapping[str, str]:
        if self._meta is None:  # a cache, like attrs
            object.__setattr__(self, "_meta", node_metadata(self._builder.node_protos[self.graph][self.index]))
        return self._meta


def node_metadata(np_: onnx.NodeProto) -> Mapping[str, str]:
    """A NodeProto's metadata_props and doc_string (strings that are not UTF-8 decoded with
    replacement characters: only reports read them)."""
    def text(s: str | bytes) -> str:
        return s.decode("utf-8", "replace") if isinstance(s, bytes) else s

    meta = {text(p.key): text(p.value) for p in np_.metadata_props}
    if np_.doc_string:
        meta.setdefault("doc_string", text(np_.doc_string))
    return MappingProxyType(meta) if meta else NO_RT_INFO


def decode_attrs(np_: onnx.NodeProto, builder: Builder, graph_path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in np_.attribute:
        t = a.type
        read = _PLAIN_ATTRS.get(t)
        if read is not None:
            out[a.name] = read(a)
        elif t == _TENSOR:
            out[a.name] = builder.tensor(a.t, graph_path)
        elif t in _GRAPH_ATTRS:
            continue  # available as node.subgraphs
        elif a.ref_attr_name:
            out[a.name] = ("@ref", a.ref_attr_name)
        else:
            try:
                out[a.name] = onnx.helper.get_attribute_value(a)
            except Exception:  # unknown or malformed attribute type
                out[a.name] = None
    return out


def _count(dims: Any) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


class _EmbeddedReader:
    """Reads an embedded tensor's data (a slotted object: a quarter of a closure's memory,
    and an LLM has tens of thousands of initializers)."""

    __slots__ = ("tp",)

    def __init__(self, tp: onnx.TensorProto) -> None:
        self.tp = tp

    def __call__(self) -> np.ndarray:
        tp = self.tp
        # to_array reshapes the data it has (never allocates the declared size); a mismatch
        # between dims and data, or an unknown type, becomes the documented DataError.
        try:
            return onnx.numpy_helper.to_array(tp)
        except UnicodeDecodeError:  # string tensors need not be UTF-8: keep the bytes
            strings = np.empty(len(tp.string_data), dtype=object)
            strings[:] = list(tp.string_data)
            if strings.size == _count(tp.dims):
                return strings.reshape(tuple(tp.dims))
            raise DataError(f"tensor {tp.name!r} declares {list(tp.dims)} but holds {strings.size} strings") from None
        except Exception as e:
            text = str(e).strip()
            raise DataError(f"tensor {tp.name!r} data cannot be read: "
                            f"{text.splitlines()[0] if text else type(e).__name__}") from None


def _constant_tensor(np_: onnx.NodeProto, builder: Builder, graph_path: str) -> Tensor | None:
    for a in np_.attribute:
        if a.name == "value" and a.type == _TENSOR:
            return builder.tensor(a.t, graph_path)
        simple = {
            "value_float": ("float32", lambda a=a: np.array(a.f, np.float32)),
            "value_int": ("int64", lambda a=a: np.array(a.i, np.int64)),
            "value_floats": ("float32", lambda a=a: np.array(list(a.floats), np.float32)),
            "value_ints": ("int64", lambda a=a: np.array(list(a.ints), np.int64)),
        }.get(a.name)
        if simple:
            dtype, read = simple
            shape = () if a.name in ("value_float", "value_int") else (len(a.floats) or len(a.ints),)
            return Tensor(np_.output[0], dtype, shape, read)
    return None


class Builder:
    """Converts one ModelProto; ``issues`` collects what it finds wrong on the way."""

    def __init__(self, path: str, proto: onnx.ModelProto, issues: list[LoadIssue]) -> None:
        self.path = path
        self.proto = proto
        self.issues = issues
        self.opsets = {norm_domain(o.domain): o.version for o in proto.opset_import}
        # (graph, initializer types) per non-function graph, in graph_protos() order, for apply_types().
        self.typed: list[tuple[Graph, list[tuple[Value, str | None, tuple | None]]]] = []
        self.node_protos: dict[Graph, Any] = {}  # each graph's NodeProtos, by node.index
        # Some initializer's or Constant's dims are negative (a superset of what
        # inference.has_negative_dims finds in tensors: read here at no extra cost).
        self.negative_tensor_dims = False
        self.graph_protos: list[onnx.GraphProto] = []  # all but function bodies

    @functools.cached_property
    def resolver(self) -> external.Resolver:
        """External data locations, vetted once each (against the model's folder and, when the
        model path is a symlink, the real file's folder)."""
        return external.Resolver(os.path.dirname(os.path.abspath(self.path)),
                                 also_root=os.path.dirname(os.path.realpath(self.path)))

    def tensor(self, tp: onnx.TensorProto, graph_path: str) -> Tensor:
        dtype = dtypes.onnx_dtype(tp.data_type) or f"onnx:{tp.data_type}"
        if tp.data_location != onnx.TensorProto.EXTERNAL:
            return Tensor(tp.name, dtype, tuple(tp.dims), _EmbeddedReader(tp))
        shape = tuple(tp.dims)
        np_dtype = dtypes.to_numpy(dtype)
        expected = _count(shape) * np_dtype.itemsize if np_dtype is not None else None
        try:
            ref = external.parse_ref({e.key: e.value for e in tp.external_data})
            real = self.resolver.resolve(ref, expected)
        except external.ExternalDataRefused as e:
            self.issues.append(LoadIssue("external-data", f"external data of {tp.name!r} refused: {e}",
                                         value=tp.name, graph_path=graph_path))
            return Tensor(tp.name, dtype, shape, None, location="external:refused")
        read = (external.reader(real, ref.offset, expected, np_dtype, shape)
                if np_dtype is not None and expected is not None else None)
        return Tensor(tp.name, dtype, shape, read, location=f"external:{ref.location}", nbytes=expected)

    def convert(self) -> tuple[Graph, dict[tuple[str, str], Graph]]:
        main = Graph(self.proto.graph.name or "main", "main")
        queue: deque[tuple[Graph, Any, dict[str, int]]] = deque([(main, self.proto.graph, self.opsets)])
        functions: dict[tuple[str, str], Graph] = {}
        for fn in self.proto.functions:
            g = Graph(fn.name, f"function:{fn.domain}.{fn.name}")
            fn_opsets = {norm_domain(o.domain): o.version for o in fn.opset_import} or self.opsets
            functions[(norm_domain(fn.domain), fn.name)] = g
            queue.append((g, fn, fn_opsets))
        while queue:
            graph, gp, opsets = queue.popleft()
            self._fill(graph, gp, opsets, queue)
        return main, functions

    def apply_types(self, types: Types | None) -> None:
        """Value types from inference (or, when it gave up, the file's own value_info, inputs and
        outputs), else from initializers."""
        if types is not None:
            self._set_outputs(types.outputs)
        graphs, table, _ = types if types is not None else decode_types(self.proto)
        if any(impossible_shape(shape) for _, shape in table):  # a few dozen distinct types: GL0007 looks closer
            self.issues.append(LoadIssue("impossible-dims", "a declared or inferred shape cannot exist"))
        if len(graphs) != len(self.typed):  # cannot happen for the same bytes; refuse rather than mis-assign
            raise RuntimeError(f"shape inference returned {len(graphs)} graphs for {len(self.typed)}")
        for (graph, initializers), (names, ids) in zip(self.typed, graphs, strict=True):
            values = graph.values
            for name, i in zip(names, ids, strict=True):
                v = values.get(name)
                if v is None:  # value_info naming a value no node uses
                    v = values[name] = Value(name, graph)
                v.dtype, v.shape = table[i]
            for v, dtype, shape in initializers:
                if v.dtype is None:
                    v.dtype, v.shape = dtype, shape
        self.typed = []

    def _set_outputs(self, outputs: list[bytes]) -> None:
        """Give ``proto``'s main graph outputs the types inference found: onnx.checker rejects an
        untyped graph output, and GL0001 reports what the checker says of the inferred model."""
        gp = self.proto.graph
        if list(map(methodcaller("SerializeToString"), gp.output)) != outputs:
            gp.ClearField("output")
            gp.output.extend(map(onnx.ValueInfoProto.FromString, outputs))

    def _fill(self, graph: Graph, gp: Any, opsets: dict[str, int], queue: deque) -> None:
        is_function = isinstance(gp, onnx.FunctionProto)
        value = graph.value
        if is_function:
            for name in gp.input:
                v = value(name)
                v.is_input = True
                graph.inputs.append(v)
        else:
            for vi in (*gp.value_info, *gp.input, *gp.output):
                value(vi.name)
            initializers: list[tuple[Value, str | None, tuple | None]] = []
            negative = False
            for tp in gp.initializer:
                v = value(tp.name)
                v.const = t = self.tensor(tp, graph.path)
                initializers.append((v, t.dtype, t.shape))
                if t.shape and min(t.shape) < 0:
                    negative = True
            for sp in gp.sparse_initializer:
                v = value(sp.values.name)
                dt = dtypes.onnx_dtype(sp.values.data_type)
                v.const = Tensor(sp.values.name, dt or "?", tuple(sp.dims), None, location="sparse")
                initializers.append((v, dt, tuple(sp.dims)))
                negative = negative or inference.negative_tensor_dims((sp, sp.values))
            self.negative_tensor_dims |= negative
            self.typed.append((graph, initializers))
            self.graph_protos.append(gp)
            for vi in gp.input:
                v = value(vi.name)
                v.is_input = True
                graph.inputs.append(v)
        for name in (gp.output if is_function else map(_NAME, gp.output)):
            v = value(name)
            v.is_output = True
            graph.outputs.append(v)
        self.node_protos[graph] = gp.node
        for i in self._nodes(graph, gp, opsets):
            node, np_ = graph.nodes[i], gp.node[i]
            if may_hold_graphs(node.op_type, node.domain):
                for attr, sub_gp in subgraphs(np_):
                    sub = Graph(sub_gp.name or attr, f"{graph.path}/{node.label}/{attr}", owner=node)
                    if node.subgraphs is NO_SUBGRAPHS:
                        node.subgraphs = {}
                    node.subgraphs[attr] = sub
                    queue.append((sub, sub_gp, opsets))
            elif node.op_type == "Constant" and node.outputs:
                node.outputs[0].const = t = _constant_tensor(np_, self, graph.path)
                if t is None or (t.shape and min(t.shape) < 0):  # None: no `value`, perhaps a sparse_value
                    self.negative_tensor_dims |= inference.negative_tensor_dims(inference.constant_tensors(np_))
        names = list(map(_NAME, graph.nodes))
        # A string that is not UTF-8 comes out of protobuf as bytes, on which str.join fails
        # (TypeError: the loader then decodes every string and loads again); op types and
        # domains were interned, which fails alike.
        "".join(names), "".join(graph.values), "".join((graph.name, graph.path))
        self._duplicate_names(graph, names)

    def _nodes(self, graph: Graph, gp: Any, opsets: dict[str, int]) -> list[int]:
        """Build ``gp``'s nodes into ``graph``; the indices of those _fill() looks into further."""
        # Runs once per node (100k+ in an LLM): graph.value() and norm_domain() are inlined.
        nodes = graph.nodes
        values = graph.values
        opset_of = opsets.get
        picked = []
        for i, np_ in enumerate(gp.node):
            domain = np_.domain
            # One string per op type and domain, not per node (intern() also refuses the bytes
            # protobuf hands back for a string that is not UTF-8).
            domain = ONNX_DOMAIN if domain in ("", "ai.onnx") else intern(domain)
            op_type = intern(np_.op_type)
            node = OnnxNode(np_.name, self, graph, i, op_type, domain, opset_of(domain))
            ins: list[Value | None] = []
            # Sliced: a list at C speed (iterating upb's repeated string field costs twice as much).
            for n in np_.input[:]:
                if n:
                    v = values.get(n)
                    if v is None:
                        v = values[n] = Value(n, graph)
                    v.consumers.append(node)
                    ins.append(v)
                else:
                    ins.append(None)
            node.inputs = ins
            outs = []
            for n in np_.output[:]:
                if n:
                    v = values.get(n)
                    if v is None:
                        v = values[n] = Value(n, graph)
                    v.producer = node
                else:
                    v = Value("", graph)
                outs.append(v)
            node.outputs = outs
            if domain != ONNX_DOMAIN or op_type in _PICKED_OPS:
                picked.append(i)
            nodes.append(node)
        return picked

    def _duplicate_names(self, graph: Graph, names: list[str]) -> None:
        """ONNX requires node names unique per graph; reports and engines key layers by them."""
        if len(set(names)) + names.count("") - ("" in names) == len(names):
            return  # the usual case
        seen: dict[str, Node] = {}
        for node in graph.nodes:
            if node.name and seen.setdefault(node.name, node) is not node:
                self.issues.append(LoadIssue(
                    "duplicate-node-name",
                    f"node {node.name!r} ({node.op_type}) reuses the name of node #{seen[node.name].index}; "
                    f"ONNX requires node names to be unique within a graph",
                    node=node, graph_path=graph.path))
