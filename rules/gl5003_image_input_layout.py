"""GL5003 image-input-layout: ONNX image inputs fed NHWC into a Transpose, or of ambiguous layout."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.inputs import ImageInput, preprocess_chain
from graphlint.analysis.shapes import ShapeFacts
from graphlint.rule import Finding, Rule, RuleContext, Severity, quote

TO_NCHW = [0, 3, 1, 2]
LAYOUT_FIXING = frozenset({"Conv", "ConvInteger", "QLinearConv", "DeformConv", "ConvTranspose", "MaxPool", "AveragePool", "BatchNormalization",
                           "InstanceNormalization", "GlobalAveragePool", "Resize"})


class ImageInputLayout(Rule):
    """An image input is NHWC and transposed to NCHW in the graph, or its layout cannot be told.

    ## What it checks
    Rank-4 image-like inputs of ONNX models: channels on the last axis whose preprocessing
    contains a Transpose with perm `[0, 3, 1, 2]` (the NHWC-to-NCHW pattern of TF exports and
    of `permute` in PyTorch wrappers), and inputs where neither axis 1 nor axis 3 can be
    identified as channels and no Conv-like op pins the layout.

    ## Why it matters
    The model's contract is NHWC while most ONNX tooling, TensorRT profiles and OpenVINO
    PrePostProcessor snippets assume NCHW; a pipeline "fixing" the layout on the host then
    transposes twice. The in-graph Transpose is also a full memory pass per request on
    engines that do not fuse it. Ambiguous inputs (`[N, ?, ?, ?]`) leave the reader guessing.

    ## Example
    `image.permute(0, 3, 1, 2)` at the top of `forward`, exported with a `[batch, 224, 224, 3]` input.

    ## Fix
    Document the NHWC contract (or export an NCHW input and transpose on the host); name the
    dims (`height`, `width`, static channels) so the layout is readable.
    """

    id = "GL5003"
    name = "image-input-layout"
    severity = Severity.INFO
    requires = ("image_inputs", "shapes")
    source = "graph dataflow (graphlint/analysis/inputs.py)"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        facts: ShapeFacts = ctx.analysis("shapes")
        img: ImageInput
        for img in ctx.analysis("image_inputs"):
            v = img.value
            chain = preprocess_chain(v, facts.const)
            trans = [s.node for s in chain.steps if s.node.op_type == "Transpose"]
            if img.channel_axis == 3 and trans and list(trans[0].attr("perm") or []) == TO_NCHW:
                t = trans[0]
                yield ctx.finding(
                    t,
                    f"Node {quote(t.label)} (Transpose) turns NHWC input {quote(v.name)} into NCHW: the model's "
                    f"input contract is NHWC; feed NHWC (do not transpose on the host) or export an NCHW input.",
                    value=v, layout="NHWC",
                )
            elif img.channel_axis is None and not (chain.first_layer and chain.first_layer.op_type in LAYOUT_FIXING
                                                   and not trans):
                yield ctx.finding(
                    None,
                    f"Input {quote(v.name)} {list(v.shape or ())} is image-like but its layout is ambiguous (no "
                    f"static channel count on axis 1 or 3); name the dims or make the channel count static.",
                    value=v,
                )
