"""GL3009 shape-inference-incomplete: values whose shapes no inference pass could determine."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.shapes import ShapeFacts, shape_text
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote, quote_node


class ShapeInferenceIncomplete(Rule):
    """Some values' shapes stay unknown after every shape inference pass.

    ## What it checks
    After ONNX shape inference (with data propagation) and graphlint's symbolic pass (which
    also covers the com.microsoft contrib ops ONNX has no shape functions for), counts the
    values whose rank or some dim is still unknown and names the first node that produces one
    from known inputs. It reports the model only: what graphlint's own environment lacks is
    never a finding.

    ## Why it matters
    Engines must know ranks at build time and TensorRT profiles need every dim derivable from
    the inputs. Unknown shapes are also where the other shape rules (GL3001, GL3003, GL3007)
    cannot see, so a clean report is weaker there.

    ## Example
    A custom-domain op with no shape inference function, or a Reshape whose target comes from
    a NonZero count.

    ## Fix
    Add `value_info` for the op's outputs at export, use standard ops (or register a shape
    inference function for the custom op), or fold the shape computation (`fold-constants`).
    """

    id = "GL3009"
    name = "shape-inference-incomplete"
    severity = Severity.INFO
    requires = ("shapes",)
    source = "onnx.shape_inference (data_prop); graphlint.analysis.shapes"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        stats = ctx.stats
        if not facts.unknown:
            return
        unknown = set(facts.unknown)
        first = next((v for v in facts.unknown if v.producer is not None and not any(
            i in unknown for i in v.producer.inputs if i is not None)), facts.unknown[0])
        n = first.producer
        total = stats.get("shape_values", 0)
        if n is not None:
            head = (f"{quote_node(n)} produces {quote(first.name)} with shape "
                    f"{shape_text(facts.shape(first))} from inputs of known shape")
        else:
            head = f"Input {quote(first.name)} declares shape {shape_text(facts.shape(first))}"
        yield ctx.finding(
            n,
            f"{head}; {len(unknown)} of {total} values keep unknown dims after ONNX and graphlint "
            f"shape inference (ONNX alone: {stats.get('shape_unknown_onnx', '?')}).",
            value=first, unknown=len(unknown), values=total,
        )
