"""GL2001 resize-coordinate-drift: a Resize whose coordinate mapping depends on opset or engine."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

ID = "GL2001"


class ResizeCoordinateDrift(Rule):
    """A Resize's coordinate mapping changes with the opset or is read differently by the target.

    ## What it checks
    Resize nodes against the Resize facts in `rules/data/drift.toml`:

    - **Resize-10** (node at opset 10) always maps coordinates asymmetrically. Resize-11 added
      `coordinate_transformation_mode` with default `half_pixel`, and `onnx.version_converter`
      10 -> 11 writes no mode, so the upgraded model shifts every output by half a pixel.
    - **`pytorch_half_pixel` with an output spatial dim of 1** maps that axis to coordinate 0;
      `half_pixel` and `torch.nn.functional.interpolate(align_corners=False)` use the input's
      centre. (torch 2.13 exports `half_pixel`, older exporters wrote `pytorch_half_pixel`.)
    - **`tf_half_pixel_for_nn` at opset >= 13**, where it no longer exists.
    - **Modes the target does not accept** (per-target table `[resize.<target>]`): TensorRT
      documents coordinate modes `half_pixel`, `pytorch_half_pixel`, `tf_half_pixel_for_nn`,
      `asymmetric`, `align_corners` (not `tf_crop_and_resize`, not `half_pixel_symmetric` of
      opset 19), modes `nearest`/`linear` (not `cubic`), `keep_aspect_ratio_policy` `stretch`
      and no `antialias` (both opset 18); OpenVINO 2026.4 refuses `half_pixel_symmetric` and
      `tf_crop_and_resize` (checked by converting each mode). A value the target's support
      table already rejects is GL1004's error alone, unless this rule has a rewrite for it.

    ## Why it matters
    A half-pixel shift produces no error: segmentation masks and detection boxes move and
    accuracy drops quietly. onnxruntime gives `[0, .5, 1, ..]` for a Resize-10 2x upsample and
    `[0, .25, .75, ..]` for the same node at opset 11; a 4x4 -> 1x3 resize gives
    `[6.17, 7.5, 8.83]` with `half_pixel` (torch's numbers) but `[0.17, 1.5, 2.83]` with
    `pytorch_half_pixel`. `tf_half_pixel_for_nn` at opset 13 runs in onnxruntime with a warning
    but `onnx.reference` rejects it.

    ## Example
    A model with `Resize(X, scales)` at opset 10 converted with
    `onnx.version_converter.convert_version(model, 13)`.

    ## Fix
    Apply the suggested `resize-coordinate-mode` rewrite before converting: Resize-10 becomes
    `asymmetric` (nearest: `nearest_mode=floor`); `tf_half_pixel_for_nn` + `floor` becomes the
    exactly equivalent `half_pixel` + `round_prefer_ceil`; `pytorch_half_pixel` on a length-1
    output becomes `half_pixel` if the model should match PyTorch. For modes the target lacks,
    re-export with a supported mode (e.g. `align_corners=False` bilinear).
    """

    id = ID
    name = "resize-coordinate-drift"
    severity = Severity.WARNING
    requires = ("support",)
    op_types = frozenset({"Resize"})
    fixable = True
    source = f"{D.SOURCE} (Resize facts); ONNX Changelog Resize-10/11/13/18/19; TensorRT operators.md"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        if not isinstance(node.opset, int):
            return
        where = f"Node {quote(node.label)} (Resize-{_version(node.opset)})"
        ctm = node.attr("coordinate_transformation_mode", "half_pixel")
        mode = node.attr("mode", "nearest")
        nearest = node.attr("nearest_mode", "round_prefer_floor")

        f = D.fact("resize-10-asymmetric")
        if D.applies(f, node):
            yield ctx.finding(
                node,
                f"{where} maps coordinates asymmetrically; converting it to opset >= 11 without setting "
                "coordinate_transformation_mode='asymmetric' picks up the half_pixel default and shifts "
                "results by half a pixel (onnx.version_converter does exactly that)"
                + (". Linear Resize-10 cannot express torch's align_corners=False (half-pixel) interpolation "
                   "either: re-export at opset >= 11 if this came from interpolate." if mode == "linear" else "."),
                # the meaning Resize-10 already has, so safe; the attribute exists from opset 11 on,
                # so it must be written while (or after) the model moves to opset 11
                rewrite=D.fact_rewrite(f, node, safe=True, mode="asymmetric",
                                       nearest_mode="floor" if mode == "nearest" else None, opset=11),
                **D.props(f, mode=mode),
            )
            return

        f = D.fact("resize-tf-half-pixel-for-nn-removed")
        if ctm == "tf_half_pixel_for_nn" and D.applies(f, node):
            exact = mode == "nearest" and nearest == "floor"
            rw = D.fact_rewrite(f, node, mode="half_pixel", nearest_mode="round_prefer_ceil", safe=True) \
                if exact else None
            yield ctx.finding(
                node,
                f"{where} uses coordinate_transformation_mode 'tf_half_pixel_for_nn', removed at opset 13; "
                "strict readers reject it" + (" (with nearest_mode floor it equals half_pixel + "
                                                "round_prefer_ceil)." if exact else "."),
                rewrite=rw, **D.props(f, coordinate_transformation_mode=ctm),
            )

        f = D.fact("resize-pytorch-half-pixel-length-1")
        if ctm == "pytorch_half_pixel" and D.applies(f, node):
            ones = _length_one_axes(node)
            if ones:
                yield ctx.finding(
                    node,
                    f"{where} uses 'pytorch_half_pixel' and output axis {ones} has length 1: that axis "
                    "samples input coordinate 0, while 'half_pixel' and torch's interpolate sample the "
                    "input centre.",
                    rewrite=D.fact_rewrite(f, node, mode="half_pixel"),
                    **D.props(f, axes=ones),
                )

        yield from self._target_modes(node, ctx, where, {
            "coordinate_transformation_mode": ctm, "mode": mode,
            "nearest_mode": nearest if mode == "nearest" else None,
            "keep_aspect_ratio_policy": node.attr("keep_aspect_ratio_policy", "stretch"),
            "antialias": node.attr("antialias", 0),
        })

    def _target_modes(self, node: Node, ctx: RuleContext, where: str, attrs: dict) -> Iterator[Finding]:
        accepted = D.table().get("resize", {}).get(ctx.target.name)
        if not accepted:
            return
        f = D.fact("resize-target-modes")
        for key, value in attrs.items():
            allowed = accepted.get(key)
            if value is None or allowed is None or value in allowed:
                continue
            rw = None
            if key == "coordinate_transformation_mode" and value == "half_pixel_symmetric":
                rw = D.fact_rewrite(f, node, mode="half_pixel")  # differs only when sizes do not divide
            elif _rejected_by_table(ctx, node, key):
                continue
            severity, extra = D.judged(f, ctx.target, Severity.ERROR)
            yield ctx.finding(
                node,
                f"{where} has {key}={value!r}, which {ctx.target.title} does not accept "
                f"(accepted: {', '.join(map(str, allowed))}).",
                rewrite=rw, severity=severity, **D.props(f, attribute=key, attr_value=value), **extra,
            )


def _rejected_by_table(ctx: RuleContext, node: Node, key: str) -> bool:
    """The target's support table already rejects this attribute value (GL1004 reports it, with
    the table's citation): one error per cause."""
    issues = ctx.analysis("support").issues.get(node, ())
    return any(i.rejects and i.constraint == f"attr:{key}" for i in issues)


def _version(opset: int) -> int:
    """The Resize schema version in force at a model opset."""
    return max(v for v in (10, 11, 13, 18, 19) if v <= opset) if opset >= 10 else opset


def _length_one_axes(node: Node) -> list[int]:
    """Spatial output axes (beyond N, C) whose static length is 1 while the input's is not."""
    out = node.outputs[0].shape if node.outputs else None
    inp = node.inputs[0].shape if node.inputs and node.inputs[0] is not None else None
    sizes = D.const(node.input(3))
    if out is None and sizes is not None:
        out = tuple(int(s) for s in sizes.reshape(-1))
    if out is None:
        return []
    return [i for i, d in enumerate(out) if i >= 2 and d == 1
            and not (inp is not None and i < len(inp) and inp[i] == 1)]

