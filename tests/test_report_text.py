"""The text report lists errors and warnings and folds info findings into one line per model;
--show-info (or --fail-level info) lists them; JSON and SARIF always carry every finding."""

from __future__ import annotations

import glob
import os

from testmodels.fp_classes import models
from tests.conftest import run_cli


def _bert() -> str:
    return glob.glob(os.path.join(models(), "bert17.onnx"))[0]


def test_info_findings_are_one_line_per_model():
    r = run_cli(_bert(), "--target", "trt")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert "  no errors or warnings" in lines
    (info,) = [x for x in lines if x.startswith("  info")]
    assert "GL3007 optimization-profile (1)" in info and "--show-info" in info
    assert not any(x.strip().startswith("info ") and "GL3007 optimization-profile:" in x for x in lines)
    assert "infos in 1 model" in lines[-1]  # the summary still counts them


def test_show_info_and_fail_level_info_list_them():
    listed = run_cli(_bert(), "--target", "trt", "--show-info")
    assert listed.code == 0 and "info    GL3007 optimization-profile: Dynamic input(s)" in listed.out
    failing = run_cli(_bert(), "--target", "trt", "--fail-level", "info")
    assert failing.code == 1 and "info    GL3007 optimization-profile:" in failing.out


def test_json_and_sarif_keep_every_info_finding():
    js = run_cli(_bert(), "--target", "trt", "--format", "json").json()
    severities = [f["severity"] for f in js["models"][0]["findings"]]
    assert "info" in severities
    sarif = run_cli(_bert(), "--target", "trt", "--format", "sarif").json()
    assert {"note"} <= {r["level"] for r in sarif["runs"][0]["results"]}


def test_summary_counts_models_not_model_target_pairs():
    # one file linted for two targets is one model; two files in one run (linted by workers) are two
    one = run_cli(_bert(), "--target", "trt", "--target", "ort")
    assert one.code == 0, one.err
    assert one.out.count("bert17.onnx (onnx,") == 2 and " in 1 model" in one.out.splitlines()[-1]
    example = os.path.join(os.path.dirname(os.path.dirname(__file__)), "testmodels", "examples", "tiny_vlm.onnx")
    two = run_cli(_bert(), example, "--target", "trt", "--target", "ort")
    assert " in 2 models" in two.out.splitlines()[-1], two.out.splitlines()[-1]


# --- repeated findings: one block per rule and op type -------------------------------------

def _bert_dynquant(tmp_path) -> str:
    """bert17 through onnxruntime's quantize_dynamic (1.32): every MatMul becomes MatMulInteger and
    each activation a DynamicQuantizeLinear, rows TensorRT 10.15's operator matrix marks unsupported."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = str(tmp_path / "bert17_dyn.onnx")
    quantize_dynamic(_bert(), out, weight_type=QuantType.QInt8)
    return out


def test_repeated_findings_are_one_block_and_json_keeps_each(tmp_path):
    model = _bert_dynquant(tmp_path)
    js = run_cli(model, "--target", "trt", "--format", "json").json()
    found = js["models"][0]["findings"]
    per_op: dict[str, list[dict]] = {}
    for f in found:
        if f["rule_id"] == "GL1001":
            per_op.setdefault(f["op_type"], []).append(f)
    assert len(per_op.get("MatMulInteger", [])) > 3 and len(per_op.get("DynamicQuantizeLinear", [])) > 3, per_op.keys()

    text = run_cli(model, "--target", "trt")
    assert text.code == 1, text.err
    lines = text.out.splitlines()
    for op, fs in per_op.items():
        if len(fs) <= 3:
            continue
        header = f"  error   GL1001 unsupported-op: {len(fs)} {op} nodes"
        assert lines.count(header) == 1, (header, text.out)
        i = lines.index(header)
        assert lines[i + 1:i + 4] == [f"    '{f['node']}'  main, node #{f['location']['node_index']}" for f in fs[:3]]
        assert lines[i + 4] == f"    ... and {len(fs) - 3} more (--expand lists them; --format json has every finding)"
        assert lines[i + 5].startswith("    each: is marked unsupported in TensorRT 10.15's operator matrix")
        # no per-node line for the folded findings
        assert not any(f"GL1001 unsupported-op: Node '{f['node']}'" in x for f in fs for x in lines)
    assert len(lines) < len(found)  # the report is shorter than the list of findings
    # the summary still counts every finding
    errors = sum(f["severity"] == "error" for f in found)
    assert lines[-1].startswith(f"Found {errors} errors,"), lines[-1]

    expanded = run_cli(model, "--target", "trt", "--expand")
    for f in per_op["MatMulInteger"]:
        assert f"    error   GL1001 unsupported-op: {f['message']}" in expanded.out.splitlines()
    assert expanded.out.splitlines()[-1] == lines[-1]
