"""GL1003 domain-trap: a non-standard-domain op TensorRT imports with a standard op's semantics."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.analysis.support import TRAP, emit
from graphlint.rule import Finding, Rule, RuleContext, Severity


class DomainTrap(Rule):
    """A custom-domain node shares its op type with a standard op, and the engine ignores the domain.

    ## What it checks
    TensorRT's ONNX parser looks importers up by op type only. A `com.microsoft` node named like
    a standard op (`Attention`, `RotaryEmbedding`, `Gelu`, `Pad`, `Trilu`, ...) is therefore
    imported with the standard op's meaning. The finding says how the inputs differ, from
    `rules/data/support/contrib-fused.toml` (e.g. com.microsoft RotaryEmbedding takes
    `(input, position_ids, cos_cache, sin_cache)`, ONNX RotaryEmbedding-23 `(X, cos_cache,
    sin_cache, position_ids)`). Error where the signatures differ, warning where the contrib op
    mirrors the standard one (Gelu: same erf formula).

    ## Why it matters
    Best case the parse fails with a confusing shape error far from the cause; worst case the
    engine builds and computes something else (inputs read in the wrong order).

    ## Example
    `com.microsoft.Attention` (packed QKV weights, `mask_index`) under TensorRT >= 10.14, which
    imports ONNX Attention-23 (separate Q, K, V).

    ## Fix
    Un-fuse the node to standard ONNX (`graphlint fix`), or re-export with the standard op.
    """

    id = "GL1003"
    name = "domain-trap"
    severity = Severity.ERROR
    targets = frozenset({"trt"})
    requires = ("support",)
    fixable = True
    source = "rules/data/support/trt-*.json (dispatch by op type) and contrib-fused.toml [inferred rows marked]"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        yield from emit(ctx, TRAP)
