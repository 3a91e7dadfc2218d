"""GL2009 attribute-semantics: attribute values whose meaning is opset- or engine-dependent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote_node

ID = "GL2009"


def _fmod0_float(node: Node, f: dict[str, Any]) -> Any:
    if node.attr("fmod", 0) == 0 and D.is_float(node.input(0)):
        return 0
    return None


def _not_all_ones(node: Node, f: dict[str, Any]) -> Any:
    v = node.attr(f["attribute"])
    return v if v and any(int(d) != 1 for d in v) else None


def _zero(node: Node, f: dict[str, Any]) -> Any:
    v = node.attr(f["attribute"])
    return v if v is not None and int(v) == 0 else None


def _nonzero(node: Node, f: dict[str, Any]) -> Any:
    v = node.attr(f["attribute"])
    return v if v is not None and int(v) != 0 else None


def _training_input(node: Node, f: dict[str, Any]) -> Any:
    v = node.input(2)
    if v is None:
        return None
    arr = D.const(v)
    if arr is None:
        return f"{v.name} (computed at run time)"
    return True if bool(arr.reshape(-1)[0]) else None


def _in_values(node: Node, f: dict[str, Any]) -> Any:
    v = node.attr(f["attribute"])
    return v if v in f["values"] else None


# The `when` names used in rules/data/drift.toml: each returns the offending value or None.
PREDICATES: dict[str, Callable[[Node, dict[str, Any]], Any]] = {
    "fmod-0-on-float": _fmod0_float,
    "not-all-ones": _not_all_ones,
    "zero": _zero,
    "nonzero": _nonzero,
    "training-input-not-false": _training_input,
    "in-values": _in_values,
}


class AttributeSemantics(Rule):
    """An attribute value whose meaning depends on the opset or that the target reads differently.

    ## What it checks
    The attribute-value facts of `rules/data/drift.toml` (`kind = "attribute-value"`), each a
    named condition on one op's attribute, optionally limited to some targets:

    - `Mod` with `fmod=0` (the default) on float inputs before opset 28;
    - `BatchNormalization` with `training_mode=1` (opset 14+) and `Dropout` whose
      `training_mode` input is true or not constant (opset 12+): training behaviour in an
      inference model;
    - on TensorRT: pooling `dilations` other than all ones and `TopK` with `sorted=0`, which
      its parser rejects; on OpenVINO: `Pad` with `mode="wrap"`, which its frontend refuses.

    ## Why it matters
    onnxruntime fails a float `Mod` with `fmod=0` at run time ("fmod attribute must be true for
    floating point types before opset 28") and OpenVINO refuses to convert it, while
    `onnx.reference` computes Python's floor-mod; a `BatchNormalization` with `training_mode=1`
    normalizes with the batch's own statistics, so results depend on the batch (onnxruntime
    output differs from `training_mode=0`); a true Dropout `training_mode` zeroes activations.

    ## Example
    `torch.remainder` hand-written as `Mod(x, y)` on float tensors; a model exported with
    `torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING)`.

    ## Fix
    Follow the suggested rewrite: set the attribute explicitly (`explicit-attribute`, e.g.
    `fmod=1` when C-style remainder is meant, `training_mode=0`, `sorted=1`), fold the Dropout
    mode to a false constant, or re-export in eval mode. For pooling dilations on TensorRT,
    re-express the window (e.g. a strided gather) or choose another engine.
    """

    id = ID
    name = "attribute-semantics"
    severity = Severity.WARNING
    op_types = D.op_types(ID)
    fixable = True
    source = f"{D.SOURCE} (kind = attribute-value); ONNX Changelog; TensorRT operators.md"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        for f in D.facts_for(ID, node.op_type):
            if not D.applies(f, node, ctx.target):
                continue
            value = PREDICATES[f["when"]](node, f)
            if value is None:
                continue
            loud = f["effect"] == "loud"
            severity, extra = D.judged(f, ctx.target, Severity.ERROR if loud else self.severity)
            yield ctx.finding(
                node,
                f"{quote_node(node)} has {f['attribute']}={value!r} at opset "
                f"{node.opset}: {f['change'].rstrip('.')}."
                + (D.unknown_note(ctx.target) if extra.get("unknown") else D.engine_note(f, ctx.target)),
                severity=severity,
                rewrite=D.fact_rewrite(f, node),
                **D.props(f, attribute=f["attribute"], attr_value=value if isinstance(value, int | str | list) else str(value)),
                **extra,
            )
