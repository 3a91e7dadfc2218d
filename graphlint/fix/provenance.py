"""Nodes a rewrite makes keep the metadata of the nodes they replace.

Exporters record on each node where in the model's code it was made (``metadata_props``,
``doc_string``; see graphlint.analysis.origins). A pass that rebuilds a node, fuses a subgraph
into one node or decomposes a node into several would drop that, and findings on the fixed
model could no longer point at the Python line. After each pass, every node without metadata
takes the metadata of the node it replaces: the node of the same name before the pass, else
the node that produced, before the pass, a value the new node (or the new nodes it feeds)
produces now. Nodes that replace nothing (a Cast inserted at a graph input) stay as they are.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

import onnx

from graphlint.fix.graphutil import _graphs

MAX_STEPS = 64  # new nodes followed from one node to the value it stands in for


def _all_nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    for body in (model.graph, *model.functions):
        graphs = _graphs(body) if isinstance(body, onnx.GraphProto) else [body]
        for g in graphs:
            yield from g.node


def _has_metadata(node: onnx.NodeProto) -> bool:
    return bool(len(node.metadata_props) or node.doc_string)


def carry_metadata(before: Any, after: Any) -> int:
    """Copy metadata onto the nodes of ``after`` (the result of a pass run on ``before``) that
    replace nodes of ``before``; returns how many nodes got some. Other models: nothing."""
    if not isinstance(before, onnx.ModelProto) or not isinstance(after, onnx.ModelProto):
        return 0
    old_by_name: dict[str, onnx.NodeProto] = {}
    old_producer: dict[str, onnx.NodeProto] = {}
    bare: set[tuple] = set()  # nodes that had no metadata before the pass either
    for node in _all_nodes(before):
        if not _has_metadata(node):
            bare.add(_key(node))
            continue
        if node.name:
            old_by_name.setdefault(node.name, node)
        for out in node.output:
            if out:
                old_producer.setdefault(out, node)
    if not old_producer:
        return 0  # the model records nothing: the usual case for models not made by torch
    new = [n for n in _all_nodes(after) if not _has_metadata(n) and _key(n) not in bare]
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in new:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    carried = 0
    for node in new:
        source = old_by_name.get(node.name) if node.name else None  # rebuilt under its own name
        if source is None:
            source = _replaced(node, old_producer, consumers)
        if source is not None:
            node.metadata_props.extend(source.metadata_props)
            if source.doc_string:
                node.doc_string = source.doc_string
            carried += 1
    return carried


def _key(node: onnx.NodeProto) -> tuple:
    return node.name, node.domain, node.op_type, tuple(node.output)


def _replaced(node: onnx.NodeProto, old_producer: dict[str, onnx.NodeProto],
              consumers: dict[str, list[onnx.NodeProto]]) -> onnx.NodeProto | None:
    """The old node whose output ``node`` produces, directly or through other new nodes."""
    queue = deque([node])
    seen = {id(node)}
    steps = 0
    while queue and steps < MAX_STEPS:
        steps += 1
        current = queue.popleft()
        for out in current.output:
            if out in old_producer:
                return old_producer[out]
        for out in current.output:
            for nxt in consumers.get(out, ()):
                if id(nxt) not in seen:
                    seen.add(id(nxt))
                    queue.append(nxt)
    return None
