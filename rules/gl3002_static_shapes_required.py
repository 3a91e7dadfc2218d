"""GL3002 static-shapes-required: the target compiles static shapes only."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _contract as C

from graphlint.analysis.shapes import dynamic_inputs
from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]" if shape is not None else "[?]"


class StaticShapesRequired(Rule):
    """An input has dynamic dims but the target compiles static shapes only.

    ## What it checks
    On targets whose profile sets `static_shapes` (OpenVINO NPU), every graph input dim must
    be a number. Inputs with symbolic or unknown dims are reported with the shape to fix,
    taken from the `--shapes` profile (its `opt` shape) when one is given.

    ## Why it matters
    The OpenVINO NPU plugin compiles a static network: `compile_model(model, "NPU")` refuses
    dynamic dims ("NPU plugin does not support dynamic shapes" or an upper-bound error), so
    the model has to be reshaped first and every request must use that shape.

    ## Example
    `pixel_values: [batch, 3, 224, 224]` checked with `--target openvino@npu`.

    ## Fix
    Fix the shape before compiling: `model.reshape({"pixel_values": [1, 3, 224, 224]})` in
    OpenVINO, or `--shapes pixel_values:1x3x224x224` with `graphlint fix` (fix-input-shape).
    Pad sequences to a fixed length (or compile one model per bucket).
    """

    id = "GL3002"
    name = "static-shapes-required"
    severity = Severity.ERROR
    dialects = frozenset({ONNX, OPENVINO})
    fixable = True
    source = "rules/data/targets/openvino-2026.4.toml [devices.npu] static_shapes"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        if not ctx.target.option("static_shapes"):
            return
        profiles = ctx.options.get("shapes") or {}
        for v in dynamic_inputs(ctx.model):
            prof = profiles.get(v.name)
            shape = list(prof.opt) if prof is not None else None
            rw = Rewrite("fix-input-shape", {"input": v.name, "shape": shape}, safe=False,
                         description=(f"Make '{v.name}' static as {shape} (from --shapes)." if shape else
                                      f"Give '{v.name}' a static shape (pass --shapes {v.name}:DIMS)."))
            yield ctx.finding(
                None,
                f"Input {quote(v.name)} has dynamic shape {_fmt(v.shape)}, but {ctx.target.title} compiles "
                f"static shapes only; reshape it to a fixed shape before compiling.",
                value=v, rewrite=rw, shape=_fmt(v.shape),
                **C.props(C.document_basis(ctx.target.option("static_shapes_docs"))),
            )
