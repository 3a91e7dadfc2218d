"""The IR is read-only once loaded: its objects refuse attribute writes, and every analysis and
every rule, for every target, leaves it as the loader built it (analyses return facts, rules
return findings).

Each model is snapshotted field by field (every graph's nodes, values, types, constants, the
model's header and stats, the proto's bytes), then every registered analysis and every rule runs
on it for trt, ort and openvino, and the snapshot is taken again.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from graphlint import analysis
from graphlint.analysis import Analyses
from graphlint.engine import run_rules
from graphlint.ir import Graph, Model, Node, Value
from graphlint.lint import LintOptions, selected_rules
from graphlint.load import load_model
from graphlint.target import resolve
from testmodels import build_core, build_fused
from testmodels.common import cached

TARGETS = ("trt", "ort", "openvino")


def _models() -> list[str]:
    core = cached("core", build_core.build)
    fused = cached("fused-transformers", build_fused.build)
    return [os.path.join(core, "convnet_opset17.onnx"), os.path.join(core, "convnet_dynamo.onnx"),
            os.path.join(core, "convnet.xml"), os.path.join(fused, "bert_fused.onnx")]


def _graph(g: Graph, ids: dict[int, int]) -> tuple:
    def ref(obj: object) -> int | None:
        return None if obj is None else ids.setdefault(id(obj), len(ids))

    nodes = tuple((ref(n), n.op_type, n.name, n.domain, n.opset, n.dialect, n.index, repr(sorted(n.attrs.items())),
                   tuple(ref(v) for v in n.inputs), tuple(ref(v) for v in n.outputs), tuple(n.subgraphs),
                   n.source) for n in g.nodes)
    values = tuple((name, ref(v), v.name, v.dtype, v.shape, ref(v.producer), tuple(ref(c) for c in v.consumers),
                    None if v.const is None else (ref(v.const), v.const.dtype, v.const.shape, v.const.location),
                    v.is_input, v.is_output, dict(v.rt_info)) for name, v in g.values.items())
    return (g.name, g.path, ref(g.owner), nodes, values, tuple(ref(v) for v in g.inputs),
            tuple(ref(v) for v in g.outputs))


def snapshot(model: Model) -> tuple:
    ids: dict[int, int] = {}
    bodies = [model.graph, *model.functions.values()]
    graphs = tuple(_graph(g, ids) for body in bodies for g in body.graphs())
    proto = None if model.proto is None else hashlib.sha256(model.proto.SerializeToString()).hexdigest()
    return (graphs, model.path, model.format, model.dialect, model.ir_version, dict(model.opset_imports),
            model.producer, model.producer_version, dict(model.metadata), repr(model.rt_info),
            tuple(model.functions), repr(model.issues), proto, sorted(model.ov_opsets), dict(model.stats),
            dict(model.declared_io))


@pytest.mark.parametrize("index", range(4))
def test_analyses_and_rules_leave_the_ir_as_loaded(index):
    path = _models()[index]
    model = load_model(path)
    before = snapshot(model)  # (decodes every node's attributes, the one lazily filled cache)
    assert before == snapshot(model)
    analyses = Analyses(model)
    rules = selected_rules(LintOptions())
    names = analysis.names()
    assert {"shapes", "support", "partition", "components", "onnx_checker"} <= set(names)
    findings = 0
    for spec in TARGETS:
        target = resolve(spec)
        if model.dialect not in target.dialects:
            continue
        findings += len(run_rules(model, target, rules, {}, analyses).findings)
        for name in names:
            analyses.get(name, target)
    assert findings  # the rules really ran
    assert snapshot(model) == before


@pytest.mark.parametrize("index", [0, 2])
def test_a_loaded_model_refuses_writes(index):
    """Loaded graphs, nodes, values and constants refuse attribute writes (a rule that tries
    crashes into a GL9002 finding instead of changing what other rules see); lazily decoded
    attributes and weights are still read."""
    model = load_model(_models()[index])
    node = next(n for n in model.graph.nodes if n.inputs and n.outputs)
    v = node.outputs[0]
    with pytest.raises(AttributeError, match="read-only once loaded"):
        v.shape = None
    with pytest.raises(AttributeError, match="read-only once loaded"):
        node.op_type = "Identity"
    with pytest.raises(AttributeError, match="read-only once loaded"):
        del model.graph.nodes[0].name
    with pytest.raises(AttributeError, match="read-only once loaded"):
        model.graph.owner = node
    const = next(v for v in model.graph.values.values() if v.const is not None)
    with pytest.raises(AttributeError, match="read-only once loaded"):
        const.const.shape = ()
    assert const.const.numpy() is not None and isinstance(node.attrs, dict)
    assert isinstance(v, Value) and isinstance(node, Node) and type(v).__name__ == "Value"


def test_the_snapshot_sees_a_write():
    """The comparison above can fail: a write into a value's shape, or a consumer list, shows."""
    model = load_model(_models()[0])
    before = snapshot(model)
    v = model.graph.nodes[0].outputs[0]
    shape = v.shape
    object.__setattr__(v, "shape", (*shape[:-1], "changed"))  # past the read-only guard
    assert snapshot(model) != before
    object.__setattr__(v, "shape", shape)
    v.consumers.append(v.consumers[0])
    assert snapshot(model) != before
