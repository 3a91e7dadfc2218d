"""TensorRT's ONNX parser (``trt-matrix`` tables): importers looked up by op type only, whatever
the domain; per-op element types and structured restrictions from the parser's operator matrix."""

from __future__ import annotations

from typing import Any

from graphlint import dtypes
from graphlint.analysis.support.common import (
    DTYPE,
    FUSED,
    TENSOR_TYPES,
    TRAP,
    UNSUPPORTED,
    Issue,
    evaluator,
    fused_entry,
    fused_rewrite,
    fused_source,
    source_of,
)
from graphlint.analysis.support.constraints import check_constraints
from graphlint.ir import ONNX_DOMAIN, Model, Node
from graphlint.rule import Severity
from graphlint.target import Target


def _trt(node: Node, target: Target, table: dict[str, Any], model: Model | None, memo: dict) -> list[Issue]:
    row, constraints, bad = _trt_op_facts(table, node.op_type, memo)
    if node.domain != ONNX_DOMAIN or row is None or not row["supported"]:
        return _trt_rejected(node, target, table, row)
    out = check_constraints(node, constraints, source_of(table, row["row"])) if constraints else []
    if bad:
        out.extend(_trt_types(node, target, table, row, bad))
    return out


def _trt_screen(nodes: list[Node], table: dict[str, Any], memo: dict) -> list[Node]:
    """The nodes :func:`_trt` may find an issue with, in order: the rest are cleared here, on a
    large model nearly all of them, without a call each.

    A standard op whose matrix row is supported with no constraints can only be refused for
    the element type :func:`_trt_types` probes: its first input's, when that is a named tensor
    (Cast also probes its output, so it is always looked at); when the row refuses no type,
    every node of the op is fine."""
    screens: dict[str, frozenset[str] | None] = {}  # op type -> types refused, None: look at each node
    out = []
    for node in nodes:
        op = node.op_type
        bad = screens.get(op, _UNSEEN)
        if bad is _UNSEEN:
            row, constraints, refused = _trt_op_facts(table, op, memo)
            plain = row is not None and row["supported"] and not constraints and op not in _CASTS
            bad = screens[op] = refused if plain else None
        if bad is None or node.domain != ONNX_DOMAIN:
            out.append(node)
        elif bad:
            inputs = node.inputs
            first = inputs[0] if inputs else None
            if first is None or not first.name or first.dtype in bad:
                out.append(node)
    return out


_UNSEEN: Any = object()
def _trt_op_facts(table: dict[str, Any], op_type: str,
                  memo: dict) -> tuple[dict[str, Any] | None, list | None, frozenset[str]]:
    """(matrix row, its constraints, element types it refuses) of an op type: they depend on the
    op type only, so each is derived once per run (in ``memo``), not once per node."""
    facts = memo.get(op_type)
    if facts is None:
        row = table["ops"].get(op_type)
        if row is None or not row["supported"]:
            facts = row, None, frozenset()
        else:
            facts = row, row.get("constraints"), _trt_bad_types(table, row)
        memo[op_type] = facts
    return facts


_CASTS = frozenset({"Cast", "CastLike"})  # their element-type probe looks at the output too


def _trt_rejected(node: Node, target: Target, table: dict[str, Any], row: dict[str, Any] | None) -> list[Issue]:
    """A node the parser has no (standard) importer for: another domain, not in the matrix, or unsupported."""
    title = target.title
    if node.domain != ONNX_DOMAIN:
        fused = fused_entry(target, node)
        if row is not None and row["supported"]:
            # The parser dispatches by op type: a contrib op named like a standard op is imported
            # with the standard op's semantics.
            trap = (fused or {}).get("trt_trap")
            # Known collisions carry their own severity; others (com.microsoft Pad, Range, Trilu...)
            # mirror a standard op closely, so the import probably works: a warning to check.
            sev = Severity.parse((fused or {}).get("trt_trap_severity", "error") if trap else "warning")
            why = trap or "inputs and attributes follow the other op's schema, not this one's"
            rw = fused_rewrite(target, node, fused) if fused else None
            return [Issue(TRAP, sev, f"is in domain '{node.domain}', but {title}'s parser dispatches on op type "
                                     f"only and imports it as the standard ONNX {node.op_type}: {why}",
                          "domain", source_of(table, row["row"]) + (f"; {fused_source(target, fused)}" if fused else ""),
                          rewrite=rw,
                          extra={"standard_row": row["row"]})]
        reason = (f"has no importer in {title}'s ONNX parser (domain '{node.domain}'); the parser falls back "
                  f"to a plugin named '{node.op_type}' and fails the build unless one is registered")
        if fused:
            return [Issue(FUSED, Severity.ERROR, reason, "op", fused_source(target, fused),
                          rewrite=fused_rewrite(target, node, fused))]
        return [Issue(UNSUPPORTED, Severity.ERROR, reason, "domain", table["source"])]
    if row is None:
        fused = fused_entry(target, node)
        reason = f"is not in {title}'s ONNX operator matrix (no importer)"
        if fused:  # SimplifiedLayerNormalization in the default domain
            return [Issue(FUSED, Severity.ERROR, f"is an ONNX Runtime op in the default domain, not standard ONNX; "
                                                 f"it {reason[3:]}", "op", fused_source(target, fused),
                          rewrite=fused_rewrite(target, node, fused))]
        return [Issue(UNSUPPORTED, Severity.ERROR, reason, "op", table["source"])]
    note = f" ({row['restrictions']})" if row.get("restrictions") else ""
    return [Issue(UNSUPPORTED, Severity.ERROR, f"is marked unsupported in {title}'s operator matrix{note}",
                  "op", source_of(table, row["row"]))]


def _trt_bad_types(table: dict[str, Any], row: dict[str, Any]) -> frozenset[str]:
    """Element types the op's row refuses: not listed, and not left to GL4003 (DOUBLE cast-down) or
    GL4004 (UINT8 at the boundary). Empty when the row lists no types (no check)."""
    types = row.get("types") or []
    if not types:
        return frozenset()
    glob = table.get("global", {})
    return TENSOR_TYPES - set(types) - set(glob.get("cast_down", {})) - set(glob.get("boundary_only_types", ()))


def _trt_types(node: Node, target: Target, table: dict[str, Any], row: dict[str, Any],
               bad: frozenset[str]) -> list[Issue]:
    if node.op_type in _CASTS:
        probe = [v for v in (node.input(0), node.outputs[0] if node.outputs else None) if v is not None]
    else:
        first = node.input(0)
        probe = [first] if first is not None and first.name else node.outputs[:1]
    for v in probe:
        if v.dtype in bad:
            types = row["types"]
            return [Issue(DTYPE, Severity.ERROR,
                          f"takes {v.dtype} '{v.name}'; {target.title} supports {node.op_type} on "
                          f"{', '.join(dtypes.SHORT.get(t, t) for t in types)} only", f"dtype:{v.dtype}",
                          row.get("types_source") or source_of(table, row["row"]), extra={"value": v.name})]
    return []


evaluator("trt-matrix", screen=_trt_screen)(_trt)
