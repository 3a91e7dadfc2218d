"""Shared helpers of the precision rules (GL6xxx): the keep-fp32 rewrite and the engine's caveat.

The facts live in ``data/precision.toml`` (read by graphlint.analysis.precision). Not a rule
module (leading underscore: rule discovery skips it).
"""

from __future__ import annotations

from collections.abc import Iterable

from graphlint.analysis.precision import TABLE, Setting, engine
from graphlint.ir import Node
from graphlint.rule import Rewrite, quote

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
