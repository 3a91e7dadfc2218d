"""Shared helpers of the precision rules (GL6xxx): the keep-fp32 rewrite and the engine's caveat.

The facts live in ``data/precision.toml`` (read by graphlint.analysis.precision). Not a rule
module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from graphlint.analysis.precision import TABLE, PrecisionFacts, Setting, engine
from graphlint.ir import Node, Value
from graphlint.rule import Finding, Rewrite, RuleContext, Severity, quote

SOURCE = TABLE


def keep_names(nodes: Iterable[Node]) -> list[str]:
    """Names as the engines know them: ONNX node names (TensorRT layers, OpenVINO layers after
    convert_model), the label for an unnamed node."""
    return [n.name or n.label for n in nodes]


def keep_rewrite(nodes: Iterable[Node], setting: Setting) -> Rewrite:
    return Rewrite("keep-fp32", {"nodes": keep_names(nodes), "precision": setting.precision}, safe=True,
                   description="keep these nodes in fp32 at reduced precision")


def listed(nodes: list[Node], n: int = 4) -> str:
    shown = ", ".join(quote(x.name or x.label) for x in nodes[:n])
    return shown + (f" and {len(nodes) - n} more" if len(nodes) > n else "")


def marked_note(model_format: str) -> str | None:
    """For nodes already marked keep-fp32: None on OpenVINO IR (the engine obeys the mark: no
    finding), else the sentence an ONNX model's info finding ends with (no engine reads the mark)."""
    if model_format == "openvino":
        return None
    return (" The nodes carry graphlint.keep_fp32 metadata, which no engine reads (OpenVINO's ONNX frontend "
            "drops node metadata): build with the keep-fp32 list.")


def caveat(setting: Setting) -> str:
    """What the engine does with a keep-fp32 list, as the table says (empty when nothing is known)."""
    e = engine(setting.engine)
    if not e:
        return ""
    honoured = e.get("honoured")
    if honoured is True:
        return f" The engine obeys the list ({e['keep_fp32']})."
    if honoured == "partly":
        return " The block list alone leaves the values between the kept nodes in fp16; join them (see the keep-fp32 list)."
    return f" Keep list syntax: {e['keep_fp32']} (not runnable here)."


def pending(ctx: RuleContext, kind: str) -> Iterator[tuple[Any, str, PrecisionFacts]]:
    """(fact, note, facts) for the analysis' ``kind`` ("overflows", "accumulations") not already
    kept by a mark the engine obeys; ``note`` is set when an ONNX model carries the record only."""
    ctx.analysis("shapes")  # first: the precision analysis reads its static shapes
    facts = ctx.analysis("precision")
    for item in getattr(facts, kind):
        note = marked_note(ctx.model.format) if item.marked else ""
        if note is not None:
            yield item, note, facts


def finding(ctx: RuleContext, node: Node, message: str, note: str, keep: list[Node], setting: Setting,
            severity: Severity, value: Value | None = None, **props: Any) -> Finding:
    """A precision finding: the keep-fp32 rewrite and list, or (already recorded) info without one."""
    return ctx.finding(node, message + (note or caveat(setting)), value=value,
                       severity=Severity.INFO if note else severity,
                       rewrite=None if note else keep_rewrite(keep, setting), precision=setting.precision,
                       condition=setting.condition or None, keep_fp32=keep_names(keep), source=SOURCE, **props)
