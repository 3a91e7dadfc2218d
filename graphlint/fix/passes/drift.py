"""Meaning-preserving drift fixes and the opset upgrade they prepare for.

Each fix makes an opset-dependent meaning explicit *before* ``onnx.version_converter`` moves
the model to a newer opset, so the upgrade cannot silently change results.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass

# Defaults whose meaning is worth writing down (used when explicit-attribute is run without
# parameters). Resize's defaults are the ones engines have historically disagreed on.
IMPLICIT_DEFAULTS: dict[str, dict[str, Any]] = {
    "Resize": {"coordinate_transformation_mode": "half_pixel", "mode": "nearest",
               "nearest_mode": "round_prefer_floor"},
}


@register_pass
class ExplicitAttribute(Pass):
    """Write an attribute's implicit default explicitly (same meaning, now visible)."""

    name = "explicit-attribute"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        changes: list[str] = []
        skipped: list[str] = []
        for req in requests or [{}]:
            if req.get("attribute"):
                todo = [(n, req["attribute"], req.get("value")) for n in gu.select(model.graph, req)]
            else:
                todo = [(n, a, v) for n in gu.select(model.graph, req, set(IMPLICIT_DEFAULTS))
                        if gu.opset(model) >= 11 for a, v in IMPLICIT_DEFAULTS[n.op_type].items()]
            for node, name, value in todo:
                if value is None:
                    skipped.append(f"{gu.label(node)!r}: no value given for {name!r}")
                    continue
                current = gu.attr(node, name)
                if current is not None:
                    if current != value and req.get("attribute"):
                        skipped.append(f"{gu.label(node)!r}: {name} is already {current!r}, not {value!r}")
                    continue
                gu.set_attr(node, name, value)
                changes.append(f"{gu.label(node)!r}: set {name}={value!r} (its implicit default)")
        return PassResult(model, bool(changes), changes, skipped=skipped)


@register_pass
class ResizeCoordinateMode(Pass):
    """Set a Resize's coordinate_transformation_mode / nearest_mode (params: node, mode, nearest_mode, opset).

    With ``opset`` above the model's, the model is first converted (onnx.version_converter) and the
    mode set afterwards, so a Resize-10 keeps its asymmetric meaning across the upgrade. When the
    mode set is the one the node already had in effect, outputs must stay equal (verified);
    otherwise the change is on purpose and its size is reported.
    """

    name = "resize-coordinate-mode"
    preserves_results = False
    after = ("upsample-to-resize", "explicit-attribute")

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        changes: list[str] = []
        skipped: list[str] = []
        before = {gu.label(n): _effective_resize(n, gu.opset(model)) for n in model.graph.node if n.op_type == "Resize"}
        want = max([int(r["opset"]) for r in requests if r.get("opset")] + [11])
        cur = gu.opset(model)
        if cur < want and any(r.get("mode") for r in requests):
            try:
                model = onnx.version_converter.convert_version(model, want)
            except Exception as e:
                return PassResult(model, False, skipped=[f"cannot convert to opset {want}: {str(e).splitlines()[0]}"])
            changes.append(f"opset {cur} -> {want} (Resize-11 has coordinate_transformation_mode)")
        same = True
        for req in requests:
            mode = req.get("mode")
            if not mode:
                skipped.append("resize-coordinate-mode needs a 'mode' parameter")
                continue
            for node in gu.select(model.graph, req, {"Resize"}):
                for key, val in (("coordinate_transformation_mode", mode), ("nearest_mode", req.get("nearest_mode"))):
                    if val and gu.attr(node, key) != val:
                        old = gu.attr(node, key)
                        gu.set_attr(node, key, val)
                        changes.append(f"{gu.label(node)!r}: {key} {old or '(default)'} -> {val}")
                after = _effective_resize(node, gu.opset(model))
                same &= before.get(gu.label(node)) == after
        modified = any("->" in c and "opset" not in c for c in changes)
        return PassResult(model, modified, changes if modified else [], skipped=skipped, changes_results=not same)


def _effective_resize(node: onnx.NodeProto, opset: int) -> tuple[str, str]:
    """What a Resize computes: (coordinate mode, nearest rounding) with the opset's defaults."""
    if opset < 11:
        return ("asymmetric", "floor" if gu.attr(node, "mode", "nearest") == "nearest" else "")
    nearest = gu.attr(node, "nearest_mode", "round_prefer_floor") if gu.attr(node, "mode", "nearest") == "nearest" else ""
    return (gu.attr(node, "coordinate_transformation_mode", "half_pixel"), nearest)


@register_pass
class UpsampleToResize(Pass):
    """Replace deprecated Upsample with Resize (asymmetric coordinates, floor rounding: Upsample's meaning)."""

    name = "upsample-to-resize"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        changes: list[str] = []
        ups = [n for req in (requests or [{}]) for n in gu.select(g, req, {"Upsample"}) if gu.is_default(n.domain)]
        if not ups:
            return PassResult(model, False)
        op = gu.opset(model)
        if op < 10:
            return PassResult(model, False, skipped=["Upsample at opset < 10: run opset-upgrade (opset >= 11) first"])
        namer = gu.Namer(model)
        seen: set[int] = set()
        for node in ups:
            if id(node) in seen:
                continue
            seen.add(id(node))
            mode = gu.attr(node, "mode", "nearest")
            scales = node.input[1] if len(node.input) > 1 else None
            if scales is None:  # Upsample-7: scales as an attribute
                arr = np.asarray(gu.attr(node, "scales"), np.float32)
                scales = namer(f"{gu.label(node)}/scales")
                g.initializer.append(numpy_helper.from_array(arr, scales))
            if op >= 11:
                roi = ""
                ins = [node.input[0], roi, scales]
                attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric"}
                if mode == "nearest":
                    attrs["nearest_mode"] = "floor"
            else:
                ins, attrs = [node.input[0], scales], {"mode": mode}
            new = helper.make_node("Resize", ins, list(node.output), name=node.name or namer("Resize"), **attrs)
            idx = gu.index_of(g, node)
            del g.node[idx]
            g.node.insert(idx, new)
            changes.append(f"{gu.label(node)!r}: Upsample({mode}) -> Resize({attrs})")
        return PassResult(model, True, changes)


@register_pass
class SoftmaxKeep2d(Pass):
    """Wrap an opset<13 Softmax/LogSoftmax/Hardmax in Flatten + Reshape so opset 13's per-axis meaning keeps results."""

    name = "softmax-keep-2d-semantics"
    after = ("explicit-attribute",)

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        if gu.opset(model) >= 13:
            return PassResult(model, False)
        shapes = {k: gu.shape_of(v) for k, v in gu.value_info(gu.infer(model)).items()}
        changes: list[str] = []
        skipped: list[str] = []
        nodes = [n for req in (requests or [{}])
                 for n in gu.select(g, req, {"Softmax", "LogSoftmax", "Hardmax"}) if gu.is_default(n.domain)]
        done: set[int] = set()
        for node in nodes:
            if id(node) in done:
                continue
            done.add(id(node))
            shp = shapes.get(node.input[0])
            if shp is None:
                skipped.append(f"{gu.label(node)!r}: input rank unknown")
                continue
            rank = len(shp)
            axis = gu.attr(node, "axis", 1)
            axis = axis + rank if axis < 0 else axis
            if axis >= rank - 1:  # the flattened and per-axis meanings agree
                continue
            b = gu.Builder(model, gu.label(node))
            flat = b.op("Flatten", [node.input[0]], axis=axis)
            soft = b.op(node.op_type, [flat], axis=1)
            b.op("Reshape", [soft, b.op("Shape", [node.input[0]])], out=list(node.output[:1]))
            b.replace(g, node)
            changes.append(f"{gu.label(node)!r}: {node.op_type}(axis={axis}) on rank {rank} wrapped in "
                           "Flatten/Reshape (keeps the opset<13 flattened meaning)")
        return PassResult(model, bool(changes), changes, skipped=skipped)


@register_pass
class GridSampleModeNames(Pass):
    """GridSample-20 modes (linear, cubic) as the opset-16 names TensorRT parses (bilinear, bicubic).

    The opset-16 names are invalid at opset 20, and onnx.version_converter has no 20 -> 19 adapter
    for GridSample, so the pass moves the default domain to opset 19 itself, but only when no other
    op in the model changed at opset 20 (otherwise it says which ops block it).
    """

    name = "gridsample-mode-names"
    after = ("opset-upgrade",)
    RENAME = {"linear": "bilinear", "cubic": "bicubic"}

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        nodes = [n for req in (requests or [{}]) for n in gu.select(model.graph, req, {"GridSample"})
                 if gu.attr(n, "mode", "linear" if gu.opset(model) >= 20 else "bilinear") in self.RENAME]
        if not nodes:
            return PassResult(model, False)
        changes = []
        cur = gu.opset(model)
        if cur >= 20:
            blocking = sorted({n.op_type for g in gu._graphs(model.graph) for n in g.node
                               if gu.is_default(n.domain) and n.op_type != "GridSample"
                               and _since(n.op_type, cur) > 19})
            if blocking:
                return PassResult(model, False, skipped=[
                    f"the opset-16 mode names need opset <= 19, but {', '.join(blocking)} need opset {cur}"])
            for o in model.opset_import:
                if gu.is_default(o.domain):
                    o.version = 19
            changes.append(f"opset {cur} -> 19 (no op but GridSample changed at opset 20)")
        seen: set[int] = set()
        for node in nodes:
            if id(node) in seen:
                continue
            seen.add(id(node))
            mode = gu.attr(node, "mode", "linear" if cur >= 20 else "bilinear")
            gu.set_attr(node, "mode", self.RENAME[mode])
            changes.append(f"{gu.label(node)!r}: mode {mode} -> {self.RENAME[mode]}")
        return PassResult(model, True, changes)


def _since(op: str, opset: int) -> int:
    try:
        return onnx.defs.get_schema(op, opset, "").since_version
    except Exception:  # unknown op: treat as blocking
        return opset


@register_pass
class GroupNormPerChannel(Pass):
    """GroupNormalization-18 per-group scale/bias -> opset-21 per-channel constants (model moves to opset 21)."""

    name = "groupnorm-per-channel"
    after = ("softmax-keep-2d-semantics", "upsample-to-resize", "explicit-attribute")

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        if gu.opset(model) >= 21:
            return PassResult(model, False)
        shapes = {k: gu.shape_of(v) for k, v in gu.value_info(gu.infer(model)).items()}
        plans: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        skipped: list[str] = []
        for req in requests or [{}]:
            for node in gu.select(g, req, {"GroupNormalization"}):
                groups = gu.attr(node, "num_groups")
                shp = shapes.get(node.input[0])
                scale, bias = gu.const_value(g, node.input[1]), gu.const_value(g, node.input[2])
                if shp is None or len(shp) < 2 or not isinstance(shp[1], int) or scale is None or bias is None:
                    skipped.append(f"{gu.label(node)!r}: channels or scale/bias not constant")
                    continue
                rep = shp[1] // groups
                plans[node.output[0]] = (np.repeat(scale, rep), np.repeat(bias, rep))
        if not plans:
            return PassResult(model, False, skipped=skipped)
        upgraded = onnx.version_converter.convert_version(model, 21)
        namer = gu.Namer(upgraded)
        changes = ["model converted to opset 21 (GroupNormalization-21 takes per-channel scale/bias)"]
        for node in upgraded.graph.node:
            if node.op_type == "GroupNormalization" and node.output[0] in plans:
                s, b = plans[node.output[0]]
                sn, bn = namer(f"{gu.label(node)}/scale_c"), namer(f"{gu.label(node)}/bias_c")
                upgraded.graph.initializer.extend([numpy_helper.from_array(s, sn), numpy_helper.from_array(b, bn)])
                node.input[1], node.input[2] = sn, bn
                changes.append(f"{gu.label(node)!r}: scale/bias expanded to {s.shape[0]} channels")

        gu.prune(upgraded)
        return PassResult(upgraded, True, changes, skipped=skipped)


def best_opset(ctx: FixContext) -> int:
    top = onnx.defs.onnx_opset_version()
    if ctx.target is not None:
        rng = ctx.target.opset_range("ai.onnx")
        if rng:
            top = min(top, rng[1])
    try:  # never beyond what onnxruntime (the verifier) runs
        import onnxruntime

        ort_max = {"1.32": 24}.get(".".join(onnxruntime.__version__.split(".")[:2]))
        if ort_max:
            top = min(top, ort_max)
    except ImportError:
        pass
    return top


@register_pass
class OpsetUpgrade(Pass):
    """Convert the default domain to a newer opset with onnx.version_converter (after the drift fixes)."""

    name = "opset-upgrade"
    after = ("explicit-attribute", "resize-coordinate-mode", "upsample-to-resize", "softmax-keep-2d-semantics",
             "groupnorm-per-channel", "unfuse-contrib")

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        wanted = [int(r["opset"]) for r in requests if r.get("opset")]
        to = max(wanted) if wanted else best_opset(ctx)
        cur = gu.opset(model)
        if cur >= to:
            return PassResult(model, False)
        try:
            new = onnx.version_converter.convert_version(model, to)
        except Exception as e:  # the converter lacks an adapter for some op
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return PassResult(model, False, skipped=[f"onnx.version_converter {cur} -> {to} failed: {msg}"])
        return PassResult(new, True, [f"opset {cur} -> {to} (onnx.version_converter)"])


@register_pass
class AttributeToInput(Pass):
    """Move an attribute that became an input at the node's opset (axes, split, min/max, pads) into a constant input."""

    name = "attribute-to-input"
    after = ("opset-upgrade",)
    # op -> attribute -> (input index, dtype) per the operator changelog
    TABLE: dict[str, dict[str, tuple[int, Any]]] = {
        "ReduceSum": {"axes": (1, np.int64)}, "ReduceMean": {"axes": (1, np.int64)},
        "ReduceMax": {"axes": (1, np.int64)}, "ReduceMin": {"axes": (1, np.int64)},
        "ReduceProd": {"axes": (1, np.int64)}, "ReduceL1": {"axes": (1, np.int64)},
        "ReduceL2": {"axes": (1, np.int64)}, "ReduceLogSum": {"axes": (1, np.int64)},
        "ReduceLogSumExp": {"axes": (1, np.int64)}, "ReduceSumSquare": {"axes": (1, np.int64)},
        "Unsqueeze": {"axes": (1, np.int64)}, "Squeeze": {"axes": (1, np.int64)},
        "Split": {"split": (1, np.int64)}, "Pad": {"pads": (1, np.int64), "value": (2, None)},
        "Clip": {"min": (1, None), "max": (2, None)}, "Slice": {"starts": (1, np.int64), "ends": (2, np.int64),
                                                                 "axes": (3, np.int64)},
        "Resize": {"scales": (2, np.float32)}, "Upsample": {"scales": (1, np.float32)},
    }

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        namer = gu.Namer(model)
        vi = gu.value_info(gu.infer(model))
        changes, skipped = [], []
        for req in requests or [{}]:
            for node in gu.select(g, req, set(self.TABLE)):
                for attr_name, (idx, dt) in self.TABLE[node.op_type].items():
                    if req.get("attribute") and req["attribute"] != attr_name:
                        continue
                    value = gu.attr(node, attr_name)
                    if value is None:
                        continue
                    if dt is None:  # same element type as the data input
                        v = vi.get(node.input[0])
                        elem = v.type.tensor_type.elem_type if v is not None else onnx.TensorProto.FLOAT
                        dt = onnx.helper.tensor_dtype_to_np_dtype(elem)
                    arr = np.asarray(value, dtype=dt)
                    name = namer(f"{gu.label(node)}/{attr_name}")
                    g.initializer.append(numpy_helper.from_array(arr, name))
                    while len(node.input) < idx:
                        node.input.append("")
                    if len(node.input) == idx:
                        node.input.append(name)
                    elif not node.input[idx]:
                        node.input[idx] = name
                    else:
                        skipped.append(f"{gu.label(node)!r}: input {idx} already set; {attr_name} left as is")
                        continue
                    for i, a in enumerate(node.attribute):
                        if a.name == attr_name:
                            del node.attribute[i]
                            break
                    changes.append(f"{gu.label(node)!r}: attribute {attr_name} -> constant input {idx}")
        return PassResult(model, bool(changes), changes, skipped=skipped)
