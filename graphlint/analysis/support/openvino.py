"""OpenVINO's ONNX frontend (``ov-onnx-frontend`` tables): a translator for the op at or below the
model's opset, and element types it can load. OpenVINO IR nodes are native and always taken."""

from __future__ import annotations

from typing import Any

from graphlint.analysis.support.common import (
    DTYPE,
    FUSED,
    UNSUPPORTED,
    Issue,
    evaluator,
    fused_entry,
    fused_rewrite,
    fused_source,
    source_of,
)
from graphlint.analysis.support.constraints import check_constraints
from graphlint.ir import Model, Node
from graphlint.rule import Severity
from graphlint.target import Target


@evaluator("ov-onnx-frontend")
def _ov(node: Node, target: Target, table: dict[str, Any], model: Model | None, memo: dict) -> list[Issue]:
    if model is not None and model.functions and (node.domain, node.op_type) in model.functions:
        return [Issue(UNSUPPORTED, Severity.ERROR, f"calls a model-local function, which {target.title}'s ONNX "
                                                   f"frontend does not expand (no conversion rule for "
                                                   f"{node.domain}.{node.op_type})", "function", table["source"])]
    dom = table["domains"].get(node.domain)
    entry = dom.get(node.op_type) if dom else None
    opset = int(node.opset) if isinstance(node.opset, int) else 1
    if entry is None or entry.get("since") is None or opset < entry["since"]:
        return _ov_rejected(node, target, table, entry, opset)
    # Element types the frontend refuses; for the node's common case (none) one cheap pass.
    bad = memo.get("bad_types")
    if bad is None:
        io_kinds = frozenset(table.get("io_refused_kinds", ()))
        refused = frozenset(table.get("element_types", {}).get("refused", ()))
        bad = memo["bad_types"] = (io_kinds, refused, io_kinds | refused)
    io_kinds, refused, either = bad
    out: list[Issue] = []
    if any(v is not None and v.dtype in either for v in (*node.inputs, *node.outputs)):
        title = target.title
        for v in (*node.inputs, *node.outputs):
            if v is not None and v.dtype in io_kinds and (v.is_input or v.is_output) and v.graph.owner is None:
                return [Issue(DTYPE, Severity.ERROR, f"has {v.dtype.replace('_type', '')}-typed graph "
                                                     f"{'input' if v.is_input else 'output'} '{v.name}'; {title}'s CPU "
                                                     f"plugin cannot compile dynamic-rank model inputs/outputs",
                              f"io:{v.dtype}", table["source"], extra={"value": v.name})]
        for v in (*node.inputs, *node.outputs):
            if v is not None and v.dtype in refused:
                out.append(Issue(DTYPE, Severity.ERROR, f"uses element type {v.dtype} ('{v.name}'), which "
                                                        f"{title}'s ONNX frontend cannot load", f"dtype:{v.dtype}",
                                 table["source"], extra={"value": v.name}))
                break
    constraints = entry.get("constraints")
    if constraints:
        out.extend(check_constraints(node, constraints, _ov_source(target, table, entry, node), memo.get("shapes")))
    return out


def _ov_source(target: Target, table: dict[str, Any], entry: dict[str, Any] | None, node: Node) -> str:
    src = source_of(table, entry.get("row")) if entry else table["source"]
    fused = fused_entry(target, node)
    return f"{src}; {fused_source(target, fused)}" if fused else src


def _ov_rejected(node: Node, target: Target, table: dict[str, Any], entry: dict[str, Any] | None,
                 opset: int) -> list[Issue]:
    """No translator for the op (in its domain, or at the model's opset)."""
    fused = fused_entry(target, node)
    title = target.title
    cat = FUSED if fused else UNSUPPORTED
    rw = fused_rewrite(target, node, fused) if fused else None
    src = _ov_source(target, table, entry, node)
    if entry is None or entry.get("since") is None:
        where = f"domain '{node.domain}'"
        reason = f"has no conversion rule in {title}'s ONNX frontend ({where})"
        return [Issue(cat, Severity.ERROR, reason, "op", src, rewrite=rw)]
    return [Issue(cat, Severity.ERROR, f"has no conversion rule in {title}'s ONNX frontend at opset {opset} "
                                       f"(first translator: opset {entry['since']})", "opset", src, rewrite=rw)]
