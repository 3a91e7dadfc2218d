"""GL4006 output-declaration-mismatch: a graph output declares a shape the graph does not compute."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.shapes import ShapeFacts, shape_text
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote


class OutputDeclarationMismatch(Rule):
    """A graph output's declared shape disagrees with the shape the graph computes.

    ## What it checks
    For each graph output, the declared rank and static dims against the symbolic shape
    analysis of its producer: a different rank, a different number, or a number where the
    graph computes a dynamic dim (an output declared `[1, 10]` whose producer gives
    `[batch, 10]`). A negative declared dim (paddle2onnx's `-1`) declares no size: GL4007 and
    GL0007 report it.

    ## Why it matters
    Runtimes allocate output buffers from the declaration: ONNX Runtime raises a shape
    mismatch for the output at run time, OpenVINO and TensorRT report the declared shape to the
    application, which then reads the wrong number of elements. Usually an exporter was given
    a dynamic input but a static output spec.

    ## Example
    `dynamic_axes={"image": {0: "batch"}}` without an entry for `logits`.

    ## Fix
    Declare the output's dynamic axes too (`dynamic_axes["logits"] = {0: "batch"}`) or strip
    the output shape and re-run shape inference.
    """

    id = "GL4006"
    name = "output-declaration-mismatch"
    severity = Severity.WARNING
    requires = ("shapes",)
    source = "ONNX graph output ValueInfo vs symbolic shape analysis"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        for v, declared, computed in facts.output_conflicts:
            yield ctx.finding(
                v.producer,
                f"Output {quote(v.name)} is declared {shape_text(declared)} but node "
                f"{quote(v.producer.label if v.producer else '?')} computes {shape_text(computed)}.",
                value=v, declared=shape_text(declared), computed=shape_text(computed),
            )
