"""Rewrites that move a node off an engine's drifting path without changing what the spec computes.

Both are verified like every results-keeping pass (graphlint.fix.manager): the rewritten model
must give the original's outputs on the verifying engine; tests/test_engine_drift_fix.py also
checks that the rewritten model matches the spec on the engine that drifted (OpenVINO).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from graphlint.fix import graphutil as gu
from graphlint.fix.base import FixContext, Pass, PassResult, register_pass
from graphlint.opmath import pool_output_size


def _static_shapes(model: onnx.ModelProto) -> dict[str, tuple]:
    return {k: gu.shape_of(v) for k, v in gu.value_info(gu.infer(model)).items()}


@register_pass
class SpaceToDepthDecompose(Pass):
    """SpaceToDepth (mode=CRD) as Reshape [n, c, h/b, b, w/b, b] / Transpose / Reshape (needs static shapes)."""

    name = "space-to-depth-decompose"
    # CRD keeps the channel outermost; DCR puts the block offsets first (ONNX Operators.md SpaceToDepth)
    PERM = {"CRD": [0, 1, 3, 5, 2, 4], "DCR": [0, 3, 5, 1, 2, 4]}

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        shapes = _static_shapes(model)
        changes, skipped, done = [], [], set()
        for req in requests or [{}]:
            for node in gu.select(g, req, {"SpaceToDepth"}):
                mode = gu.attr(node, "mode", "DCR")
                if id(node) in done or not gu.is_default(node.domain) or (not req and mode != "CRD"):
                    continue
                done.add(id(node))
                shp = shapes.get(node.input[0])
                b = int(gu.attr(node, "blocksize"))
                if shp is None or len(shp) != 4 or not all(isinstance(d, int) and d > 0 for d in shp):
                    skipped.append(f"{gu.label(node)!r}: input shape not static")
                    continue
                n, c, h, w = shp
                bld = gu.Builder(model, gu.label(node))
                x = bld.op("Reshape", [node.input[0], bld.const([n, c, h // b, b, w // b, b], np.int64)])
                x = bld.op("Transpose", [x], perm=self.PERM[mode])
                bld.op("Reshape", [x, bld.const([n, c * b * b, h // b, w // b], np.int64)], out=list(node.output[:1]))
                bld.replace(g, node)
                changes.append(f"{gu.label(node)!r}: SpaceToDepth(mode={mode}, blocksize={b}) -> Reshape/Transpose/Reshape")
        return PassResult(model, bool(changes), changes, skipped=skipped)


@register_pass
class MaxPoolExplicitPads(Pass):
    """MaxPool ceil_mode=1 -> ceil_mode=0 with end pads that give the spec's output size (static shapes).

    The extra end padding only widens windows that already hold input elements (max ignores
    padding), so values are unchanged; engines that keep a window starting in the padding under
    ceil_mode (OpenVINO 2026.4) then produce the spec's shape.
    """

    name = "maxpool-explicit-pads"

    def apply(self, model: onnx.ModelProto, requests: list[dict[str, Any]], ctx: FixContext) -> PassResult:
        g = model.graph
        shapes = _static_shapes(model)
        changes, skipped, done = [], [], set()
        for req in requests or [{}]:
            for node in gu.select(g, req, {"MaxPool"}):
                if id(node) in done or not gu.is_default(node.domain) or not gu.attr(node, "ceil_mode", 0):
                    continue
                done.add(id(node))
                shp = shapes.get(node.input[0])
                kernel = list(gu.attr(node, "kernel_shape") or [])
                if gu.attr(node, "auto_pad", "NOTSET") != "NOTSET" or shp is None or not kernel \
                        or not all(isinstance(d, int) for d in shp[2:]):
                    skipped.append(f"{gu.label(node)!r}: auto_pad set or spatial shape not static")
                    continue
                k = len(kernel)
                strides = list(gu.attr(node, "strides") or [1] * k)
                dil = list(gu.attr(node, "dilations") or [1] * k)
                pads = list(gu.attr(node, "pads") or [0] * (2 * k))
                new, sizes = list(pads), []
                for i in range(k):
                    out, _ = pool_output_size(shp[2 + i], kernel[i], strides[i], pads[i], pads[k + i], dil[i], True)
                    sizes.append(out)
                    ek = (kernel[i] - 1) * dil[i] + 1
                    # smallest end pad whose floor-mode size is `out`
                    new[k + i] = max(0, (out - 1) * strides[i] + ek - shp[2 + i] - pads[i])
                    if pool_output_size(shp[2 + i], kernel[i], strides[i], pads[i], new[k + i], dil[i])[0] != out:
                        break
                else:
                    gu.set_attr(node, "ceil_mode", 0)
                    gu.set_attr(node, "pads", new)
                    _declare_spatial(g, node.output, sizes)
                    changes.append(f"{gu.label(node)!r}: ceil_mode=1 pads {pads} -> ceil_mode=0 pads {new}")
                    continue
                skipped.append(f"{gu.label(node)!r}: no end padding reproduces the ceil-mode size")
        return PassResult(model, bool(changes), changes, skipped=skipped)


def _declare_spatial(g: onnx.GraphProto, outputs: Any, sizes: list[int]) -> None:
    """Write the spec's spatial sizes into the outputs' declared shapes (onnx shape inference 1.23
    keeps the last ceil-mode window, so exporters declare the engine's size, not the spec's)."""
    for vi in list(g.output) + list(g.value_info):
        if vi.name in outputs and vi.type.tensor_type.HasField("shape"):
            dims = vi.type.tensor_type.shape.dim
            for i, n in enumerate(sizes):
                if 2 + i < len(dims) and dims[2 + i].HasField("dim_value"):
                    dims[2 + i].dim_value = n
