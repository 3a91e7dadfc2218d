"""SARIF for models outside the repository, results that could share a fingerprint, and XML
problems with a line: what GitHub code scanning needs to accept and place every result.

Every SARIF here passes tests/sarif_github.py (through tests/hostile_support.lint_sarif); the
tests add what each case must show.
"""

from __future__ import annotations

import json
import pathlib
import re

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from tests.hostile_support import add_ir, body_of, line_of, lint_cli, lint_sarif
from tests.hostile_support import write_ir as write
from tests.models import contrib_model, save


@pytest.fixture(scope="module")
def ir() -> tuple[str, bytes]:
    return add_ir()


def location(result: dict) -> dict:
    return result["locations"][0]["physicalLocation"]


# --- 1. models outside the SARIF root ---------------------------------------------------------

def test_models_outside_the_root_get_absolute_file_uris(tmp_path, ir):
    xml, data = ir
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    away = tmp_path / "downloads ü"
    away.mkdir()
    inside = save(contrib_model(), str(root / "models"), "in.onnx")
    outside = save(contrib_model(), str(away), "out model.onnx")
    ir_out = write(away, "short", xml, data[:8])  # a GL0005 error located on the .xml
    broken = away / "broken.onnx"
    broken.write_bytes(b"\x08\x07garbage")
    r = lint_sarif([inside, outside, ir_out, str(broken)], str(tmp_path), "--repo-root", str(root))
    run = r.sarif["runs"][0]
    by_uri = {location(x)["artifactLocation"]["uri"]: location(x)["artifactLocation"] for x in run["results"]}
    assert by_uri["models/in.onnx"] == {"uri": "models/in.onnx", "uriBaseId": "%SRCROOT%"}
    for path in (outside, ir_out, str(broken)):
        uri = pathlib.Path(path).as_uri()
        assert uri.startswith("file:///") and "%C3%BC" in uri
        assert by_uri[uri] == {"uri": uri}  # absolute: no uriBaseId
    (note,) = [n for n in run["invocations"][0]["toolExecutionNotifications"] if n["level"] == "error"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": pathlib.Path(broken).as_uri()}


def test_default_root_and_a_folder_named_like_a_parent(tmp_path):
    """Without --repo-root the root is the git checkout (the tests run in it), so tmp_path is
    outside; a folder called '..models' under the root is inside it, not a parent reference."""
    r = lint_sarif([save(contrib_model(), str(tmp_path), "m.onnx")], str(tmp_path), "--target", "trt")
    assert {location(x)["artifactLocation"]["uri"] for x in r.sarif["runs"][0]["results"]} == {
        pathlib.Path(tmp_path / "m.onnx").as_uri()}
    odd = tmp_path / "..models"
    odd.mkdir()
    p = save(contrib_model(), str(odd), "m.onnx")
    r = lint_sarif([p], str(tmp_path), "--target", "trt", "--repo-root", str(tmp_path))
    assert {json.dumps(location(x)["artifactLocation"]) for x in r.sarif["runs"][0]["results"]} == {
        json.dumps({"uri": "..models/m.onnx", "uriBaseId": "%SRCROOT%"})}


# --- 2. fingerprints unique in a run, stable across runs --------------------------------------

def if_without_branches(extra_node: bool = False) -> onnx.ModelProto:
    nodes = [h.make_node("If", ["c"], ["y"], name="ctl")]
    if extra_node:
        nodes.insert(0, h.make_node("Not", ["c"], ["nc"], name="unrelated"))
    outputs = [h.make_tensor_value_info("y", T.FLOAT, None)]
    if extra_node:
        outputs.append(h.make_tensor_value_info("nc", T.BOOL, []))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("c", T.BOOL, [])], outputs)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def fingerprints(run: dict, node: str) -> set[tuple[str, str]]:
    """(rule, fingerprint) of the results on ``node`` (messages may mention graph-wide counts)."""
    return {(x["ruleId"], x["partialFingerprints"]["primaryLocationLineHash"]) for x in run["results"]
            if x.get("properties", {}).get("node") == node}


def test_if_without_branches_gives_results_with_their_own_fingerprints(tmp_path):
    p = save(if_without_branches(), str(tmp_path), "if.onnx")
    targets = ("--target", "ort", "--target", "trt", "--target", "openvino")
    run = lint_sarif([p], str(tmp_path), *targets).sarif["runs"][0]  # the checker asserts uniqueness
    on_ctl = [x for x in run["results"] if x.get("properties", {}).get("node") == "ctl" and x["ruleId"] == "GL0001"]
    texts = sorted(x["message"]["text"] for x in on_ctl)
    assert len(texts) == 2 and "Required attribute 'else_branch'" in texts[0] and "then_branch" in texts[1]
    # The same finding for every target is one result listing them, not three equal alerts.
    assert all(sorted(x["properties"]["targets"]) == ["openvino@2026.4:cpu", "ort@1.32:cpu", "trt@10.15"]
               for x in on_ctl)
    # Stable: the same run gives the same fingerprints; a node added elsewhere changes none of ctl's.
    again = lint_sarif([p], str(tmp_path), *targets).sarif["runs"][0]
    assert fingerprints(again, "ctl") == fingerprints(run, "ctl")
    p2 = save(if_without_branches(extra_node=True), str(tmp_path), "if.onnx")
    moved = lint_sarif([p2], str(tmp_path), *targets).sarif["runs"][0]
    assert fingerprints(moved, "ctl") == fingerprints(run, "ctl") and len(fingerprints(run, "ctl")) >= 3


def test_one_finding_per_target_with_different_messages_stays_apart(tmp_path):
    """GL0007 on one input says a different thing per target: three results, three fingerprints."""
    m = h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                                  [h.make_tensor_value_info("x", T.FLOAT, [1, -5])],
                                  [h.make_tensor_value_info("y", T.FLOAT, [1, 4])]),
                     opset_imports=[h.make_opsetid("", 17)])
    p = save(m, str(tmp_path), "neg.onnx")
    run = lint_sarif([p], str(tmp_path), "--target", "ort", "--target", "trt", "--target", "openvino",
                     "--select", "GL0007").sarif["runs"][0]
    assert sorted(x["properties"]["target"] for x in run["results"]) == [
        "openvino@2026.4:cpu", "ort@1.32:cpu", "trt@10.15"]
    single = lint_sarif([p], str(tmp_path), "--target", "ort", "--select", "GL0007").sarif["runs"][0]
    assert len(single["results"]) == 1


def test_failures_with_long_common_prefixes_have_distinct_fingerprints(tmp_path):
    deep = tmp_path / ("a-rather-long-folder-name-" * 4)
    deep.mkdir()
    paths = []
    for i in range(3):
        p = deep / f"model-with-a-long-common-name-prefix-{i}.onnx"
        p.write_bytes(b"\x08\x07garbage")
        paths.append(str(p))
    run = lint_sarif(paths, str(tmp_path)).sarif["runs"][0]
    assert [x["ruleId"] for x in run["results"]] == ["GL9000"] * 3


# --- 3. XML problems carry their line ----------------------------------------------------------

def test_malformed_xml_is_placed_at_the_line_the_parser_stopped(tmp_path, ir):
    xml, data = ir
    cut = "\n".join(xml.splitlines()[:8])  # the parser stops at the end of line 8 or 9
    p = write(tmp_path, "cut", cut, data)
    r = lint_sarif([p], str(tmp_path))
    said = int(re.search(r"malformed XML at line (\d+)", r.err).group(1))
    (res,) = r.sarif["runs"][0]["results"]
    assert location(res)["region"] == {"startLine": said}
    (note,) = r.sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": said}
    j = json.loads(lint_cli(p, "--format", "json").out)
    assert j["failures"] == [{"path": p, "message": r.err.split(f"{p}: ", 1)[1].strip(), "line": said}]
    assert f",line={said}," in lint_cli(p, "--format", "github").out


@pytest.mark.parametrize("blank_lines", [0, 3])
def test_a_dtd_is_refused_at_its_line(tmp_path, ir, blank_lines):
    xml, data = ir
    doc = '<?xml version="1.0"?>\n' + "\n" * blank_lines + '<!DOCTYPE net [<!ENTITY a "b">]>\n' + body_of(xml)
    p = write(tmp_path, "dtd", doc, data)
    r = lint_sarif([p], str(tmp_path))
    assert r.code == 2 and "unsafe XML refused" in r.err
    (res,) = r.sarif["runs"][0]["results"]
    assert location(res)["region"] == {"startLine": line_of(doc, "<!DOCTYPE")}


def test_a_missing_bin_is_placed_at_the_first_const_that_reads_it(tmp_path, ir):
    xml, _ = ir
    p = write(tmp_path, "nobin", xml)
    r = lint_sarif([p], str(tmp_path))
    (res,) = [x for x in r.sarif["runs"][0]["results"] if x["ruleId"] == "GL0005"]
    assert "'nobin.bin' is missing" in res["message"]["text"]
    const_line = line_of(xml, 'type="Const"')
    assert location(res)["region"] == {"startLine": const_line}
    assert f"main, line {const_line}" in lint_cli(p).out
