"""rules/data/drift.toml is complete and consistent: every fact is read by a rule, cites a source,
names a catalogued rewrite and points at a test that exists and shows it with an engine."""

from __future__ import annotations

import ast
import os

import pytest
from graphlint_rules import _drift as D

from graphlint.registry import find_rule
from graphlint.rewrites import CATALOGUE
from tests.conftest import ROOT

FACTS = D.table()["fact"]
REQUIRED = ("id", "rule", "op", "opsets", "boundary", "effect", "change", "engines", "source", "evidence")


def _test_functions(path: str) -> set[str]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_fact_ids_are_unique():
    ids = [f["id"] for f in FACTS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f["id"])
def test_fact_is_complete(fact):
    for key in REQUIRED:
        assert fact.get(key) not in (None, "", [], {}), f"{fact['id']} lacks {key}"
    assert fact["effect"] in ("silent", "loud")
    lo, hi = fact["opsets"]
    assert 1 <= lo <= hi
    rule = find_rule(fact["rule"])
    assert rule is not None and rule.id.startswith("GL2")
    if rule.op_types is not None:  # node rules are dispatched the fact's ops; model rules read them all
        assert set(fact["op"]) <= set(rule.op_types), "the rule must be dispatched the fact's ops"
    if fact.get("rewrite"):
        assert fact["rewrite"] in CATALOGUE
    path, _, name = fact["evidence"].partition("::")
    assert name in _test_functions(path), f"{fact['evidence']} does not exist"
    # a claim no engine here can show says so, and where it comes from
    engines_run = set(fact["engines"]) - {"trt"}
    assert engines_run or "not runnable here" in fact["source"] or "onnx/onnx-tensorrt" in fact["source"]
    assert "shared/" not in fact["source"]
    # the severity follows the per-target verdicts (docs/severity.md); TensorRT's come from a citation
    verdicts = fact.get("verdict", {})
    assert set(verdicts.values()) <= {"rejects", "wrong-results", "tolerates"}
    if verdicts.get("trt"):
        assert "onnx-tensorrt" in fact["source"] or "TensorRT" in fact["source"]
    for engine in verdicts:
        assert engine in fact["engines"], f"{fact['id']}: verdict for {engine} without what it does"


def test_attribute_value_predicates_exist():
    from graphlint_rules.gl2009_attribute_semantics import PREDICATES

    for f in D.facts("GL2009"):
        assert f["when"] in PREDICATES


def test_trt_resize_table_matches_the_reference_doc():
    # the per-target Resize table is the TensorRT operators.md Resize row, verbatim
    shared = os.environ.get("GRAPHLINT_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
    doc = os.path.join(shared, "reference", "onnx-tensorrt-operators-trt10.15.md")
    if not os.path.exists(doc):
        pytest.skip("shared reference docs not present")
    with open(doc, encoding="utf-8") as fh:
        row = next(line for line in fh if line.startswith("| Resize "))
    for mode in D.table()["resize"]["trt"]["coordinate_transformation_mode"]:
        assert f"`{mode}`" in row
    assert "`cubic`" not in row and "Antialiasing is not supported" in row
