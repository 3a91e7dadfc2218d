"""GL2006 gridsample-mode-names: GridSample mode spelled for the wrong opset, or for TensorRT's parser."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _drift as D

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

ID = "GL2006"
OLD_TO_NEW = {"bilinear": "linear", "bicubic": "cubic"}
NEW_TO_OLD = {v: k for k, v in OLD_TO_NEW.items()}


class GridsampleModeNames(Rule):
    """A GridSample's `mode` is spelled for another opset, or in a way TensorRT reads as nearest.

    ## What it checks
    GridSample-20 renamed the interpolation modes `bilinear` -> `linear` and `bicubic` ->
    `cubic` (and the default became `linear`). The rule reports

    - an opset-16..19 node spelled `linear`/`cubic`, or an opset >= 20 node spelled
      `bilinear`/`bicubic` (each opset accepts only its own names), and
    - on `--target trt`, an opset >= 20 node whose mode is `linear` or `cubic`.

    ## Why it matters
    The first case is loud: onnxruntime and OpenVINO refuse the node. The second is silent: the
    TensorRT ONNX parser only compares the mode with `bilinear` and `bicubic` and falls back to
    *nearest* interpolation for anything else, without a warning (NVIDIA/TensorRT issue #4646,
    "GridSample outputs incorrect results in ONNX opset 20 (opset 18 works correctly)", seen on
    TensorRT 10.13; the fix onnx/onnx-tensorrt PR #1060 is not merged). That claim cannot be
    run here (no TensorRT); it is the cited issue's.

    ## Example
    `torch.nn.functional.grid_sample(x, grid, mode="bilinear")` exported by the dynamo exporter
    with `opset_version=20` (writes `mode="linear"`), built with `trtexec`.

    ## Fix
    For TensorRT, export at opset 16-19 (`opset_version=18`), or apply the
    `gridsample-mode-names` rewrite, which writes the opset-16 names the parser matches (the
    result is no longer valid opset-20 ONNX for other engines: keep it TensorRT-only). For the
    spelling mismatch, the `explicit-attribute` rewrite sets the name the node's opset defines.
    """

    id = ID
    name = "gridsample-mode-names"
    severity = Severity.ERROR
    op_types = D.op_types(ID)
    fixable = True
    source = (f"{D.SOURCE} (gridsample-20-*); ONNX Changelog GridSample-20; NVIDIA/TensorRT#4646; "
              "onnx/onnx-tensorrt#1060")

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        spelling, trt = D.fact("gridsample-20-mode-names"), D.fact("gridsample-20-trt-nearest")
        if not D.applies(spelling, node):
            return
        new = node.opset >= 20
        mode = node.attr("mode")
        where = f"Node {quote(node.label)} (GridSample-{20 if new else 16})"
        wrong = NEW_TO_OLD if not new else OLD_TO_NEW
        if mode in wrong:
            right = wrong[mode]
            severity, extra = D.judged(spelling, ctx.target, self.severity)
            yield ctx.finding(
                node,
                f"{where} at opset {node.opset} has mode={mode!r}, a name this opset does not define "
                f"(it spells it {right!r}); onnxruntime and OpenVINO reject the node."
                + (D.unknown_note(ctx.target) if extra.get("unknown") else ""),
                rewrite=D.fact_rewrite(spelling, node, attribute="mode", value=right), severity=severity,
                **D.props(spelling, mode=mode), **extra,
            )
            return
        if new and mode in NEW_TO_OLD and ctx.target.name == "trt":
            severity, extra = D.judged(trt, ctx.target, self.severity)
            yield ctx.finding(
                node,
                f"{where} has mode={mode!r}; {ctx.target.title}'s ONNX parser recognizes only "
                f"{NEW_TO_OLD[mode]!r} and silently samples nearest instead (NVIDIA/TensorRT#4646).",
                rewrite=D.fact_rewrite(trt, node), severity=severity,
                **D.props(trt, mode=mode), **extra,
            )
