"""The value-range analysis on real exports: what it proves, and that it stays quiet otherwise."""

from __future__ import annotations

import functools
import math
import os

from graphlint.analysis import value_range as VR
from graphlint.load import load_model
from testmodels.export_precision import models

FP16_MAX = 65504.0


@functools.cache
def _ranges(name: str, inputs: tuple = ()) -> tuple:
    model = load_model(os.path.join(models(), f"{name}.onnx"))
    model.ready()
    return model, VR.compute(model.graph, dict(inputs))


def _by_op(name: str, op: str) -> list[VR.Range]:
    model, ranges = _ranges(name)
    return [ranges[n.outputs[0].name] for n in model.graph.nodes if n.op_type == op and n.outputs[0].name in ranges]


def test_massive_activation_reaches_past_fp16_in_every_rmsnorm_square():
    squares = _by_op("llama_massive", "Pow")
    assert len(squares) == 5 and all(r.reached > FP16_MAX for r in squares)
    # the first is exact: the embedding row holds 2000, squared
    assert squares[0].up == 2000.0 ** 2
    # without the massive channel nothing is reached past a few units
    assert all(r.reached < 10 for r in _by_op("llama", "Pow"))


def test_decomposed_norms_are_bounded_like_fused_ones():
    model, ranges = _ranges("seq_mask")
    divs = [n for n in model.graph.nodes if n.op_type == "Div" and VR.normalized_bound(n) is not None]
    assert len(divs) == 4  # two hand-written LayerNorms per layer, two layers
    assert all(ranges[n.outputs[0].name].magnitude <= math.sqrt(64) for n in divs)
    model, ranges = _ranges("llama")
    muls = [n for n in model.graph.nodes if n.op_type == "Mul" and VR.normalized_bound(n) is not None]
    assert len(muls) == 5  # RMSNorm as x * Reciprocal(Sqrt(mean(x^2) + eps))


def test_input_ranges_seed_the_analysis():
    model, plain = _ranges("vit")
    conv = next(n for n in model.graph.nodes if n.op_type == "Conv")
    assert conv.outputs[0].name not in plain  # pixel values unbounded: nothing to say
    _, bounded = _ranges("vit", (("pixel_values", (-3.0, 3.0)),))
    r = bounded[conv.outputs[0].name]
    assert 0 < r.magnitude < 1e3 and r.reached == 0  # a bound, not a reached value
    assert bounded["pixel_values"].up == 3.0
