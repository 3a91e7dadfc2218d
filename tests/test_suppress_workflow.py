"""Suppressions: a suppression file with mandatory reasons, and graphlint:ignore in the model itself."""

from __future__ import annotations

import json
import os

import pytest

from graphlint.config import load_suppression_file
from graphlint.workflow import apply_suppressions
from tests.conftest import run_cli, validate_sarif
from tests.models import contrib_model, save
from tests.workflow_support import ReluAfter, lint_with, with_metadata, workflow_models


@pytest.fixture(scope="session")
def wf_models() -> str:
    return workflow_models()

SUPP = """
[[suppress]]
model = "models/*.onnx"
rule = "target-support"
node = "fast_*"
reason = "FastGelu runs as a TensorRT plugin (PLUGINS.md)"
"""


def _setup(tmp_path):
    (tmp_path / "models").mkdir()
    save(contrib_model(), str(tmp_path / "models"), "a.onnx")
    save(contrib_model(), str(tmp_path), "other.onnx")
    (tmp_path / "graphlint-suppressions.toml").write_text(SUPP)


def test_suppression_file_counts_and_omits_from_sarif(tmp_path):
    _setup(tmp_path)
    # the contrib FastGelu node is unsupported on TensorRT (target-support rules, GL1xx)
    r = run_cli("models/a.onnx", "other.onnx", "--target", "trt", "--select", "GL1", "--format", "json",
                cwd=str(tmp_path))
    rep = r.json()
    by_model = {m["path"]: m for m in rep["models"]}
    fa, fo = by_model["models/a.onnx"]["findings"], by_model["other.onnx"]["findings"]
    assert fa and len(fa) == len(fo) and all(f["node"] == "fast_gelu" for f in fa)
    assert {f["suppressed"] for f in fa} == {"FastGelu runs as a TensorRT plugin (PLUGINS.md)"}
    assert {f["suppressed"] for f in fo} == {None}  # outside the model glob
    assert rep["summary"]["suppressed"] == len(fa) and r.code == 1

    text = run_cli("models/a.onnx", "--target", "trt", "--select", "GL1", cwd=str(tmp_path))
    assert text.code == 0 and f"{len(fa)} suppressed" in text.out and "fast_gelu" not in text.out

    sarif = run_cli("models/a.onnx", "other.onnx", "--target", "trt", "--select", "GL1", "--format", "sarif",
                    "--repo-root", str(tmp_path), cwd=str(tmp_path))
    doc = json.loads(sarif.out)
    validate_sarif(doc)
    uris = [res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in doc["runs"][0]["results"]]
    assert set(uris) == {"other.onnx"} and len(uris) == len(fo)

    gh = run_cli("models/a.onnx", "--target", "trt", "--select", "GL1", "--format", "github", cwd=str(tmp_path))
    assert gh.out == "" and gh.code == 0


def test_suppression_needs_a_reason_and_a_real_rule(tmp_path):
    save(contrib_model(), str(tmp_path), "a.onnx")
    (tmp_path / "graphlint-suppressions.toml").write_text('[[suppress]]\nrule = "GL1"\nnode = "*"\n')
    r = run_cli("a.onnx", cwd=str(tmp_path))
    assert r.code == 2 and "'reason' is required" in r.err and r.err.count("\n") == 1
    (tmp_path / "graphlint-suppressions.toml").write_text('[[suppress]]\nrule = "GL1"\nreson = "x"\n')
    r = run_cli("a.onnx", cwd=str(tmp_path))
    assert r.code == 2 and "did you mean 'reason'" in r.err
    (tmp_path / "graphlint-suppressions.toml").write_text('[[suppress]]\nrule = "unknwn-domain"\nreason = "x"\n')
    r = run_cli("a.onnx", cwd=str(tmp_path))
    assert r.code == 2 and "unknown-domain" in r.err


def test_unused_suppression_is_noted(tmp_path):
    save(contrib_model(), str(tmp_path), "a.onnx")
    (tmp_path / "graphlint.toml").write_text(
        '[[suppress]]\nrule = "GL1"\nnode = "no_such_node"\nreason = "gone"\n')
    r = run_cli("a.onnx", "--target", "trt", "--select", "GL1", cwd=str(tmp_path))
    assert r.code == 1
    assert "matched no finding" in r.out and "graphlint.toml" in r.out


def test_in_model_metadata_suppression(tmp_path):
    src = save(contrib_model(), str(tmp_path), "src.onnx")
    plain = with_metadata(src, str(tmp_path / "plain.onnx"), other="x")
    owned = with_metadata(src, str(tmp_path / "owned.onnx"), **{"graphlint:ignore": "GL1:fast_*",
                                                              "graphlint:ignore-reason": "plugin in our engine"})
    wrong_node = with_metadata(src, str(tmp_path / "wrong.onnx"), **{"graphlint:ignore": "GL1:slow_*"})
    r = run_cli("plain.onnx", "owned.onnx", "wrong.onnx", "--target", "trt", "--select", "GL1",
                "--format", "json", cwd=str(tmp_path))
    got = {m["path"]: {f["suppressed"] for f in m["findings"]} for m in r.json()["models"]}
    assert got == {"plain.onnx": {None}, "owned.onnx": {"plugin in our engine"}, "wrong.onnx": {None}}
    assert os.path.exists(plain) and os.path.exists(owned) and os.path.exists(wrong_node)


def test_node_globs_and_json_metadata_in_process(wf_models, tmp_path):
    src = os.path.join(wf_models, "twobranch_a_legacy.onnx")
    m = with_metadata(src, str(tmp_path / "m.onnx"), **{
        "graphlint:ignore": json.dumps([{"rule": "test-relu-after", "node": "/Relu", "reason": "known"}])})
    run = lint_with([m], [ReluAfter], relu_after=("Add", "Mul"))
    apply_suppressions(run, [])
    status = {f.node: f.suppressed for f in run.findings(include_suppressed=True)}
    assert status == {"/Relu": "known", "/Relu_1": None}


def test_suppression_file_parsing(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SUPP + '\n[[suppress]]\nrule = "drift"\ntarget = "ort"\nreason = "ORT only"\n')
    a, b = load_suppression_file(str(p))
    assert (a.rule, a.model, a.node, a.target) == ("target-support", "models/*.onnx", "fast_*", "*")
    assert (b.rule, b.model, b.node, b.target) == ("drift", "*", "*", "ort")
    assert a.base == str(tmp_path)


def test_openvino_rt_info_suppression(tmp_path):
    """OpenVINO IR carries the suppression in rt_info (graphlint_ignore), written by OpenVINO itself."""
    import openvino as ov

    from testmodels import build_core
    from testmodels.common import cached

    src = os.path.join(cached("core", build_core.build), "convnet.xml")
    plain = run_cli(src, "--target", "openvino", "--format", "json")
    assert plain.json()["models"][0]["findings"], "the IR has findings to suppress"
    model = ov.Core().read_model(src)
    model.set_rt_info("*", "graphlint_ignore")
    model.set_rt_info("layouts are set by the application", "graphlint_ignore_reason")
    ov.save_model(model, str(tmp_path / "owned.xml"), compress_to_fp16=False)
    r = run_cli("owned.xml", "--target", "openvino", "--format", "json", cwd=str(tmp_path))
    findings = r.json()["models"][0]["findings"]
    assert r.code == 0 and len(findings) == len(plain.json()["models"][0]["findings"])
    assert {f["suppressed"] for f in findings} == {"layouts are set by the application"}
