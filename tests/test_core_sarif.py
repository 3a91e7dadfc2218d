"""SARIF 2.1.0 output: valid against the OASIS schema and within GitHub code scanning's rules
(../shared/reference/sarif-schema-2.1.0.json and sarif-github.md)."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import run_cli
from tests.models import contrib_model, relu_model, save, two_bad_nodes
from tests.sarif_github import check_github_sarif


def check_github_rules(doc: dict, root: str | None = None) -> None:
    """tests/sarif_github.py's check, and what graphlint itself promises on top: one run,
    rules with documentation links, and (for models under the root, as in these tests)
    root-relative URIs."""
    check_github_sarif(doc, root)
    (run,) = doc["runs"]
    for r in run["tool"]["driver"]["rules"]:
        assert "docs/rules/" in r["help"]["markdown"]
        assert len(r["properties"]["tags"]) <= 10 and r["properties"]["precision"]
    for res in run["results"]:
        assert res["message"]["text"].endswith(".")
        (loc,) = res["locations"]
        assert loc["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"


def sarif(*args: str, cwd: str) -> tuple[int, dict, str]:
    r = run_cli(*args, "--format", "sarif", "--repo-root", cwd, cwd=cwd)
    doc = json.loads(r.out)
    check_github_rules(doc, cwd)
    return r.code, doc, r.out


def test_sarif_findings_valid_and_github_ready(tmp_path):
    folder = tmp_path / "models dir ü"
    folder.mkdir()
    p1 = save(two_bad_nodes(), folder, "bad model.onnx")
    p2 = save(contrib_model(), folder, "contrib.onnx")
    code, doc, _ = sarif(p1, p2, "--target", "trt", cwd=str(tmp_path))
    assert code == 1
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"GL0001", "GL1002"}  # fused contrib ops: GL1002 on targets with a support table
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"models%20dir%20%C3%BC/bad%20model.onnx", "models%20dir%20%C3%BC/contrib.onnx"}
    gelu = next(r for r in results if r["ruleId"] == "GL1002")
    assert gelu["message"]["text"].startswith("Node 'fast_gelu' (FastGelu)")
    assert gelu["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "main/fast_gelu"


def test_sarif_is_deterministic_and_fingerprints_stable(tmp_path):
    p = save(two_bad_nodes(), tmp_path, "bad.onnx")
    _, _, first = sarif(p, "--target", "trt", cwd=str(tmp_path))
    _, _, second = sarif(p, "--target", "trt", cwd=str(tmp_path))
    assert first == second
    # Moving the node within the file keeps the fingerprint (node identity, not index).
    m = two_bad_nodes()
    nodes = list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend([nodes[1], nodes[0], nodes[2]])
    p2 = save(m, tmp_path, "bad.onnx")
    _, doc2, _ = sarif(p2, "--target", "trt", cwd=str(tmp_path))
    fp1 = {(r["ruleId"], r["properties"].get("node")): r["partialFingerprints"]["primaryLocationLineHash"]
           for r in json.loads(first)["runs"][0]["results"]}
    fp2 = {(r["ruleId"], r["properties"].get("node")): r["partialFingerprints"]["primaryLocationLineHash"]
           for r in doc2["runs"][0]["results"]}
    shared = set(fp1) & set(fp2)
    assert ("GL0001", "relu_bad_attr") in shared
    assert all(fp1[k] == fp2[k] for k in shared)


def test_sarif_empty_results_still_present(tmp_path):
    p = save(relu_model(), tmp_path, "relu.onnx")
    code, doc, _ = sarif(p, "--target", "ort", cwd=str(tmp_path))
    assert code == 0 and doc["runs"][0]["results"] == []


def test_sarif_load_failure_is_a_notification_and_a_result(tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    good = save(relu_model(), tmp_path, "relu.onnx")
    code, doc, _ = sarif(str(bad), good, "--target", "ort", cwd=str(tmp_path))
    assert code == 2
    run = doc["runs"][0]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert any("broken.onnx" in n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes)
    assert [r["ruleId"] for r in run["results"]] == ["GL9000"]


@pytest.mark.parametrize("fmt", ["sarif", "json"])
def test_written_report_files_are_valid(tmp_path, fmt):
    p = save(contrib_model(), tmp_path, "c.onnx")
    out = os.path.join(tmp_path, f"r.{fmt}")
    r = run_cli(p, "--target", "trt", "--format", fmt, "-o", out, "--repo-root", str(tmp_path))
    assert r.code == 1
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    if fmt == "sarif":
        check_github_rules(doc, str(tmp_path))
