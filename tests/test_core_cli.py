"""The command line as users run it: exit codes, one-line errors, selection, output files."""

from __future__ import annotations

import json
import os

from tests.conftest import run_cli
from tests.models import contrib_model, external_data_model, relu_model, save, two_bad_nodes


def test_clean_model_exits_0(tmp_path):
    p = save(relu_model(), tmp_path, "relu.onnx")
    r = run_cli(p, "--target", "ort")
    assert r.code == 0, r.out + r.err
    assert "no findings" in r.out and r.err == ""


def test_checker_reports_every_problem_not_only_the_first(tmp_path):
    p = save(two_bad_nodes(), tmp_path, "bad.onnx")
    r = run_cli(p, "--target", "ort", "--format", "json", "--select", "GL0001")
    assert r.code == 1
    findings = r.json()["models"][0]["findings"]
    errors = {f["node"] for f in findings if f["severity"] == "error"}
    assert {"relu_bad_attr", "add_bad_dims"} <= errors, findings  # both rejected by ONNX Runtime
    assert all(f["rule_id"] == "GL0001" for f in findings)
    # the graph output without a shape is tolerated by ONNX Runtime: a spec-only warning
    assert [f["properties"]["complaint"] for f in findings if f["severity"] != "error"] == ["output-missing-shape"]


def test_opset_outside_target_depends_on_target_version(tmp_path):
    p = save(relu_model(opset=21), tmp_path, "relu21.onnx")
    old = run_cli(p, "--target", "trt@10.1", "--format", "json", "--select", "GL0002")
    new = run_cli(p, "--target", "trt@10.15", "--format", "json", "--select", "GL0002")
    assert old.code == 1 and new.code == 0
    (f,) = old.json()["models"][0]["findings"]
    assert f["properties"]["accepted"] == [9, 20] and "opset 21" in f["message"]


def test_unknown_domain_per_target(tmp_path):
    p = save(contrib_model(), tmp_path, "contrib.onnx")
    # Targets with a support table report such nodes through GL1002 (fused-contrib-op), not GL0003.
    trt = run_cli(p, "--target", "trt", "--format", "json", "--select", "GL0003,GL1002")
    ort = run_cli(p, "--target", "ort", "--format", "json", "--select", "GL0003,GL1002")
    assert [f["node"] for f in trt.json()["models"][0]["findings"]] == ["fast_gelu"]
    assert ort.json()["models"][0]["findings"] == []


def test_external_data_outside_folder_is_refused(tmp_path):
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    p = external_data_model(str(model_dir), "../secret.bin")
    r = run_cli(p, "--target", "ort", "--format", "json", "--select", "GL0005")
    assert r.code == 1
    (f,) = r.json()["models"][0]["findings"]
    assert f["value"] == "w" and "outside the model folder" in f["message"]


def test_input_errors_exit_2_with_one_line(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(os.urandom(256))
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(relu_model().SerializeToString()[:40])
    for path in (str(garbage), str(truncated), str(tmp_path / "missing.onnx")):
        r = run_cli(path)
        assert r.code == 2, (path, r.out, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and path in lines[0], r.err
        assert "Traceback" not in r.err + r.out


def test_one_broken_model_does_not_stop_the_others(tmp_path):
    good = save(contrib_model(), tmp_path, "good.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    r = run_cli(str(bad), good, "--target", "trt", "--format", "json")
    assert r.code == 2
    doc = r.json()
    assert [m["path"] for m in doc["models"]] == [good]
    assert doc["models"][0]["summary"]["error"] >= 1
    assert [f["path"] for f in doc["failures"]] == [str(bad)]


def test_fail_level_and_selection(tmp_path):
    m = relu_model()
    m.graph.output[0].type.tensor_type.ClearField("shape")  # GL0004 warning only
    p = save(m, tmp_path, "noshape.onnx")
    assert run_cli(p, "--target", "ort", "--select", "GL0004").code == 0
    assert run_cli(p, "--target", "ort", "--select", "GL0004", "--fail-level", "warning").code == 1
    assert run_cli(p, "--target", "ort", "--ignore", "validity", "--fail-level", "info").code == 0
    bad = run_cli(p, "--select", "GL77")
    assert bad.code == 2 and "matches no rule" in bad.err


def test_output_file_and_missing_folder(tmp_path):
    p = save(contrib_model(), tmp_path, "c.onnx")
    out = tmp_path / "report.json"
    r = run_cli(p, "--target", "trt", "--format", "json", "-o", str(out))
    assert r.code == 1 and r.out == ""
    assert json.loads(out.read_text())["schema"] == "graphlint-report/1"
    assert [f.name for f in tmp_path.iterdir() if f.name.startswith(".")] == []  # no temp left
    r = run_cli(p, "-o", str(tmp_path / "nope" / "r.json"))
    assert r.code == 2 and "does not exist" in r.err and "Traceback" not in r.err


def test_unknown_target_is_a_usage_error(tmp_path):
    p = save(relu_model(), tmp_path, "relu.onnx")
    r = run_cli(p, "--target", "tensorflow")
    assert r.code == 2 and "unknown target" in r.err
    r = run_cli(p, "--target", "openvino@tpu")
    assert r.code == 2 and "no device" in r.err


def test_rules_and_explain():
    r = run_cli("rules")
    assert r.code == 0
    header, *rows = r.out.strip().splitlines()
    assert header.split()[:5] == ["ID", "NAME", "FAMILY", "SEVERITY", "TARGETS"]
    ids = [row.split()[0] for row in rows]
    assert ids == sorted(ids) and "GL0001" in ids
    e = run_cli("explain", "GL0001")
    assert e.code == 0
    for section in ("## What it checks", "## Why it matters", "## Example", "## Fix"):
        assert section in e.out
    assert run_cli("explain", "GL0999").code == 2


def test_text_report_groups_by_node(tmp_path):
    p = save(contrib_model(), tmp_path, "c.onnx")
    r = run_cli(p, "--target", "trt", "--select", "GL0003,GL1002")
    assert "'fast_gelu' (FastGelu)" in r.out
    assert "\x1b[" not in r.out  # no colour when not a TTY
    assert r.out.strip().splitlines()[-1].startswith("Found 1 error,")


def test_lint_writes_nothing_into_the_working_folder(tmp_path):
    """Linting a model whose shapes stay unknown (where onnxruntime's symbolic inference, which
    graphlint no longer runs, saved temp models into the cwd) leaves no files in the user's folder."""
    from onnx import TensorProto as T
    from onnx import helper as h

    g = h.make_graph([h.make_node("Mystery", ["x"], ["m"], name="mystery", domain="acme"),
                      h.make_node("Relu", ["m"], ["y"], name="relu")], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, ["batch", 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("acme", 1)])
    models = tmp_path / "models"
    work = tmp_path / "work"
    models.mkdir()
    work.mkdir()
    p = save(model, models, "mystery.onnx")
    r = run_cli(p, "--target", "ort", "--format", "json", cwd=str(work))
    assert r.code in (0, 1), r.err
    assert "GL3009" in {f["rule_id"] for f in r.json()["models"][0]["findings"]}  # the unknown shape is reported
    assert list(work.iterdir()) == [] and sorted(f.name for f in models.iterdir()) == ["mystery.onnx"]


def test_version_names_the_engine_releases_of_the_target_tables():
    """`graphlint --version` says which engine release each target's support table was made from."""
    from graphlint import __version__
    from graphlint.target import _profiles

    res = run_cli("--version")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0] == f"graphlint, version {__version__}"
    for name, profiles in _profiles().items():
        for prof in profiles:
            (line,) = [x for x in lines if x.strip().startswith(f"{name}@{prof['version']}:")]
            assert prof["title"] in line
    assert any("onnxruntime 1.32.0" in x for x in lines) and any("openvino 2026.4.1" in x for x in lines)
    assert any("tensorrt 10.15" in x and "onnx-tensorrt" in x for x in lines)
