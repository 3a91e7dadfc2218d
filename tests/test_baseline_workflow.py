"""Baselines: record today's findings, report only new ones later, survive re-exports."""

from __future__ import annotations

import json
import os
import shutil

import onnx
import pytest

from graphlint.errors import UsageError
from graphlint.workflow import apply_baseline, load_baseline, render_baseline
from tests.conftest import run_cli
from tests.models import contrib_model, save
from tests.workflow_support import ReluAfter, copy_model, lint_with, workflow_models


@pytest.fixture(scope="session")
def wf_models() -> str:
    return workflow_models()


def _flagged(run):
    return [(f.node, f.suppressed) for f in run.findings(include_suppressed=True)]


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_baseline_survives_reexport_with_different_node_order(wf_models, tmp_path, exporter):
    a = os.path.join(wf_models, f"twobranch_a_{exporter}.onnx")
    b = os.path.join(wf_models, f"twobranch_b_{exporter}.onnx")
    # The two exports really differ: node order, and the name of the Relu that follows the Add.
    order_a = [n.op_type for n in onnx.load(a).graph.node]
    order_b = [n.op_type for n in onnx.load(b).graph.node]
    assert order_a != order_b and sorted(order_a) == sorted(order_b)
    run_a = lint_with([a], [ReluAfter])
    run_b = lint_with([b], [ReluAfter])
    (fa,), (fb,) = run_a.findings(), run_b.findings()
    assert fa.node != fb.node, "the exporter renamed the flagged node, so names alone cannot match"

    # Record on export A, at the path the model lives at; re-export B replaces it.
    model = tmp_path / "model.onnx"
    shutil.copyfile(a, model)
    baseline = tmp_path / "graphlint-baseline.json"
    baseline.write_text(render_baseline(lint_with([str(model)], [ReluAfter]), str(baseline)))
    shutil.copyfile(b, model)
    run = lint_with([str(model)], [ReluAfter])
    matched, stale = apply_baseline(run, str(baseline))
    assert (matched, stale) == (1, 0)
    assert run.findings() == []

    # A genuinely new finding on the node now carrying the old name is still reported.
    run = lint_with([str(model)], [ReluAfter], relu_after=("Add", "Mul"))
    matched, _ = apply_baseline(run, str(baseline))
    new = run.findings()
    assert matched == 1 and len(new) == 1
    assert new[0].node == fa.node, "the new finding sits on the node whose name the baseline recorded"
    assert "follows a Mul" in new[0].message


def test_baseline_cli_roundtrip(tmp_path):
    m1 = save(contrib_model(), str(tmp_path), "a.onnx")
    out = tmp_path / "graphlint-baseline.json"
    r = run_cli("baseline", "a.onnx", "--target", "trt", "-o", str(out), cwd=str(tmp_path))
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    assert doc["schema"] == "graphlint-baseline/1"
    rules = {e["rule"] for e in doc["findings"]}
    assert any(r.startswith("GL1") for r in rules), rules  # the contrib op is unsupported on TensorRT
    assert all(e["model"] == "a.onnx" for e in doc["findings"])
    assert "recorded" in r.err

    plain = run_cli("a.onnx", "--target", "trt", cwd=str(tmp_path))
    assert plain.code == 1
    r = run_cli("a.onnx", "--target", "trt", "--baseline", str(out), "--format", "json", cwd=str(tmp_path))
    assert r.code == 0, r.out
    rep = r.json()
    assert rep["summary"]["error"] == 0 and rep["summary"]["suppressed"] == len(doc["findings"])
    assert all(f["suppressed"].startswith("in baseline") for m in rep["models"] for f in m["findings"])
    assert any("matched the baseline" in n for n in rep["notes"])

    # a new model (not in the baseline) is reported and fails the run
    save(contrib_model(), str(tmp_path), "b.onnx")
    r = run_cli("a.onnx", "b.onnx", "--target", "trt", "--baseline", str(out), "--format", "json",
                cwd=str(tmp_path))
    assert r.code == 1
    new = [f for m in r.json()["models"] for f in m["findings"] if not f["suppressed"]]
    assert new and {f["location"]["file"] for f in new} == {"b.onnx"}

    # run from another folder: paths are relative to the baseline file, so it still matches
    sub = tmp_path / "sub"
    sub.mkdir()
    r = run_cli(os.path.join("..", "a.onnx"), "--target", "trt", "--baseline", str(out), cwd=str(sub))
    assert r.code == 0, r.out
    assert m1


def test_baseline_is_deterministic_and_skips_suppressed(wf_models, tmp_path):
    m = copy_model(wf_models, "twobranch_a_legacy.onnx", str(tmp_path), "m.onnx")
    run = lint_with([m], [ReluAfter], relu_after=("Add", "Mul"))
    path = str(tmp_path / "b.json")
    first = render_baseline(run, path)
    again = render_baseline(lint_with([m], [ReluAfter], relu_after=("Add", "Mul")), path)
    assert first == again and len(json.loads(first)["findings"]) == 2
    run.findings()[0].suppressed = "accepted"
    assert len(json.loads(render_baseline(run, path))["findings"]) == 1


def test_baseline_from_configuration_and_stale_entries(tmp_path):
    save(contrib_model(), str(tmp_path), "a.onnx")
    (tmp_path / "graphlint.toml").write_text('target = "trt"\nbaseline = "ci/graphlint-baseline.json"\n')
    (tmp_path / "ci").mkdir()
    r = run_cli("baseline", "a.onnx", cwd=str(tmp_path))  # -o defaults to the configured baseline
    assert r.code == 0, r.err
    assert (tmp_path / "ci" / "graphlint-baseline.json").is_file()
    r = run_cli("a.onnx", cwd=str(tmp_path))
    assert r.code == 0, r.out
    assert "suppressed" in r.out
    # the problem is fixed: the model no longer has the contrib op; the baseline entry is stale
    from tests.models import relu_model

    save(relu_model(), str(tmp_path), "a.onnx")
    r = run_cli("a.onnx", "--format", "json", cwd=str(tmp_path))
    assert r.code == 0
    assert any("no longer found" in n for n in r.json()["notes"])


@pytest.mark.parametrize("content", ["{not json", '{"schema": "other", "findings": []}', '{"schema": '
                                     '"graphlint-baseline/1", "findings": [{"rule": "GL0003"}]}'])
def test_bad_baseline_is_a_usage_error(tmp_path, content):
    (tmp_path / "b.json").write_text(content)
    with pytest.raises(UsageError, match=r"is not a graphlint baseline|malformed"):
        load_baseline(str(tmp_path / "b.json"))


def test_missing_baseline_and_unreadable_models(tmp_path):
    save(contrib_model(), str(tmp_path), "a.onnx")
    r = run_cli("a.onnx", "--baseline", "nope.json", cwd=str(tmp_path))
    assert r.code == 2 and "graphlint baseline" in r.err and r.err.count("\n") == 1
    (tmp_path / "broken.onnx").write_bytes(b"not a model")
    r = run_cli("baseline", "a.onnx", "broken.onnx", "-o", "b.json", cwd=str(tmp_path))
    assert r.code == 2 and not (tmp_path / "b.json").exists()
