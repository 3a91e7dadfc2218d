"""ONNX shape inference (and onnx.checker) off the loader's critical path.

Shape inference is the largest single cost of linting a big model, and it is C++ that
holds the GIL. When the machine has a second core and the model is large, the loader
forks before it reads the file (the command line, before its own start-up: see
``onnx_loader.start_early``): one child runs inference on the file and sends back only the
decoded types (see ``onnx_loader.infer_types_at``); another, forked at the same time, runs
onnx.checker on it (what users run) once onnx's inference is done and its core is free,
since only GL0001, run last, waits for its verdict. The parent reads, parses and builds the IR
meanwhile, and the engine starts the analyses' type-free parts (``defer_types``). Without
fork (see :func:`graphlint.forked.available`; small files) the loader does the same work
in-process.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from itertools import compress
from operator import attrgetter
from typing import Any

import onnx

from graphlint import forked

# Below this file size a fork costs about what it saves (a 2,000-node model is about 0.7 MB).
FORK_MIN_BYTES = 1 << 20
# The default-domain ops with graph attributes, per onnx.defs (other domains' ops may have any).
GRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
_DEFAULT_DOMAIN = frozenset({"", "ai.onnx"})
_OP_AND_DOMAIN = attrgetter("op_type", "domain")
_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS


def graph_protos(model: Any, holders: Callable[[Any], list[Any]] | None = None) -> Iterator[Any]:
    """Every GraphProto of the model (main graph, bodies, bodies inside functions) in the
    converter's breadth-first order: main, then function bodies' and main's subgraphs as
    their owners are visited. (``model`` may also be a look-alike message with the same
    field names and its own ``holders``, see ``onnx_loader._types_only``.)"""
    holders = holders or _graph_holders
    queue: deque[tuple[Any, bool]] = deque([(model.graph, True), *((fn, False) for fn in model.functions)])
    while queue:
        gp, is_graph = queue.popleft()
        if is_graph:
            yield gp
        for n in holders(gp.node):
            for a in n.attribute:
                if a.type == _GRAPH:
                    queue.append((a.g, True))
                elif a.type == _GRAPHS:
                    queue.extend((g, True) for g in a.graphs)


def _graph_holders(nodes: Any) -> list[Any]:
    """The nodes that may have graph attributes, in order (found at C speed: reading every
    node's attributes would cost 2 µs a node)."""
    keys = list(map(_OP_AND_DOMAIN, nodes))
    # Each distinct (op type, domain) is looked at once; the nodes are picked at C speed.
    wanted = {key for key in set(keys) if may_hold_graphs(*key)}
    if not wanted:
        return []
    return [nodes[i] for i in compress(range(len(keys)), map(wanted.__contains__, keys))]


def may_hold_graphs(op_type: str, domain: str) -> bool:
    return op_type in GRAPH_OPS or domain not in _DEFAULT_DOMAIN


# An int64 varint field 1 holding a negative value (always 10 bytes, the last 0x01): how both
# TensorShapeProto.Dimension.dim_value and TensorProto.dims are written. Weight bytes match it by
# chance about twice per 100 MB; the exact pass below then finds nothing to change.
_NEGATIVE_FIELD_1 = re.compile(rb"\x08[\x80-\xff]{9}\x01")


def without_negative_dims(data: bytes) -> bytes:
    """``data`` with every negative declared dim made unknown, for onnx's shape inference.

    onnx >= 1.21's Slice inference aborts the whole process (SIGABRT from a hardened
    ``std::clamp``: https://github.com/onnx/onnx/issues/8481, open for onnx 1.23) when a sliced
    axis has a negative dim_value, which a hostile or broken model declares freely: graph
    inputs, outputs and value_info of any graph, and the dims of initializers and Constant
    tensors. Dims are cleared (value_info) or the tensor's shape dropped (tensors): only
    inference sees this copy; rules read the model as the file has it (GL0007 reports the dims).
    """
    if _NEGATIVE_FIELD_1.search(data) is None:
        return data
    model = onnx.ModelProto.FromString(data)
    changed = False
    for gp in graph_protos(model):
        for vi in (*gp.input, *gp.output, *gp.value_info):
            changed |= _clear_negative_dims(vi.type)
        tensors = [*gp.initializer, *gp.sparse_initializer, *(s.values for s in gp.sparse_initializer)]
        for node in gp.node:
            for a in node.attribute:
                tensors.extend((a.t, a.sparse_tensor, a.sparse_tensor.values, *a.tensors, *a.sparse_tensors))
        for t in tensors:
            if any(d < 0 for d in t.dims):
                del t.dims[:]
                changed = True
    return model.SerializeToString() if changed else data


def _clear_negative_dims(tp: Any) -> bool:
    changed = False
    while tp is not None:
        which = tp.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            for d in getattr(tp, which).shape.dim:
                if d.HasField("dim_value") and d.dim_value < 0:
                    d.ClearField("dim_value")
                    changed = True
            return changed
        inner = getattr(tp, which, None) if which else None
        tp = inner.elem_type if which in ("sequence_type", "optional_type") else (
            inner.value_type if which == "map_type" else None)
    return changed


def checker_verdict(model: bytes | onnx.ModelProto) -> str | None:
    """What ``onnx.checker.check_model(model, full_check=False)`` says: None when it passes,
    else its message (exactly what str() of the exception gives)."""
    try:
        onnx.checker.check_model(model, full_check=False)
        return None
    except Exception as e:
        return str(e).strip()


def can_fork(nbytes: int) -> bool:
    """Whether the loader should fork its children for a file of ``nbytes``."""
    return nbytes >= FORK_MIN_BYTES and forked.available()
