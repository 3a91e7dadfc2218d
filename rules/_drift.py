"""Shared helpers of the drift rules (GL2xx): the drift-facts table and small graph queries.

The facts live in ``data/drift.toml`` (one entry per meaning change, with its opset boundary,
effect, engine behaviour, rewrite and source). Rules read the facts that name them through
:func:`facts`, so adding a fact to a generic rule is a data change, not a code change.
Not a rule module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np
from graphlint_rules import _contract as C

from graphlint.compat import tomllib
from graphlint.ir import ONNX_DOMAIN, Node, Value
from graphlint.rewrites import spec
from graphlint.rule import Rewrite, Severity
from graphlint.target import Target, data_dir

SOURCE = "rules/data/drift.toml"


@functools.cache
def table() -> dict[str, Any]:
    with open(os.path.join(data_dir(), "drift.toml"), "rb") as f:
        return tomllib.load(f)


@functools.cache
def facts(rule_id: str) -> tuple[dict[str, Any], ...]:
    """Facts read by one rule, in file order (cached: rules call this per node)."""
    return tuple(f for f in table()["fact"] if f["rule"] == rule_id)


@functools.cache
def facts_for(rule_id: str, op_type: str) -> tuple[dict[str, Any], ...]:
    """The rule's facts that name ``op_type``, in file order (what a rule checks per node)."""
    return tuple(f for f in facts(rule_id) if op_type in f["op"])


@functools.cache
def _by_id() -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in table()["fact"]}


def fact(fact_id: str) -> dict[str, Any]:
    return _by_id()[fact_id]


def op_types(rule_id: str) -> frozenset[str]:
    """Op types named by a rule's facts (what the engine dispatches to it)."""
    return frozenset(op for f in facts(rule_id) for op in f["op"])


def applies(f: dict[str, Any], node: Node, target: Target | None = None) -> bool:
    """The fact covers this node's op, opset version and (when it names targets) the target."""
    if node.domain != ONNX_DOMAIN or node.op_type not in f["op"] or not isinstance(node.opset, int):
        return False
    lo, hi = f["opsets"]
    if not lo <= node.opset <= hi:
        return False
    return not (target is not None and f.get("targets") and target.name not in f["targets"])


def engine_note(f: dict[str, Any], target: Target) -> str:
    """What the active target's engine does with the fact, when the table knows."""
    key = {"openvino": "openvino", "ort": "ort", "trt": "trt"}.get(target.name, target.name)
    note = f.get("engines", {}).get(key)
    return f" {target.title}: {note}." if note else ""


def verdict(f: dict[str, Any], target: Target) -> str | None:
    """What the fact's table records the target's engine doing (validity.toml's vocabulary), or None."""
    return f.get("verdict", {}).get(target.name)


def judged(f: dict[str, Any], target: Target, default: Severity) -> tuple[Severity, dict[str, Any]]:
    """(severity, contract properties) of a finding about ``f`` on ``target``: an error only where the
    fact records that the target rejects the node or computes other results; a fact that would be
    an error but says nothing about this target is a warning whose engine behaviour is unknown."""
    v = verdict(f, target)
    if v in C.FAILING:
        return Severity.ERROR, {"basis": C.fact_basis("drift.toml", f["id"]), "verdict": v}
    if v is None and default >= Severity.ERROR:
        return Severity.WARNING, {"unknown": ["engine behaviour"]}
    return min(default, Severity.WARNING), ({"verdict": v} if v else {})


def unknown_note(target: Target) -> str:
    return f" What {target.title} does with it is not recorded (engine behaviour unknown)."


def props(f: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The structured properties every drift finding carries."""
    out = {"drift": f["id"], "effect": f["effect"], "boundary": f["boundary"], "drift_source": f["source"]}
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def rewrite(name: str, node: Node | None = None, *, safe: bool | None = None, description: str = "",
            **params: Any) -> Rewrite:
    """A Rewrite whose name is checked against the catalogue; ``node`` becomes the node param."""
    s = spec(name)
    if node is not None:
        params = {"node": node.label, **params}
    return Rewrite(name, {k: v for k, v in params.items() if v is not None},
                   s.safe if safe is None else safe, description or s.summary)


def fact_rewrite(f: dict[str, Any], node: Node, *, safe: bool | None = None, **params: Any) -> Rewrite | None:
    """The fact's rewrite for this node; ``safe`` overrides the fact's and the catalogue's default."""
    name = f.get("rewrite")
    if not name:
        return None
    merged = {**f.get("rewrite_params", {}), **params}
    return rewrite(name, node, safe=f.get("rewrite_safe") if safe is None else safe, **merged)


# --- graph queries -----------------------------------------------------------------------
def const(value: Value | None) -> np.ndarray | None:
    """The constant data of a value (initializer or Constant output), or None."""
    if value is None or value.const is None:
        return None
    try:
        return np.asarray(value.const.numpy())
    except Exception:  # unreadable weights are GL0005's business
        return None


def scalar(value: Value | None) -> float | None:
    arr = const(value)
    if arr is None or arr.size != 1 or arr.dtype.kind not in "fiu":
        return None
    return float(arr.reshape(-1)[0])


def producer(value: Value | None, op_type: str | None = None) -> Node | None:
    node = value.producer if value is not None else None
    if node is None or (op_type is not None and node.op_type != op_type):
        return None
    return node


def other_input(node: Node, value: Value) -> Value | None:
    """For a binary node fed by ``value``, the other operand."""
    ins = [v for v in node.inputs[:2] if v is not None]
    if len(ins) != 2:
        return None
    return ins[1] if ins[0] is value else ins[0] if ins[1] is value else None


def constant_operand(node: Node) -> tuple[float | None, Value | None]:
    """For a binary node with one scalar-constant operand: (constant, the other operand)."""
    if len(node.inputs) < 2 or node.inputs[0] is None or node.inputs[1] is None:
        return None, None
    for i in (0, 1):
        c = scalar(node.inputs[i])
        if c is not None:
            return c, node.inputs[1 - i]
    return None, None


def is_float(value: Value | None) -> bool:
    return value is not None and value.dtype is not None and value.dtype.startswith(("float", "bfloat"))


def fp16_note(target: Target) -> tuple[str, str] | None:
    """(severity word, why) when the target computes in fp16: by default, or as a common build flag."""
    if target.option("fp16_default"):
        return "warning", f"{target.title} infers in fp16 by default"
    if target.name == "trt":
        return "info", f"{target.title} computes in fp16 when built with --fp16"
    return None
