"""GL1002 fused-contrib-op: ONNX Runtime fused (com.microsoft) ops on an engine that lacks them."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.support import FUSED, emit
from graphlint.rule import Finding, Rule, RuleContext, Severity


class FusedContribOp(Rule):
    """An ONNX Runtime fused op (Attention, SkipLayerNormalization, FastGelu, ...) the target cannot run.

    ## What it checks
    Nodes of the ops `onnxruntime.transformers.optimizer` emits (listed with their source rows in
    `rules/data/support/contrib-fused.toml`: Attention, MultiHeadAttention, GroupQueryAttention,
    SkipLayerNormalization, SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization (default
    domain), EmbedLayerNormalization, FastGelu, BiasGelu, QuickGelu, RotaryEmbedding, BiasAdd,
    BiasSplitGelu, GroupNorm, SkipGroupNorm, GemmFastGelu, NhwcConv, ...) that the target's own
    table does not take: TensorRT has no importer for them, OpenVINO's frontend converts some,
    ONNX Runtime's CPU provider lacks a few (BiasSplitGelu, GroupNorm: CUDA only).
    Each finding carries a rewrite: `unfuse-contrib` (the standard ONNX subgraph) or, where one
    exists, `trt-plugin` with the TensorRT plugin's name.

    ## Why it matters
    Fusion is ORT-specific: a model optimized for ONNX Runtime and then handed to TensorRT fails
    to parse (the parser looks for a plugin named like the op), and OpenVINO fails on the ops
    its frontend has no translator for.

    ## Example
    A BERT model fused with `optimizer.optimize_model(..., model_type="bert")` and built with
    `trtexec`: `SkipLayerNormalization`, `Attention`, `BiasGelu`, `EmbedLayerNormalization` fail.

    ## Fix
    Lint and ship the unfused export for engines other than ORT, or run `graphlint fix` to
    un-fuse the listed nodes; for TensorRT, the BERT plugins (CustomSkipLayerNormPluginDynamic,
    CustomEmbLayerNormPluginDynamic) are an alternative with different signatures.
    """

    id = "GL1002"
    name = "fused-contrib-op"
    severity = Severity.ERROR
    requires = ("support",)
    fixable = True
    source = "rules/data/support/contrib-fused.toml + the target's support table"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        yield from emit(ctx, FUSED)
