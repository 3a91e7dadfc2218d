"""The engine-drift table (``data/engine_drift.toml``) and the small generic code that reads it.

A fact says: on engine E (version, device), op O under condition C computes X instead of the
spec. The condition is data, a list of clauses that must all hold (attribute values, input /
output dtypes, whether an input is present, constant or computed, named predicates from
``_engine_predicates``, and ``any`` groups); :func:`matches` evaluates it on one node.
GL2010 (wrong values) and GL2011 (wrong output shape) read the facts of their kind.
Not a rule module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

import functools
import os
from typing import Any

from graphlint_rules import _engine_predicates as P

from graphlint.ir import ONNX_DOMAIN, Node
from graphlint.target import Target, data_dir

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

FILE = "engine_drift.toml"
SOURCE = f"rules/data/{FILE}"
UNKNOWN = None  # a clause whose premise the model does not tell (no dtype, no static shape)


@functools.cache
def table() -> dict[str, Any]:
    with open(os.path.join(data_dir(), FILE), "rb") as f:
        return tomllib.load(f)


def facts() -> list[dict[str, Any]]:
    return table()["fact"]


@functools.cache
def op_types(kind: str) -> frozenset[str]:
    """Op types named by the facts of one kind (what the engine dispatches to the rule)."""
    return frozenset(op for f in facts() if f["kind"] == kind for op in f["op"])


@functools.cache
def _for(target_name: str, version: str, device: str, kind: str, op_type: str) -> tuple[dict[str, Any], ...]:
    out = []
    for f in facts():
        if f["kind"] != kind or f["engine"] != target_name or op_type not in f["op"]:
            continue
        if f.get("reproduces") is False:  # the last measurement no longer shows it
            continue
        if version not in f["versions"]:
            continue
        if f["device"] and device and f["device"] != device:
            continue
        out.append(f)
    return tuple(out)


def facts_for(target: Target, kind: str, node: Node) -> tuple[dict[str, Any], ...]:
    """The facts of ``kind`` for this target (engine, version, device) and node (op, opset)."""
    if node.domain != ONNX_DOMAIN or not isinstance(node.opset, int):
        return ()
    return tuple(f for f in _for(target.name, target.version, target.device, kind, node.op_type)
                 if f["opsets"][0] <= node.opset <= f["opsets"][1])


# --- conditions ----------------------------------------------------------------------------
@functools.cache
def _schema_default(op_type: str, opset: int, name: str) -> Any:
    import onnx

    try:
        attr = onnx.defs.get_schema(op_type, opset, "").attributes.get(name)
    except Exception:  # no schema at that opset: no default known
        return None
    if attr is None or not attr.default_value.name:
        return None
    v = onnx.helper.get_attribute_value(attr.default_value)
    return v.decode() if isinstance(v, bytes) else v


def attr_value(node: Node, name: str) -> Any:
    """The node's attribute, or the schema's default at the node's opset."""
    v = node.attr(name)
    if v is None:
        v = _schema_default(node.op_type, int(node.opset), name)
    return v.decode() if isinstance(v, bytes) else v


def _compare(value: Any, c: dict[str, Any]) -> bool | None:
    if value is None:
        return UNKNOWN
    if "eq" in c:
        return value == c["eq"]
    if "ne" in c:
        return value != c["ne"]
    if "in" in c:
        return value in c["in"]
    if "not_in" in c:
        return value not in c["not_in"]
    raise ValueError(f"clause {c} has no comparison")


def _port(node: Node, c: dict[str, Any]) -> bool | None:
    """input / output clauses: present, const, produced, dtype."""
    i = c.get("input", c.get("output"))
    values = node.inputs if "input" in c else node.outputs
    v = values[i] if i < len(values) else None
    if "output" in c and v is not None and not v.name:
        v = None
    if "present" in c:
        return (v is not None) == c["present"]
    if v is None:
        return False
    if "const" in c:
        return v.is_constant == c["const"]
    if "produced" in c:  # computed by a node in the graph (not an input, not a constant)
        return (v.producer is not None and v.producer.op_type != "Constant") == c["produced"]
    if "dtype" in c:
        return UNKNOWN if v.dtype is None else v.dtype in c["dtype"]
    raise ValueError(f"clause {c} has no test")


def clause(node: Node, c: dict[str, Any]) -> bool | None:
    """One clause: True, False, or None when the model does not tell."""
    if "any" in c:
        results = [all_of(node, group) for group in c["any"]]
        return True if True in results else (UNKNOWN if UNKNOWN in results else False)
    if "attr" in c:
        if "present" in c:
            r: bool | None = (node.attr(c["attr"]) is not None) == c["present"]
        else:
            r = _compare(attr_value(node, c["attr"]), c)
    elif "input" in c or "output" in c:
        r = _port(node, c)
    elif "pred" in c:
        r = P.PREDICATES[c["pred"]](node)
    else:
        raise ValueError(f"unknown clause {c}")
    return True if r is UNKNOWN and c.get("if_unknown") else r


def all_of(node: Node, clauses: list[dict[str, Any]]) -> bool | None:
    results = [clause(node, c) for c in clauses]
    return False if False in results else (UNKNOWN if UNKNOWN in results else True)


def matches(f: dict[str, Any], node: Node) -> tuple[bool, bool]:
    """(the condition holds, it holds only because an unknown premise was allowed to fire)."""
    if all_of(node, f["when"]) is not True:
        return False, False
    relaxed = [c for c in f["when"] if c.get("if_unknown")]
    maybe = any(clause(node, {k: v for k, v in c.items() if k != "if_unknown"}) is UNKNOWN for c in relaxed)
    return True, maybe


# --- reporting -----------------------------------------------------------------------------
def where(f: dict[str, Any]) -> str:
    """Engine, version and device the fact was measured on (or the document it comes from)."""
    if f.get("documentary"):
        return f"TensorRT {'/'.join(f['versions'])} (documented; not runnable here)"
    return f.get("measured") or f"{f['engine']} {f['versions'][0]} {f['device'].upper()}"


def cite(f: dict[str, Any]) -> str:
    """Where the fact comes from: the upstream report, or the shipped table and its evidence."""
    if f.get("source"):
        return f["source"]
    tests = ", ".join(f["evidence"][:2]) + (" ..." if len(f["evidence"]) > 2 else "")
    out = f"{SOURCE} [{f['id']}], shown by ONNX backend node tests {tests}"
    return out + (f"; upstream: {f['issue']}" if f.get("issue") else "")


def magnitude(f: dict[str, Any]) -> str:
    if f["kind"] == "shape":
        return "wrong output shape"
    m = f.get("max_abs")
    if m == "inf":
        return "Inf or NaN where the spec has a finite value, or the reverse, on the node tests"
    return f"max |engine - spec| {m:g} on the node tests" if isinstance(m, int | float) else "size not measured"


def message(f: dict[str, Any], node: Node, maybe: bool) -> str:
    from graphlint.rule import quote_node

    verb = "may compute" if maybe else "computes"
    return (f"{quote_node(node)}: {where(f)} {verb} this differently from the ONNX spec: {f['does']} "
            f"({magnitude(f)}). {f['advice']} Source: {cite(f)}.")


def props(f: dict[str, Any], maybe: bool) -> dict[str, Any]:
    return {"engine_drift": f["id"], "engine": f["engine"], "measured": where(f), "kind": f["kind"],
            "magnitude": magnitude(f), "documentary": bool(f.get("documentary")), "premise_unknown": maybe or None,
            "drift_source": cite(f)}
