"""Symbolic shape analysis and constant-value analysis over the IR (analysis ``"shapes"``).

The ONNX loader already ran ``onnx.shape_inference`` with data propagation. This pass
(:mod:`.walk`) walks the main graph once more, in order, and:

* computes every value's shape as polynomials over dim symbols (:mod:`graphlint.analysis.symbolic`),
  so a Reshape fed by ``Shape -> Gather -> Concat`` gets ``[batch, seq + 16, 32]`` instead of
  unknowns, and contrib ops (SkipLayerNormalization, Attention, QuickGelu...) that ONNX
  inference skips get shapes too (per-op handlers: :mod:`.handlers`);
* folds small constant subgraphs with numpy (:mod:`.fold`) and tracks 1-D int "shape values"
  symbolically (:mod:`.svals`: the data propagation TensorRT calls shape tensors), and which
  values are build-time constants;
* records *events* where an op needs two dims to agree: two different symbols (``mismatch``),
  a symbol forced to a number (``pinned``), two different numbers (``conflict``), or a
  Reshape whose element count cannot match (``reshape``). The GL3xx rules read these.

Values still unknown after the pass stay unknown (GL3009 counts them): no third inference runs.
onnxruntime's symbolic shape inference once did, loaded from a file in the onnxruntime package's
tools folder; it needs sympy, which graphlint does not depend on, so on a plain install it crashed and
graphlint's environment became a finding about the model. The same pass with every symbol bound
to a number (:func:`evaluate`) checks a concrete input shape, which is how ``--shapes`` profiles
are checked.

The analysis returns facts and leaves the IR as it is: ``facts.refined(v)`` is a value's IR
shape with the gaps the analysis filled. It records counts in the model's stats:
``shape_values``, ``shape_unknown_onnx`` (after ONNX inference), ``shape_unknown_final`` (after this pass).
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter

from graphlint.analysis import AnalysisContext, analysis
from graphlint.analysis.shapes.facts import (
    MAX_CONST,
    SHAPE_DTYPES,
    Event,
    SDim,
    ShapeFacts,
    SShape,
    describe_dim,
    dim_text,
    dynamic_inputs,
    fill,
    input_symbols,
    is_placeholder,
    shape_text,
    unnamed_symbol,
)
from graphlint.analysis.shapes.openvino import ov_symbol
from graphlint.analysis.shapes.walk import ShapeWalk
from graphlint.analysis.symbolic import to_poly
from graphlint.ir import ONNX, Model, Value

__all__ = [
    "MAX_CONST", "SHAPE_DTYPES", "Event", "SDim", "SShape", "ShapeFacts", "describe_dim", "dim_text",
    "dynamic_inputs", "evaluate", "input_symbols", "is_placeholder", "run", "shape_text", "unnamed_symbol",
]

_DTYPE = attrgetter("dtype")


@analysis("shapes", per_target=False)
def shapes_analysis(ctx: AnalysisContext) -> ShapeFacts:
    model = ctx.model
    values = _tensor_values(model)
    ctx.record("shape_values", len(values))
    if model.dialect != ONNX:  # OpenVINO IR: the same walk over the layers' ONNX twins (.openvino)
        unknown = _unknown_ir(values)
        ctx.record("shape_unknown_onnx", len(unknown))
        ctx.record("shape_unknown_final", len(unknown))
        facts = run(model)
        facts.unknown = unknown
        return facts
    before = _unknown_ir(values)
    ctx.record("shape_unknown_onnx", len(before))
    facts = run(model)
    unknown = _unknown_facts(values, facts)
    ctx.record("shape_unknown_final", len(unknown))
    facts.unknown = unknown
    fill(facts, before)  # only values ONNX inference left (partly) unknown can gain dims
    return facts


def run(model: Model, env: Mapping[str, int] | None = None, facts: ShapeFacts | None = None) -> ShapeFacts:
    """The symbolic pass (``env`` None) or a concrete evaluation with symbols bound to ints;
    ``facts``: the symbolic pass's, whose refined shapes the evaluation then starts from."""
    return ShapeWalk(model, env, None if facts is None else facts.refined).run()


def evaluate(model: Model, input_shapes: Mapping[str, tuple[int, ...]], facts: ShapeFacts | None = None) -> ShapeFacts:
    """Run the pass with graph inputs at concrete shapes; breaks show up as conflict/reshape events."""
    env: dict[str, int] = {}
    for v in model.graph.inputs:
        shp = input_shapes.get(v.name)
        if shp is None or v.shape is None or len(shp) != len(v.shape):
            continue
        for axis, (d, n) in enumerate(zip(v.shape, shp, strict=True)):
            if d is None:  # IR -1 dims are named by position (ov_symbol), ONNX unnamed dims with a '?'
                env[ov_symbol(v.name, axis) if model.dialect != ONNX else unnamed_symbol(v.name, axis)] = n
            elif isinstance(d, str):
                p = to_poly(d)
                if p is not None and len(p.terms) == 1 and p.terms[0][1] == 1 and len(p.terms[0][0]) == 1:
                    env.setdefault(p.terms[0][0][0], n)
    return run(model, env, facts)


def _unknown_ir(values: list[Value]) -> list[Value]:
    """Values whose IR shape is missing or has an unknown dim (None or an ``unk__N`` placeholder)."""
    verdicts: dict[tuple, bool] = {}  # the loader shares one tuple per distinct type: decide each once
    out = []
    for v in values:
        s = v.shape
        if s is None:
            out.append(v)
            continue
        unknown = verdicts.get(s)
        if unknown is None:
            unknown = verdicts[s] = any(d is None or is_placeholder(d) for d in s)
        if unknown:
            out.append(v)
    return out


def _unknown_facts(values: list[Value], facts: ShapeFacts) -> list[Value]:
    """Values whose computed shape is missing or has an unknown dim (values here are not constants)."""
    shapes = facts.shapes
    return [v for v in values if (s := shapes.get(v)) is None or None in s]


def _tensor_values(model: Model) -> list[Value]:
    """Non-constant named values of the main graph that carry tensors (what the counts count)."""
    values = [v for v in model.graph.values.values()
              if v.const is None and v.name and (v.producer is not None or v.is_input)]
    # sequence/optional/map values have no shape; a graph has few dtypes, so test each once
    no_shape = {d for d in set(map(_DTYPE, values)) if d and d.endswith("_type")}
    return [v for v in values if v.dtype not in no_shape] if no_shape else values
