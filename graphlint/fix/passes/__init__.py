"""The built-in passes, one per rewrite name in graphlint.rewrites.CATALOGUE (importing registers them)."""

from __future__ import annotations

from graphlint.fix.base import ONNX_FORMAT, PASSES, Pass
from graphlint.fix.passes import (
    contracts,
    drift,
    engine_drift,
    fusion,
    graph,
    openvino,
    precision,
    quant,
    quant_dynamic,
    unfuse,
)

__all__ = ["contracts", "drift", "engine_drift", "fusion", "graph", "load_passes", "openvino", "precision", "quant",
           "quant_dynamic", "unfuse"]


def load_passes(fmt: str = ONNX_FORMAT) -> dict[str, type[Pass]]:
    """The registered passes (built-in and any registered since) for one model format, by rewrite name."""
    return {name: cls for (name, f), cls in PASSES.items() if f == fmt}
