"""The keep-fp32 list: the nodes the precision findings (GL6xxx) ask to keep in fp32, per model
and target, in the syntax the target's engine takes.

* TensorRT 10.x: ``trtexec --fp16 --precisionConstraints=obey --layerPrecisions=... --layerOutputTypes=...``
  (layer names are the ONNX node names; weak typing is deprecated since 10.12 and gone in 11,
  where the ONNX graph itself must carry the fp32 islands: the ONNX Runtime recipe writes one).
* OpenVINO: ``graphlint fix --precision P`` writes ``<attribute name="precise" version="0"/>``
  into the layers' rt_info; then ``INFERENCE_PRECISION_HINT`` as advice.
* ONNX Runtime: ``convert_float_to_float16(..., node_block_list=[...])`` followed by
  :func:`graphlint.fp16.join_blocked`, which drops the converter's fp16 Cast pairs between two
  kept nodes (the block list alone leaves those values in fp16).

``collect`` reads a run's findings; ``render_text`` / ``render_json`` write the lists.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

KEY = "keep_fp32"  # the finding property holding the node names


@dataclass
class KeepList:
    model: str
    target: str  # the target spec, e.g. trt@10.15
    engine: str  # trt | ort | openvino
    precision: str
    nodes: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    condition: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "target": self.target, "precision": self.precision, "nodes": self.nodes,
                "rules": sorted(set(self.rules)), "condition": self.condition, "recipe": recipe(self)}


def collect(run: Any) -> list[KeepList]:
    """One list per (model, target) that has precision findings, nodes in finding order, once each."""
    lists: dict[tuple[str, str], KeepList] = {}
    for result in run.results:
        for f in result.findings:
            names = f.properties.get(KEY)
            if f.suppressed or not names:
                continue
            key = (f.model, f.target)
            kl = lists.get(key)
            if kl is None:
                kl = lists[key] = KeepList(f.model, f.target, result.target.name, f.properties.get("precision", ""),
                                           condition=f.properties.get("condition", ""))
            kl.nodes.extend(n for n in names if n not in kl.nodes)
            kl.rules.append(f.rule_id)
    return list(lists.values())


def _flag(precision: str) -> str:
    return "--bf16" if precision == "bf16" else "--fp16"


def recipe(kl: KeepList) -> str:
    """The engine's own syntax for keeping ``kl.nodes`` in fp32."""
    if kl.engine == "trt":
        names = ",".join(f"{n}:fp32" for n in kl.nodes)
        return (f"trtexec --onnx={kl.model} {_flag(kl.precision)} --precisionConstraints=obey "
                f"--layerPrecisions={names} --layerOutputTypes={names}")
    if kl.engine == "openvino":
        hint = "bf16" if kl.precision == "bf16" else "f16"
        out = os.path.splitext(kl.model)[0] + "_keep_fp32.xml"
        src = kl.model if kl.model.endswith(".xml") else os.path.splitext(kl.model)[0] + ".xml"
        head = "" if kl.model.endswith(".xml") else (
            f"ovc {kl.model} --compress_to_fp16 False --output_model {src}  # the fix marks IR layers\n")
        return (head + f"graphlint fix {src} -t openvino --precision {kl.precision} -o {out}\n"
                f"# then compile with {{'INFERENCE_PRECISION_HINT': '{hint}'}} (or 'f32' to turn reduced precision off)")
    block = json.dumps(kl.nodes)
    return ("import onnx\n"
            "from onnxruntime.transformers.float16 import convert_float_to_float16\n"
            "from graphlint.fp16 import join_blocked\n"
            f"model = convert_float_to_float16(onnx.load({kl.model!r}), keep_io_types=True,\n"
            f"                                 node_block_list={block})\n"
            "onnx.save(join_blocked(model), 'model_fp16.onnx')")


def render_text(lists: list[KeepList]) -> str:
    out = []
    for kl in lists:
        cond = f" ({kl.condition})" if kl.condition else ""
        out.append(f"keep-fp32: {kl.model} -> {kl.target} at {kl.precision}{cond}: {len(kl.nodes)} node(s)\n")
        out.extend(f"  {line}\n" for line in recipe(kl).splitlines())
    return "".join(out)


def render_json(lists: list[KeepList]) -> str:
    return json.dumps({"keep_fp32": [kl.to_dict() for kl in lists]}, indent=1) + "\n"
