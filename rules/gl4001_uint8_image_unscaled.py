"""GL4001 uint8-image-unscaled: a uint8 image is normalized with [0,1] statistics but never divided by 255."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.inputs import ImageInput, preprocess_chain
from graphlint.analysis.shapes import ShapeFacts
from graphlint.rule import Finding, Rewrite, Rule, RuleContext, Severity, quote


class Uint8ImageUnscaled(Rule):
    """A uint8 image input reaches arithmetic that expects [0,1] floats without a /255.

    ## What it checks
    Image-like uint8 inputs (rank 4, 1 or 3 channels on axis 1 or 3) whose preprocessing
    inside the graph casts to float and subtracts a mean in [0,1] (CLIP/ImageNet statistics
    are on [0,1] pixels) without first dividing by 255 (or multiplying by 1/255).

    ## Why it matters
    The Cast turns 0..255 bytes into 0.0..255.0 floats; statistics computed for [0,1] pixels
    then leave values around 100-900 instead of about -2..2. Nothing fails: every output is
    silently wrong, which is how "the ONNX model gives different results than PyTorch" bugs
    start when the Python pipeline did the `/255` (`ToTensor`) outside the module. A warning:
    every engine runs the graph as written, and that the statistics were meant for [0,1]
    pixels is read from their values, not known.

    ## Example
    `x = image.permute(0, 3, 1, 2).float(); x = (x - mean) / std` exported with a uint8 input.

    ## Fix
    Insert the scaling in the graph (`x = x.float() / 255`), or make the input float32 in [0,1]
    and convert in the pipeline (input-cast-normalize).
    """

    id = "GL4001"
    name = "uint8-image-unscaled"
    severity = Severity.WARNING  # every engine runs it: the premise (the stats are for [0,1] pixels) is read from the graph
    requires = ("image_inputs", "shapes")
    fixable = True
    source = "graph dataflow (graphlint/analysis/inputs.py); torchvision ToTensor / CLIPImageProcessor conventions"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        img: ImageInput
        for img in ctx.analysis("image_inputs"):
            v = img.value
            if v.dtype != "uint8":
                continue
            chain = preprocess_chain(v, facts.const)
            if not any(c.startswith("float") for c in chain.casts()) or chain.scale_255() is not None:
                continue
            norm = chain.unit_normalization()
            if norm is None:
                continue
            mean = [round(float(x), 3) for x in norm.scalar.reshape(-1)[:4]]  # type: ignore[union-attr]
            rw = Rewrite("input-cast-normalize", {"input": v.name, "side": "graph"}, safe=False,
                         description=f"Insert Div by 255 after the Cast of '{v.name}' (uint8 stays the input type).")
            yield ctx.finding(
                norm.node,
                f"Node {quote(norm.node.label)} (Sub) subtracts a [0,1]-scale mean {mean} from uint8 input "
                f"{quote(v.name)} cast to float without dividing by 255: the graph expects [0,1] floats here but "
                f"gets 0..255.",
                value=v, rewrite=rw, expected_range=[0, 1], actual_range=[0, 255],
            )
