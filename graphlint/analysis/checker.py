"""onnx.checker's verdict on the model (analysis ``"onnx_checker"``, which GL0001 reports)."""

from __future__ import annotations

from graphlint.analysis import AnalysisContext, analysis
from graphlint.load import inference

_NOT_IN_BACKGROUND = object()


@analysis("onnx_checker", per_target=False)
def onnx_checker(ctx: AnalysisContext) -> str | None:
    """None when ``onnx.checker.check_model`` passes the model, else its message. For a big file
    the loader's child computes it (GL0001, which reads it, runs last so that the wait overlaps
    the other rules); otherwise it is computed here, on the model as the loader keeps it."""
    verdict = ctx.background("onnx_checker", _NOT_IN_BACKGROUND)
    if verdict is not _NOT_IN_BACKGROUND:
        return verdict
    proto = ctx.model.proto
    return None if proto is None else inference.check(proto)
