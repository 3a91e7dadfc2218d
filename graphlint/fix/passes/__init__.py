"""The built-in passes, one per rewrite name in graphlint.rewrites.CATALOGUE (importing registers them)."""

from graphlint.fix.passes import contracts, drift, engine_drift, fusion, graph, openvino, quant, unfuse

__all__ = ["contracts", "drift", "engine_drift", "fusion", "graph", "openvino", "quant", "unfuse"]
