"""OpenVINO IR passes: layouts (an rt_info-only .xml edit, .bin untouched) and static input shapes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import defusedxml.ElementTree as SafeET

from graphlint.fix.base import OPENVINO_FORMAT, FixContext, Pass, PassResult, register_pass
from graphlint.fix.ir_model import IRModel


def xml_edit_result(model: IRModel, root: ET.Element, changes: list[str], skipped: list[str]) -> PassResult:
    """The result of an .xml-only edit of ``root`` (the .bin kept as it is)."""
    if not changes:
        return PassResult(model, False, skipped=skipped)
    ET.indent(root, space="\t")
    xml = '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return PassResult(IRModel(xml, model.bin_path, model.bin_changed), True, changes, skipped=skipped)


def _layout_text(layout: str) -> str:
    import openvino as ov

    return ov.Layout(layout).to_string()


def _port_names(port: ET.Element) -> set[str]:
    return {n.strip() for n in (port.get("names") or "").split(",") if n.strip()}


def _set_rt_layout(port: ET.Element, text: str) -> str | None:
    """Set the layout attribute in a port's rt_info; return the previous value."""
    rt = port.find("rt_info")
    if rt is None:
        rt = ET.SubElement(port, "rt_info")
    for a in rt.findall("attribute"):
        if a.get("name") == "layout":
            old = a.get("layout")
            a.set("layout", text)
            return old
    ET.SubElement(rt, "attribute", {"name": "layout", "version": "0", "layout": text})
    return None


def _ports(root: ET.Element) -> dict[str, ET.Element]:
    """Value name -> the port whose rt_info carries its layout (Parameter output / port feeding a Result)."""
    layers = {la.get("id"): la for la in root.iter("layer")}
    out: dict[str, ET.Element] = {}
    for la in layers.values():
        if la.get("type") == "Parameter":
            port = la.find("output/port")
            if port is not None:
                for n in _port_names(port) | {la.get("name") or ""}:
                    out[n] = port
    for e in root.iter("edge"):
        to = layers.get(e.get("to-layer"))
        frm = layers.get(e.get("from-layer"))
        if to is None or frm is None or to.get("type") != "Result":
            continue
        # OpenVINO reads an output's layout from the producer port that feeds the Result.
        src = next((p for p in frm.findall("output/port") if p.get("id") == e.get("from-port")), None)
        if src is not None:
            for n in _port_names(src) | {to.get("name") or "", to.get("output_names") or ""}:
                out.setdefault(n, src)
    return out


@register_pass
class SetLayout(Pass):
    """Set OpenVINO input/output layouts (rt_info ``layout`` on the port), editing only the .xml."""

    name = "set-layout"
    formats = frozenset({OPENVINO_FORMAT})
    after = ("fix-input-shape",)

    def apply(self, model: IRModel, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        plan = dict(ctx.layouts)
        for r in requests:
            if r.get("value"):
                plan.setdefault(r["value"], r.get("layout") or "")
        if not plan:
            return PassResult(model, False)
        root = SafeET.fromstring(model.xml)
        ports = _ports(root)
        changes, skipped = [], []
        for name, layout in plan.items():
            if not layout or not layout.strip("[]?,. "):
                skipped.append(f"{name!r}: no layout known (pass --layout {name}:NCHW or similar)")
                continue
            port = ports.get(name)
            if port is None:
                skipped.append(f"{name!r}: no such model input or output")
                continue
            try:
                text = _layout_text(layout)
            except Exception as e:
                skipped.append(f"{name!r}: layout {layout!r} not understood by OpenVINO ({e})")
                continue
            rank = len(port.findall("dim"))
            if rank and text.count(",") + 1 != rank and "..." not in text:
                skipped.append(f"{name!r}: layout {text} has the wrong rank for a rank-{rank} port")
                continue
            old = _set_rt_layout(port, text)
            if old != text:
                changes.append(f"{name!r}: layout {old or '(none)'} -> {text}")
        return xml_edit_result(model, root, changes, skipped)


@register_pass
class FixInputShapeIR(Pass):
    """Make dynamic OpenVINO inputs static (openvino.Model.reshape, then openvino.save_model)."""

    name = "fix-input-shape"
    formats = frozenset({OPENVINO_FORMAT})

    def apply(self, model: IRModel, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        from graphlint.fix.passes.contracts import parse_shape

        plan: dict[str, tuple[int | str, ...]] = {}
        for r in requests:
            if r.get("input") and (r.get("shape") or r["input"] in ctx.shapes):
                plan[r["input"]] = parse_shape(r.get("shape") or ctx.shapes[r["input"]])
        if not plan:
            return PassResult(model, False, skipped=["no shapes given (use --shapes NAME:1x3x224x224)"])
        ovm = model.to_openvino(ctx.workdir)
        changes, skipped, reshape = [], [], {}
        for port in ovm.inputs:
            name = next((n for n in port.get_names() if n in plan), None)
            if name is None:
                continue
            ps = port.get_partial_shape()
            want = plan[name]
            if ps.rank.is_static and len(ps) != len(want):
                skipped.append(f"{name!r}: rank {len(ps)} but shape {list(want)} given")
                continue
            if ps.is_static:
                if tuple(ps.to_shape()) != want:
                    skipped.append(f"{name!r}: already static {list(ps.to_shape())}, not {list(want)}")
                continue
            reshape[port] = [d if isinstance(d, int) else -1 for d in want]  # a named dim stays dynamic
            changes.append(f"input {name!r}: shape {ps} -> {'x'.join(map(str, want))}")
        for name in plan:
            if not any(name in p.get_names() for p in ovm.inputs):
                skipped.append(f"{name!r}: no such model input")
        if not reshape:
            return PassResult(model, False, skipped=skipped)
        ovm.reshape(reshape)
        return PassResult(IRModel.from_openvino(ovm, ctx.workdir), True, changes, skipped=skipped)
