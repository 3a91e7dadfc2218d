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
