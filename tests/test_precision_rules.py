"""The precision family (GL6xxx) on real exports: each rule's flagged model drifts beyond tolerance
without its keep-fp32 list and stays within it with the list, on a real engine; healthy models
stay silent; the keep-fp32 list and the fix do what they say."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from graphlint.config import resolve_options
from graphlint.lint import lint_paths
from testmodels import precision_runs as P
from testmodels.export_precision import inputs, models
from tests.conftest import ROOT, run_cli
from tests.test_precision_engines import DRIFT, TOL, needs_bf16

HEALTHY = ["vit", "clip", "bert", "whisper_enc", "llama", "convnext", "seq_mask"]


@functools.cache
def folder() -> str:
    return models()


def path(name: str) -> str:
    return os.path.join(folder(), f"{name}.onnx")


def lint(model: str, target: str, precision: str | None = None, ranges: tuple[str, ...] = ()) -> list:
    opts = resolve_options(targets=[target], select=["GL6"], ignore=[], shapes=[], config_path=None,
                           repo_root=None, precision=precision, input_ranges=list(ranges))
    run = lint_paths([model], opts)
    assert not run.failures, run.failures
    return list(run.findings())


def keep(findings: list) -> list[str]:
    return [n for f in findings for n in f.properties["keep_fp32"]]


@pytest.mark.parametrize("name", HEALTHY)
def test_family_is_silent_on_healthy_exports(name):
    for target, precision in (("trt", None), ("ort", None), ("openvino", None), ("openvino@gpu", None),
                              ("trt", "fp16"), ("ort", "fp16"), ("openvino", "bf16"), ("trt", "bf16")):
        assert lint(path(name), target, precision) == [], (target, precision)


def test_family_is_silent_at_fp32_and_where_the_engine_keeps_fp32():
    assert lint(path("linear_attn"), "openvino", "fp32") == []  # the user compiles with the f32 hint
    assert lint(path("linear_attn"), "ort", "fp16") == []  # the ORT converter blocks CumSum by default
    assert lint(path("llama_massive"), "openvino", "bf16") == []  # bf16 has float32's range


def test_gl6001_keep_list_brings_fp16_back_within_tolerance():
    found = lint(path("llama_massive"), "ort", "fp16")
    assert {f.rule_id for f in found} == {"GL6001"} and len(found) == 5
    assert all(f.severity.label == "warning" and f.rewrite.name == "keep-fp32" for f in found)
    names = keep(found)
    feeds = inputs(folder(), "llama_massive")
    ref = P.run_ort(path("llama_massive"), feeds)
    assert P.drift(ref, P.run_reference(P.ort_fp16(path("llama_massive")), feeds))["max_abs"] > DRIFT
    kept = P.join_blocked(P.ort_fp16(path("llama_massive"), names))
    for run in (P.run_reference, P.run_ort):
        got = P.drift(ref, run(kept, feeds))
        assert got["max_abs"] < TOL and got["argmax_same"]
    # the same nodes are named for every engine: TensorRT layers and OpenVINO layers follow node names
    assert keep(lint(path("llama_massive"), "trt", "fp16")) == names
    assert keep(lint(path("llama_massive"), "openvino@gpu")) == names


@needs_bf16
def test_gl6002_fix_marks_make_openvino_bf16_stay_within_tolerance(tmp_path):
    import openvino as ov

    xml = str(tmp_path / "la.xml")
    ov.save_model(ov.convert_model(path("linear_attn")), xml, compress_to_fp16=False)
    found = lint(xml, "openvino")  # the CPU default: bf16 on this host's kind of CPU
    assert {f.rule_id for f in found} == {"GL6002"} and len(found) == 4
    assert all("AVX512_BF16" in f.properties["condition"] for f in found)
    fixed = str(tmp_path / "fixed.xml")
    res = run_cli("fix", xml, "-t", "openvino", "--select", "GL6", "-o", fixed)
    assert res.code == 0, res.out + res.err
    assert lint(fixed, "openvino") == []
    feeds = inputs(folder(), "linear_attn")
    ref = P.run_ort(path("linear_attn"), feeds)
    with open(xml, encoding="utf-8") as f:
        before = P.drift(ref, P.run_openvino(f.read(), xml[:-4] + ".bin", feeds, "bf16")[0])
    with open(fixed, encoding="utf-8") as f:
        after = P.drift(ref, P.run_openvino(f.read(), fixed[:-4] + ".bin", feeds, "bf16")[0])
    assert before["max_abs"] > DRIFT and not before["argmax_same"]
    assert after["max_abs"] < TOL and after["argmax_same"]


def test_onnx_fix_records_metadata_and_the_findings_say_no_engine_reads_it(tmp_path):
    out = str(tmp_path / "marked.onnx")
    res = run_cli("fix", path("llama_massive"), "-t", "trt", "--precision", "fp16", "--select", "GL6", "-o", out)
    assert res.code == 0, res.out + res.err
    marked = [n.name for n in onnx.load(out).graph.node
              if any(p.key == "graphlint.keep_fp32" and p.value == "fp16" for p in n.metadata_props)]
    assert len(marked) == 20
    again = lint(out, "trt", "fp16")
    assert len(again) == 5 and all(f.severity.label == "info" and f.rewrite is None for f in again)
    assert all("no engine reads" in f.message for f in again) and keep(again) == marked


def test_keep_fp32_list_in_each_engine_syntax(tmp_path):
    out = str(tmp_path / "keep.json")
    res = run_cli("check", path("llama_massive"), "-t", "trt", "-t", "ort", "-t", "openvino@gpu",
                  "--precision", "fp16", "--select", "GL6", "--keep-fp32", out)
    assert res.code == 0 and "keep-fp32:" in res.out
    with open(out, encoding="utf-8") as f:
        lists = {kl["target"].split("@")[0]: kl for kl in json.load(f)["keep_fp32"]}
    assert set(lists) == {"trt", "ort", "openvino"}
    trt = lists["trt"]["recipe"]
    assert "--precisionConstraints=obey" in trt and "--layerPrecisions=node_pow_1:fp32," in trt
    assert "--layerOutputTypes=node_pow_1:fp32," in trt and trt.count(":fp32") == 2 * 20
    assert "graphlint fix" in lists["openvino"]["recipe"] and "INFERENCE_PRECISION_HINT" in lists["openvino"]["recipe"]
    # the ONNX Runtime recipe is a program: run it and the model it writes stays within tolerance
    script = lists["ort"]["recipe"]
    done = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path), capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    feeds = inputs(folder(), "llama_massive")
    ref = P.run_ort(path("llama_massive"), feeds)
    got = P.run_reference(onnx.load(str(tmp_path / "model_fp16.onnx")), feeds)
    assert P.drift(ref, got)["max_abs"] < TOL


def test_input_ranges_from_the_command_line_and_config(tmp_path):
    bad = run_cli("check", path("vit"), "--input-range", "pixel_values:3,-3")
    assert bad.code == 2 and "NAME:LO,HI" in bad.err and "Traceback" not in bad.err
    # bounded, not reached: a range that only bounds the values never becomes a finding
    assert lint(path("vit"), "trt", "fp16", ("pixel_values:-1000,1000",)) == []
    cfg = tmp_path / "graphlint.toml"
    cfg.write_text('[target-options.trt]\nprecision = "fp16"\ninput_ranges = { pixel_values = [-3.0, 3.0] }\n')
    res = run_cli("config", "--config", str(cfg), "-f", "json")
    values = json.loads(res.out)["values"]["target-options"]["value"]["trt"]
    assert values == {"precision": "fp16", "input_ranges": {"pixel_values": [-3.0, 3.0]}}


def test_the_value_range_reach_is_what_makes_a_finding():
    from graphlint.analysis import precision as PR
    from graphlint.load import load_model
    from graphlint.target import resolve

    model = load_model(path("llama_massive"))
    model.ready()
    facts = PR.facts(model, resolve("openvino@gpu"))
    assert len(facts.overflows) == 5
    bounds_only = [v for k, v in facts.ranges.items() if v.magnitude > facts.limit and v.reached <= facts.limit]
    assert bounds_only  # over-approximated bounds exist, and none of them was reported
    assert all(np.isfinite(o.reached) and o.reached > facts.limit for o in facts.overflows)
