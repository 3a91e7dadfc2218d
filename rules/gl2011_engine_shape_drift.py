"""GL2011 engine-shape-drift: the target engine gives this node another output shape than the ONNX spec."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _engine_drift as E
from graphlint_rules.gl2010_engine_value_drift import report

from graphlint.ir import Node
from graphlint.rule import Finding, Rule, RuleContext, Severity

ID = "GL2011"


class EngineShapeDrift(Rule):
    """The target engine runs this node but its output has another shape than the ONNX spec says.

    ## What it checks
    Every node against the `kind = "shape"` facts of `rules/data/engine_drift.toml` for the
    active target (engine, version, device), with the same condition language as GL2010. On
    OpenVINO 2026.4 CPU: `MaxPool` with `ceil_mode=1` whose last window starts in the end padding
    (OpenVINO keeps it: one more output row or column than the spec and torch), `Resize` with
    `keep_aspect_ratio_policy` `not_larger` / `not_smaller` (ignored: every axis goes to
    `sizes`), onesided `DFT` (the trailing axis is kept or dropped).

    ## Why it matters
    A wrong output shape is not a precision matter: the engine's result cannot be used as the
    model means it, and the next op either fails or reads the wrong elements. Severity is error
    when the engine run showed it and the model's shapes make the condition certain.

    ## Example
    `torch.nn.MaxPool2d(1, stride=2, ceil_mode=True)` on a 2x2 input: torch and onnxruntime give
    1x1, OpenVINO 2x2.

    ## Fix
    For MaxPool apply the attached `maxpool-explicit-pads` rewrite (`graphlint fix`): ceil_mode=0
    with the end padding that gives the spec's size, verified against the original. For Resize,
    compute the aspect-preserving `sizes` yourself and use `stretch`; for DFT compute the full
    transform and Slice.
    """

    id = ID
    name = "engine-shape-drift"
    severity = Severity.ERROR
    op_types = E.op_types("shape")
    fixable = True
    source = f"{E.SOURCE} (kind = shape); ONNX backend node tests"

    def check_node(self, node: Node, ctx: RuleContext) -> Iterator[Finding]:
        yield from report(node, ctx, "shape", Severity.ERROR)
