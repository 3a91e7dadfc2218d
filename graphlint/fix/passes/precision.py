"""keep-fp32: mark the nodes the precision findings (GL6xxx) name, where the format has a place for it.

* OpenVINO IR: ``<attribute name="precise" version="0"/>`` in each layer's rt_info, the IR spelling
  of ``ov::disable_fp16_compression``. The CPU plugin then runs the layer in f32 under a bf16
  inference precision (shown: tests/test_precision_engines.py); the GPU plugin's f16 conversion
  skips such layers (its source; not runnable here). An .xml-only edit, the .bin untouched.
* ONNX: a node ``metadata_props`` entry ``graphlint.keep_fp32`` = the precision. A record for later
  conversion only: no engine reads it (OpenVINO's ONNX frontend drops node metadata, measured;
  convert_float_to_float16 and TensorRT ignore it), so the findings stay, as info, pointing at
  the keep-fp32 list in each engine's syntax.

Neither changes results at fp32, which is how the fix runner verifies them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import defusedxml.ElementTree as SafeET
import onnx

from graphlint.fix.base import ONNX_FORMAT, OPENVINO_FORMAT, FixContext, Pass, PassResult, register_pass
from graphlint.fix.ir_model import IRModel
from graphlint.fix.passes.openvino import xml_edit_result

ONNX_KEY = "graphlint.keep_fp32"
IR_MARK = "precise"  # RTTI name of ov::DisableFP16Compression, as read_model knows it


def _names(requests: list[dict[str, Any]]) -> tuple[list[str], str]:
    names: list[str] = []
    precision = ""
    for r in requests:
        names.extend(n for n in r.get("nodes", []) if n not in names)
        precision = precision or r.get("precision", "")
    return names, precision or "fp16"


@register_pass
class KeepFp32IR(Pass):
    """Mark OpenVINO IR layers ``precise`` (params: nodes = layer names)."""

    name = "keep-fp32"
    formats = frozenset({OPENVINO_FORMAT})

    def apply(self, model: IRModel, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        names, _ = _names(requests)
        if not names:
            return PassResult(model, False, skipped=["no nodes named (the GL6xxx findings name them)"])
        root = SafeET.fromstring(model.xml)
        layers = {la.get("name"): la for la in root.iter("layer")}
        changes, skipped = [], []
        for name in names:
            layer = layers.get(name)
            if layer is None:
                skipped.append(f"{name!r}: no such layer")
                continue
            rt = layer.find("rt_info")
            if rt is None:
                rt = ET.Element("rt_info")
                data = layer.find("data")
                layer.insert(list(layer).index(data) + 1 if data is not None else 0, rt)
            if any(a.get("name") == IR_MARK for a in rt.findall("attribute")):
                continue
            ET.SubElement(rt, "attribute", {"name": IR_MARK, "version": "0"})
            changes.append(f"layer {name!r} ({layer.get('type')}): rt_info precise (kept in f32)")
        return xml_edit_result(model, root, changes, skipped)


@register_pass
class KeepFp32Onnx(Pass):
    """Record the keep-fp32 decision in ONNX node metadata (params: nodes = node names)."""

    name = "keep-fp32"
    formats = frozenset({ONNX_FORMAT})

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        names, precision = _names(requests)
        wanted = set(names)
        changes = []
        for node in model.graph.node:
            if node.name not in wanted or any(p.key == ONNX_KEY for p in node.metadata_props):
                continue
            entry = node.metadata_props.add()
            entry.key, entry.value = ONNX_KEY, precision
            changes.append(f"node {node.name!r} ({node.op_type}): metadata {ONNX_KEY}={precision} "
                           "(a record for conversion tools: no engine reads it; use the keep-fp32 list)")
        missing = wanted - {n.name for n in model.graph.node}
        skipped = [f"{n!r}: no such node" for n in sorted(missing)]
        return PassResult(model, bool(changes), changes, skipped=skipped)
