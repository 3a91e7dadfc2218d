"""rules/data/engine_drift.toml, fact by fact: the engine really differs, and the rules say so only then.

For every engine-run fact: each evidence node test (onnx.backend.test.case.node) runs on the fact's
engine and differs from the test's reference outputs, and GL2010 / GL2011 report the fact on the
drifting node for that target; each focused variant (one attribute changed) and each close node
test runs on the engine and matches the spec (onnx.reference / the test's reference), and the
fact's rule stays silent. TensorRT facts cannot run here: they are checked against their source.
"""

from __future__ import annotations

import os

import onnx
import pytest
from graphlint_rules import _engine_drift as E

from testmodels import engines
from testmodels.node_cases import case_folder, load_io

RUN = [f for f in E.facts() if not f.get("documentary")]
DOCUMENTED = [f for f in E.facts() if f.get("documentary")]


def generator():
    """rules/data/gen/gen_engine_drift.py as a module (its variant builder is what the table's variants mean)."""
    import importlib.util

    from graphlint.target import data_dir

    spec = importlib.util.spec_from_file_location("gen_engine_drift", os.path.join(data_dir(), "gen", "gen_engine_drift.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _path(case: str) -> str:
    return os.path.join(case_folder(), case, "model.onnx")


def _findings(path: str, engine: str, fact_id: str | None = None) -> list:
    from graphlint.lint import LintOptions, lint_paths

    run = lint_paths([path], LintOptions(targets=[engine], select=["GL2010", "GL2011"]))
    assert not run.failures, run.failures
    return [f for f in run.findings() if fact_id is None or f.properties.get("engine_drift") == fact_id]


def _verdict(engine: str, model, inputs, refs) -> engines.Verdict:
    return engines.compare(refs, engines.run(engine, model, inputs))


@pytest.mark.parametrize("fact", RUN, ids=lambda f: f["id"])
def test_engine_differs_and_rule_fires(fact):
    assert fact["evidence"] and fact.get("reproduces") is not False
    for case in fact["evidence"]:
        path = _path(case)
        model = onnx.load(path)
        inputs, refs = load_io(path, model)
        v = _verdict(fact["engine"], path, inputs, refs)
        assert v.differs, f"{case}: {fact['engine']} now matches the spec (re-run the generator's update)"
        assert (v.status == "shape") == (fact["kind"] == "shape"), f"{case}: {v}"
        found = _findings(path, fact["engine"], fact["id"])
        nodes = {n.name or f"{n.op_type}->{n.output[0]}" for n in model.graph.node if n.op_type in fact["op"]}
        assert found and {f.node for f in found} <= nodes, f"{case}: no {fact['id']} finding on its {fact['op']} node"
        f = found[0]
        assert f.rule_id == ("GL2011" if fact["kind"] == "shape" else "GL2010")
        assert fact["engine"] in f.target
        assert E.SOURCE in f.message and fact["evidence"][0] in f.message  # cites the shipped table and test


@pytest.mark.parametrize("fact", [f for f in RUN if f["variants"] or f["close"]], ids=lambda f: f["id"])
def test_engine_matches_and_rule_is_silent_without_the_condition(fact, tmp_path):
    from onnx.reference import ReferenceEvaluator

    G = generator()
    for i, v in enumerate(fact["variants"]):
        model = onnx.load(_path(v["case"]))
        inputs, _ = load_io(_path(v["case"]), model)
        idx = next(k for k, n in enumerate(model.graph.node) if n.op_type in fact["op"])
        for name, value in v["set"].items():
            model = G.variant(model, idx, name, value)
        refs = ReferenceEvaluator(model).run(None, dict(zip([x.name for x in model.graph.input], inputs,
                                                            strict=False)))
        assert not _verdict(fact["engine"], model, inputs, refs).differs, f"variant {v}"
        path = str(tmp_path / f"variant{i}.onnx")
        onnx.save(model, path)
        assert not _findings(path, fact["engine"]), f"variant {v}: the rule fires without the condition"
    for case in fact["close"]:
        path = _path(case)
        model = onnx.load(path)
        inputs, refs = load_io(path, model)
        assert not _verdict(fact["engine"], path, inputs, refs).differs, case
        assert not _findings(path, fact["engine"]), f"{case}: the rule fires where the engine matches"


@pytest.mark.parametrize("fact", DOCUMENTED, ids=lambda f: f["id"])
def test_documentary_facts_cite_their_source_and_fire_on_trt_only(fact, tmp_path):
    from onnx import TensorProto, helper

    assert "https://" in fact["source"] and fact["engine"] == "trt"
    op = fact["op"][0]
    if op == "Cast":
        node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32, name="n")
        io = ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
              [helper.make_tensor_value_info("y", TensorProto.INT32, [4])])
    else:
        node = helper.make_node(op, [], ["y"], shape=[4], seed=3.0, name="n")
        io = ([], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(helper.make_graph([node], "g", *io), opset_imports=[helper.make_opsetid("", 17)])
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    found = _findings(path, "trt", fact["id"])
    assert found and all(f.severity.label == "warning" for f in found)
    assert "not runnable here" in found[0].message and fact["source"] in found[0].message
    assert not _findings(path, "ort") and not _findings(path, "openvino")


def test_trt_seed_fact_is_the_documented_restriction():
    from tests.conftest import SHARED

    doc = os.path.join(SHARED, "reference", "onnx-tensorrt-operators-trt10.15.md")
    if not os.path.exists(doc):
        pytest.skip("shared reference docs not beside the checkout")
    with open(doc, encoding="utf-8") as f:
        rows = [ln for ln in f if ln.startswith("| Random")]
    fact = next(f for f in DOCUMENTED if f["id"] == "trt-random-seed-ignored")
    assert {r.split("|")[1].strip() for r in rows} == set(fact["op"])
    assert all("`seed` value is ignored by TensorRT" in r for r in rows)


REQUIRED = ("id", "engine", "versions", "op", "opsets", "when", "kind", "does", "advice", "evidence", "close",
            "variants")


def _clauses(clauses):
    for c in clauses:
        if "any" in c:
            for group in c["any"]:
                yield from _clauses(group)
        else:
            yield c


@pytest.mark.parametrize("fact", E.facts(), ids=lambda f: f["id"])
def test_fact_is_complete_and_consistent(fact):
    from graphlint_rules._engine_predicates import PREDICATES

    from graphlint.rewrites import CATALOGUE
    from graphlint.target import resolve

    for key in REQUIRED:
        assert key in fact, f"{fact['id']} lacks {key}"
    assert fact["kind"] in ("values", "shape")
    assert [f["id"] for f in E.facts()].count(fact["id"]) == 1
    for v in fact["versions"]:
        assert resolve(f"{fact['engine']}@{v}").version == v  # a target a user can name
    for c in _clauses(fact["when"]):
        keys = set(c) - {"if_unknown"}
        assert keys & {"attr", "input", "output", "pred"}, c
        if "pred" in c:
            assert c["pred"] in PREDICATES
    if fact.get("rewrite"):
        assert fact["rewrite"] in CATALOGUE
    if fact.get("documentary"):
        assert fact["source"] and not fact["evidence"]
        return
    obs = generator().load_observations()["rows"]
    assert fact["measured"] and fact.get("reproduces") is True
    for case in fact["evidence"]:
        assert obs[case][fact["engine"]]["status"] == fact["kind"], f"{case} is not recorded as drifting"
    for case in fact["close"]:
        assert obs[case][fact["engine"]]["status"] == "match", f"{case} is not recorded as matching"
