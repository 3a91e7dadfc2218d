"""GL4002 image-input-range: the graph scales pixels by 255 itself, so it expects 0..255 input."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.inputs import preprocess_chain
from graphlint.analysis.shapes import ShapeFacts
from graphlint.dtypes import FLOAT_TYPES
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

NORMALIZATION_KEYS = ("image_mean", "image_std", "mean", "std", "normalize", "normalization", "rescale_factor")


def _normalization_metadata(meta: dict[str, str]) -> str | None:
    """The first metadata key that records preprocessing statistics (e.g. from an HF image processor)."""
    for key in sorted(meta):
        k = key.lower().rsplit(".", 1)[-1].rsplit("/", 1)[-1]
        if k in NORMALIZATION_KEYS:
            return key
    return None


class ImageInputRange(Rule):
    """The graph converts pixels from 0..255 itself; feeding normalized floats breaks it silently.

    ## What it checks
    Image-like inputs whose in-graph preprocessing divides by 255 (or multiplies by 1/255):
    a float input means the graph expects float pixels in 0..255, a uint8 input that is cast
    and scaled means the graph expects raw bytes. A float input cast to uint8 inside the graph
    is reported as a warning: values in [0,1] truncate to 0 and 1. So is a float input that
    reaches its first layer without any normalization while the model metadata records one
    (`image_mean`, `image_std`, `rescale_factor`...): the pipeline must apply it.

    ## Why it matters
    Pipelines usually normalize before the model (`ToTensor` gives [0,1]). When the export
    folded `/255` into the graph, [0,1] floats become [0, 0.004]: the model still runs and
    returns confident nonsense. The reverse (uint8 contract) is easy to meet once it is
    written down.

    ## Example
    `x = (image / 255.0 - mean) / std` in `forward`, exported with a float32 input.

    ## Fix
    Document the contract (dtype and range) next to the model, or move the scaling out of the
    graph so the input is the [0,1] or normalized tensor the pipeline produces.
    """

    id = "GL4002"
    name = "image-input-range"
    severity = Severity.INFO
    requires = ("image_inputs", "shapes")
    source = "graph dataflow (graphlint/analysis/inputs.py)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        for img in ctx.analysis("image_inputs"):
            v = img.value
            chain = preprocess_chain(v, facts.const)
            casts = chain.casts()
            if v.dtype in FLOAT_TYPES and "uint8" in casts:
                cast = next(s.node for s in chain.steps if s.node.op_type == "Cast")
                yield ctx.finding(
                    cast,
                    f"Node {quote(cast.label)} (Cast) converts float input {quote(v.name)} to uint8: the graph "
                    f"expects float pixels in 0..255, and [0,1] inputs truncate to 0 and 1.",
                    value=v, severity=Severity.WARNING, expected_dtype=v.dtype, expected_range=[0, 255],
                )
                continue
            scale = chain.scale_255()
            if scale is None:
                hint = _normalization_metadata(ctx.model.metadata)
                if hint and v.dtype in FLOAT_TYPES and not any(
                        op in ("Sub", "Div", "Mul", "Add") for op in chain.ops()):
                    yield ctx.finding(
                        None,
                        f"Input {quote(v.name)} ({v.dtype}) reaches node "
                        f"{quote(chain.first_layer.label if chain.first_layer else '?')} with no normalization in "
                        f"the graph, but the model metadata names one ({hint}): the pipeline must apply it before "
                        f"feeding the model.",
                        value=v, severity=Severity.WARNING, expected_dtype=v.dtype, metadata_key=hint,
                    )
                continue
            if v.dtype == "uint8":
                msg = (f"Input {quote(v.name)} is uint8 and node {quote(scale.node.label)} scales it by 1/255 after "
                       f"a Cast: feed raw 0..255 bytes ({img.layout or 'layout as declared'}), not normalized floats.")
            else:
                msg = (f"Input {quote(v.name)} ({v.dtype}) is divided by 255 inside the graph (node "
                       f"{quote(scale.node.label)}): it expects float pixels in 0..255; a pipeline that already "
                       f"scales to [0,1] gets silently wrong outputs.")
            yield ctx.finding(None, msg, value=v, expected_dtype=v.dtype, expected_range=[0, 255],
                              scale_node=scale.node.label)
