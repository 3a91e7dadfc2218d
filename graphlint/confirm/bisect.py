"""Where two engines start to disagree: the first node whose output differs, and who is right there.

Intermediate values are marked as extra outputs (as ``graphlint fix`` observes values to prove a
rewrite), in rounds: up to ``SPREAD`` values spread over the graph, then every value between the
last that agreed and the first that did not. Each round runs both engines on the diverging point's
own feeds, in children as every confirm run is. The node found is then run alone in ONNX's reference
implementation on each engine's own inputs to it: an engine whose output disagrees with the
reference on the inputs it computed itself is the one that is wrong.

Marking a value as an output can keep an engine from fusing the nodes around it; when the marked
graph agrees everywhere, the difference lives in a fusion, and the finding says so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphlint.confirm import execute
from graphlint.confirm.plan import Plan
from graphlint.ir import Model, Node, Value
from graphlint.runners.compare import compare

SPREAD = 48
WINDOW = 512
FLOATS = frozenset({"float32", "float16", "float64", "bfloat16"})


@dataclass
class Located:
    node: str | None  # the first node whose output differs (its name, or label)
    op_type: str | None
    detail: str
    wrong: list[str] | None = None  # runners whose output disagrees with the reference there


def _candidates(model: Model) -> list[Value]:
    """Values a difference can first appear in, in graph order (the graph's outputs among them)."""
    return [o for n in model.graph.nodes if n.op_type != "Constant" for o in n.outputs
            if o is not None and o.name and o.dtype in FLOATS]


def locate(path: str, model: Model, d: Any, plan: Plan, feeds_dir: str, copts: Any) -> Located:
    if model.format != "onnx":
        return Located(None, None, f"at output '{d.output}' (bisection marks values of ONNX files only)")
    cands = _candidates(model)
    if not cands:
        return Located(None, None, f"at output '{d.output}'")
    i = plan.points.index(d.point)
    with tempfile.TemporaryDirectory(prefix="graphlint-bisect-") as work:
        shutil.copy(os.path.join(feeds_dir, f"point{i}.npz"), os.path.join(work, "point0.npz"))
        one = Plan(plan.inputs, [d.point])
        lo, hi = 0, len(cands)  # the first differing candidate is in [lo, hi)
        first = None
        while hi - lo > 0:
            step = max(1, (hi - lo) // SPREAD) if hi - lo > WINDOW else 1
            idx = list(range(lo, hi, step))
            if idx[-1] != hi - 1:
                idx.append(hi - 1)
            got = _observe(path, d, [cands[j] for j in idx], one, work, copts)
            if isinstance(got, str):
                return Located(None, None, f"at output '{d.output}' (bisection stopped: {got})")
            differs = [j for j, (a, b) in zip(idx, got, strict=True)
                       if a is not None and b is not None and not _same(a, b, d)]
            if not differs:
                break
            k = idx.index(differs[0])
            if step == 1:
                first = differs[0]
                break
            lo, hi = (idx[k - 1] + 1 if k else lo), differs[0] + 1
        if first is None:
            return Located(None, None, f"at output '{d.output}'; every intermediate value marked agrees, so the "
                                       "difference lives in a kernel the engine fuses")
        node = cands[first].producer
        assert node is not None
        wrong = _reference(path, model, node, d, one, work, copts)
    detail = f"its output '{cands[first].name}' is the first value that differs"
    return Located(node.name or node.label, node.op_type, detail, wrong)


def _same(a: np.ndarray, b: np.ndarray, d: Any) -> bool:
    return compare({"v": a}, {"v": b}, computed_in=_precision(d), scaled=True).ok


def _precision(d: Any) -> str | None:
    from graphlint.confirm.outputs import _lowest

    return _lowest(d.a.precision, d.b.precision)


def _observe(path: str, d: Any, values: list[Value], one: Plan, work: str, copts: Any) -> list[tuple] | str:
    """Each value as engine a and engine b computed it (None where one did not return it)."""
    names = [v.name for v in values]
    per = []
    for er in (d.a, d.b):
        got = execute.run_engine(path, er.engine, er.targets, one, work, copts.budget,
                                 copts.engines.get(er.engine.runner, {}), outputs=names)
        if got.skipped or got.load_error or not got.runs or not got.runs[0].ok or got.runs[0].values is None:
            return got.skipped or got.load_error or (got.runs[0].error if got.runs else got.crashed) or "no values"
        per.append(got.runs[0].values)
    return [(per[0].get(n), per[1].get(n)) for n in names]


def _reference(path: str, model: Model, node: Node, d: Any, one: Plan, work: str, copts: Any) -> list[str] | None:
    """Runners whose output of ``node`` disagrees with onnx.reference on their own inputs (None: not
    settled: a non-ONNX-domain node, an input the engines did not return, or the reference fails)."""
    if node.domain not in ("", "ai.onnx") or model.proto is None or node.graph is not model.graph:
        return None
    fed = [v for v in node.inputs if v is not None and v.const is None and v.name]
    computed = [v for v in fed if not v.is_input]
    got = _observe(path, d, [*computed, *[o for o in node.outputs if o is not None]], one, work, copts)
    if isinstance(got, str):
        return None
    with np.load(os.path.join(work, "point0.npz"), allow_pickle=False) as z:
        graph_inputs = {k: z[k] for k in z.files}
    wrong = []
    for side, er in ((0, d.a), (1, d.b)):
        vals = [g[side] for g in got]
        if any(v is None for v in vals):
            return None
        own = dict(zip((v.name for v in computed), vals[:len(computed)], strict=True))
        ins = [graph_inputs[v.name] if v.is_input else own[v.name] for v in fed]
        outs = vals[len(computed):]
        try:
            ref = _run_reference(model, node, dict(zip((v.name for v in fed), ins, strict=True)))
        except Exception:
            return None
        if not all(compare({"v": r}, {"v": o}, computed_in=_precision(d), scaled=True).ok
                   for r, o in zip(ref, outs, strict=False)):
            wrong.append(er.engine.runner)
    return wrong if len(wrong) == 1 else None


def _run_reference(model: Model, node: Node, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnx
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    proto = model.proto.graph.node[node.index]
    inits = [numpy_helper.from_array(v.const.numpy(), v.name) for v in node.inputs
             if v is not None and v.const is not None and v.name]
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for k, a in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(o.name) for o in node.outputs if o is not None]
    graph = helper.make_graph([proto], "node", inputs, outputs, inits)
    opsets = [helper.make_opsetid("" if dom == "ai.onnx" else dom, ver) for dom, ver in model.opset_imports.items()]
    m = helper.make_model(graph, opset_imports=opsets, ir_version=model.ir_version or onnx.IR_VERSION)
    return [np.asarray(x) for x in ReferenceEvaluator(m).run(None, feeds)]
