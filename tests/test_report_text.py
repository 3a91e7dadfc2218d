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
