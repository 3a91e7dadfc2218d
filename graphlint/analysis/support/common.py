"""What the support evaluators share: issue records, table sources, onnx schema facts, fused ops."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphlint import dtypes
from graphlint.ir import ONNX, ONNX_DOMAIN, Model, Node, Value
from graphlint.rule import Rewrite, Severity, quote_node
from graphlint.target import Target

# Issue categories, one GL1xx rule each.
UNSUPPORTED = "unsupported-op"
FUSED = "fused-contrib-op"
TRAP = "domain-trap"
CONSTRAINT = "op-constraint"
DTYPE = "dtype"

TENSOR_TYPES = frozenset(dtypes.ONNX_DTYPES.values())


@dataclass
class Issue:
    category: str
    severity: Severity
    reason: str  # sentence fragment: what is wrong, without the node prefix
    constraint: str  # short machine name: "op", "attr:mode", "input:axes", "dtype:float64", ...
    source: str  # "file:row" of the fact
    rewrite: Rewrite | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rejects(self) -> bool:
        return self.severity >= Severity.ERROR


@dataclass
class Support:
    """Per-node issues for one model and target (nodes without issues are absent)."""

    issues: dict[Node, list[Issue]]
    evaluated: int  # nodes looked at (dialect the table covers)
    table: str  # rules/data/... file of the table

    def rejected(self, node: Node) -> bool:
        return any(i.rejects for i in self.issues.get(node, ()))

    def by_category(self, category: str) -> list[tuple[Node, Issue]]:
        return [(n, i) for n, issues in self.issues.items() for i in issues if i.category == category]


def message(node: Node, issue: Issue) -> str:
    """The finding text for one issue: node first, then the reason, then the source row."""
    return f"{quote_node(node)} {issue.reason} [{issue.source}]."


# An evaluator: (node, target, table, model, memo) -> the node's issues; ``memo`` holds op-level
# facts it derives once per run. A screen: (nodes, table, memo) -> the nodes the evaluator must
# look at. Each table kind (``kind`` in the support data file) registers one evaluator.
Evaluator = Callable[[Node, Target, dict[str, Any], Model, dict], list[Issue]]
Screen = Callable[[list[Node], dict[str, Any], dict], list[Node]]
EVALUATORS: dict[str, tuple[Evaluator, Screen | None]] = {}


def evaluator(kind: str, screen: Screen | None = None) -> Callable[[Evaluator], Evaluator]:
    def register(fn: Evaluator) -> Evaluator:
        EVALUATORS[kind] = (fn, screen)
        return fn

    return register


def source_of(table: dict[str, Any], row: int | None) -> str:
    """The citation of a table row: the published document's URL with the row's line anchor, when
    the table's rows are lines of that document (``row_anchor``), else the source alone."""
    src, anchor = table.get("source", "?"), table.get("row_anchor")
    return f"{src}{anchor}{row}" if row and anchor else src


@functools.cache
def onnx_schema(op: str, opset: int, domain: str) -> Any:
    import onnx.defs

    try:
        return onnx.defs.get_schema(op, opset, "" if domain == ONNX_DOMAIN else domain)
    except Exception:  # SchemaError: unknown op or no version at this opset
        return None


def attr(node: Node, name: str) -> Any:
    """The node's attribute, or the schema default at the node's opset (None when neither)."""
    if name in node.attrs:
        return node.attrs[name]
    return default(node, name)


def default(node: Node, name: str) -> Any:
    schema = onnx_schema(node.op_type, int(node.opset or 1), node.domain) if node.dialect == ONNX else None
    if schema is None or name not in schema.attributes:
        return None
    import onnx.helper

    value = schema.attributes[name].default_value
    if value is None or not value.name:
        return None
    value = onnx.helper.get_attribute_value(value)
    return value.decode() if isinstance(value, bytes) else value


def const_value(v: Value | None) -> Any:
    """The numpy value of a build-time constant input, or None (not constant, or unreadable)."""
    if v is None or v.const is None:
        return None
    t = v.const
    if t.size > 4096:
        return None
    try:
        return t.numpy()
    except Exception:  # unreadable external data: GL0005 reports it
        return None


def outer_value(v: Value) -> Value:
    """The value a subgraph's reference to an enclosing graph's name stands for (else ``v``)."""
    g = v.graph
    while v.producer is None and v.const is None and not v.is_input and g.owner is not None:
        g = g.owner.graph
        found = g.values.get(v.name)
        if found is None:
            break
        v = found
    return v


_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial"})


def is_constant(v: Value, *, initializer_only: bool = False, depth: int = 8) -> bool:
    """Initializer or Constant output; unless ``initializer_only``, also anything computed only
    from constants (what an engine's constant folding resolves at build time)."""
    v = outer_value(v)
    if v.const is not None:
        return True
    if initializer_only or depth <= 0 or v.producer is None or v.is_input:
        return False
    p = v.producer
    if p.op_type in _RANDOM:
        return False
    return all(i is None or is_constant(i, depth=depth - 1) for i in p.inputs) and not p.subgraphs


def from_run_time(v: Value) -> bool:
    """Whether a value depends on a graph input (or a random op, or an If/Loop/Scan output): no
    build-time constant folding can resolve it. Values computed from constants alone do not."""
    stack, seen = [v], set()
    while stack:
        cur = outer_value(stack.pop())
        if id(cur) in seen or cur.const is not None:
            continue
        seen.add(id(cur))
        p = cur.producer
        if p is None:
            if cur.is_input or cur.graph.owner is not None:  # a graph input, or a subgraph input
                return True
            continue
        if p.subgraphs or p.op_type in _RANDOM:
            return True
        stack.extend(i for i in p.inputs if i is not None and i.name)
    return False


def named_input(node: Node, i: int) -> Value | None:
    v = node.input(i)
    return v if v is not None and v.name else None


def fmt(values: list[Any]) -> str:
    return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values)


def input_name(node: Node, i: int) -> str:
    names = io_names(node.op_type, int(node.opset or 1), node.domain)[0] if node.dialect == ONNX else ()
    return f"'{names[i]}'" if i < len(names) else f"#{i}"


def output_name(node: Node, i: int) -> str:
    names = io_names(node.op_type, int(node.opset or 1), node.domain)[1] if node.dialect == ONNX else ()
    return f"'{names[i]}'" if i < len(names) else f"#{i}"


@functools.cache
def io_names(op: str, opset: int, domain: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The schema's input and output names (onnx rebuilds its parameter lists on every access)."""
    schema = onnx_schema(op, opset, domain)
    if schema is None:
        return (), ()
    return tuple(p.name for p in schema.inputs), tuple(p.name for p in schema.outputs)


def fused_entry(target: Target, node: Node) -> dict[str, Any] | None:
    fused = target.data("fused") or {}
    entry = fused.get("ops", {}).get(node.op_type)
    if entry is None:
        return None
    want = entry.get("domain", "com.microsoft")
    return entry if node.domain == want else None


def fused_rewrite(target: Target, node: Node, entry: dict[str, Any]) -> Rewrite:
    if target.name == "trt" and entry.get("trt_plugin"):
        plugin = entry["trt_plugin"]
        note = f"; {entry['trt_plugin_note']}" if entry.get("trt_plugin_note") else ""
        return Rewrite("trt-plugin", {"node": node.label, "plugin": plugin}, safe=False,
                       description=f"map onto the TensorRT plugin {plugin}{note} (or un-fuse: {entry.get('standard')})")
    desc = f"un-fuse to standard ONNX: {entry['standard']}" if entry.get("standard") else "un-fuse to standard ONNX"
    return Rewrite("unfuse-contrib", {"node": node.label, "op_type": node.op_type},
                   safe=True, description=desc)


def fused_source(target: Target, entry: dict[str, Any]) -> str:
    fused = target.data("fused") or {}
    op = next((k for k, v in fused.get("ops", {}).items() if v is entry), "?")
    return f"{fused.get('source', 'contrib-fused.toml')} [ops.{op}]"
