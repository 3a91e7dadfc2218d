"""Shape handlers, one module per family of ops: (node, pass) -> the shapes of its outputs."""

from __future__ import annotations

from graphlint.analysis.shapes.handlers import linear, misc, reshaping  # noqa: F401  (they register)
from graphlint.analysis.shapes.handlers.elementwise import BROADCAST
from graphlint.analysis.shapes.handlers.registry import HANDLED_DOMAINS, HANDLERS, Handler, handles

# Ops whose handler records events (dims that must agree): always run, even when inference knows the output.
CHECKED = frozenset({*BROADCAST, "MatMul", "MatMulInteger", "FusedMatMul", "Gemm", "Concat", "Reshape", "Expand",
                     "RotaryEmbedding"})

__all__ = ["CHECKED", "HANDLED_DOMAINS", "HANDLERS", "Handler", "handles"]
