"""Value types of an ONNX model, read from its value_info, inputs and outputs.

Shape inference writes what it found into the graphs' ``value_info``; the loader reads the
types of every graph compactly (:class:`Types`: names, and indices into a table of the few
distinct types) so that a child process can send them back cheaply.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from itertools import compress
from operator import attrgetter, methodcaller
from typing import Any, NamedTuple

import onnx

from graphlint import dtypes

# The default-domain ops with graph attributes, per onnx.defs (other domains' ops may have any).
GRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
_DEFAULT_DOMAIN = frozenset({"", "ai.onnx"})
_OP_AND_DOMAIN = attrgetter("op_type", "domain")
_SERIALIZE = methodcaller("SerializeToString")
_GRAPH, _GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS


def may_hold_graphs(op_type: str, domain: str) -> bool:
    return op_type in GRAPH_OPS or domain not in _DEFAULT_DOMAIN


def graph_holders(nodes: Any) -> list[Any]:
    """The nodes that may have graph attributes, in order (each distinct op type looked at once)."""
    keys = list(map(_OP_AND_DOMAIN, nodes))
    wanted = {key for key in set(keys) if may_hold_graphs(*key)}
    if not wanted:
        return []
    return [nodes[i] for i in compress(range(len(keys)), map(wanted.__contains__, keys))]


def subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """The node's graph attributes: (``attr`` or ``attr[k]``, graph), in attribute order."""
    for a in node.attribute:
        if a.type == _GRAPH:
            yield a.name, a.g
        elif a.type == _GRAPHS:
            for k, g in enumerate(a.graphs):
                yield f"{a.name}[{k}]", g


def graph_protos(model: onnx.ModelProto) -> Iterator[onnx.GraphProto]:
    """Every GraphProto of the model in the loader's breadth-first order: main, then function
    bodies' and main's subgraphs as their owners are visited."""
    queue: deque[tuple[Any, bool]] = deque([(model.graph, True), *((fn, False) for fn in model.functions)])
    while queue:
        gp, is_graph = queue.popleft()
        if is_graph:
            yield gp
        for node in graph_holders(gp.node):
            queue.extend((g, True) for _, g in subgraphs(node))


def dims(type_proto: Any) -> tuple[str | None, tuple | None]:
    """(dtype, shape) of a TypeProto: a non-tensor type is named by its kind (``sequence_type``)."""
    which = type_proto.WhichOneof("value")
    if which != "tensor_type":
        return (which, None) if which else (None, None)
    tt = type_proto.tensor_type
    dtype = dtypes.onnx_dtype(tt.elem_type)
    if not tt.HasField("shape"):
        return dtype, None
    shape = []
    for d in tt.shape.dim:
        k = d.WhichOneof("value")
        shape.append(d.dim_value if k == "dim_value" else d.dim_param if k == "dim_param" else None)
    return dtype, tuple(shape)


class Types(NamedTuple):
    """The types of a model's values, compactly (a 100k-node model's pickle in about 2 MB)."""

    # Per graph in graph_protos() order: value names (its value_info, then input, then output:
    # later entries win) and their indices into ``table``.
    graphs: list[tuple[list[str], list[int]]]
    table: list[tuple]  # the distinct (dtype, shape) pairs: a few dozen even in a 100k-node model
    outputs: list[bytes]  # the main graph's output ValueInfoProtos, serialized


def decode_types(model: onnx.ModelProto) -> Types:
    table: list[tuple] = []
    index: dict[bytes, int] = {}
    graphs = []
    for gp in graph_protos(model):
        names: list[str] = []
        ids: list[int] = []
        # One pass over each value's wrapper (the child's share of the critical path: about
        # 1.5 µs a value). The serialized TypeProto keys the table: each distinct type is decoded once.
        for infos in (gp.value_info, gp.input, gp.output):
            for vi in infos:
                key = vi.type.SerializeToString()
                i = index.get(key)
                if i is None:
                    i = index[key] = len(table)
                    table.append(dims(onnx.TypeProto.FromString(key)))
                ids.append(i)
                names.append(vi.name)
        graphs.append((names, ids))
    return Types(graphs, table, list(map(_SERIALIZE, model.graph.output)))
