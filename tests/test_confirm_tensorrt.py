"""``--confirm`` on TensorRT: where the ``tensorrt`` package and a CUDA GPU are present, the model is parsed,
built with the optimization profile the fed sizes imply and run, and the parser's and builder's own
errors are what the report says; elsewhere the TensorRT target is skipped with a note saying why, and
the CPU-only path never imports TensorRT."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from onnx import TensorProto as T
from onnx import helper as h

from graphlint.confirm.engines import has_gpu, installed
from graphlint.confirm.execute import profile_for
from graphlint.confirm.plan import GIVEN, SAMPLE, Plan, Point
from tests.conftest import ROOT, run_cli
from tests.models import relu_model, save

TRT_VERSION = installed("tensorrt")


def _trt_target() -> str:
    """The trt target of the installed TensorRT, or skip (with the reason) where it cannot run."""
    if TRT_VERSION is None:
        pytest.skip("the tensorrt package is not installed (TensorRT's confirm path runs only where it is)")
    try:
        import tensorrt  # noqa: F401
    except Exception as e:  # installed but broken (no CUDA libraries): say so
        pytest.skip(f"tensorrt {TRT_VERSION} is installed but does not import: {e}")
    if not has_gpu():
        pytest.skip(f"tensorrt {TRT_VERSION} is installed but this machine has no CUDA GPU")
    from graphlint.errors import UsageError
    from graphlint.target import resolve

    spec = "trt@" + ".".join(TRT_VERSION.split(".")[:2])
    try:
        return resolve(spec).spec
    except UsageError as e:
        pytest.skip(f"the installed TensorRT {TRT_VERSION} has no graphlint profile: {e}")


def _unparsable():
    g = h.make_graph([h.make_node("Relu", ["x"], ["r"], name="relu"),
                      h.make_node("NoSuchOp", ["r"], ["y"], name="mystery", domain="example.custom")], "custom",
                     [h.make_tensor_value_info("x", T.FLOAT, ["batch", 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["batch", 4])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("example.custom", 1)])


def _confirm_record(out: str, target: str) -> dict:
    doc = json.loads(out)
    return next(m for m in doc["models"] if m["target"] == target)["confirm"]


def test_profile_is_the_one_the_fed_sizes_imply():
    given = Plan(inputs={"x": None, "m": None})
    given.points = [Point("--shapes min", GIVEN, {"x": (1, 4), "m": (1,)}),
                    Point("--shapes opt", GIVEN, {"x": (2, 8), "m": (4,)}),
                    Point("--shapes max", GIVEN, {"x": (4, 16), "m": (3,)}),
                    Point("sample", SAMPLE, {"x": (8, 2), "m": (1,)})]
    assert profile_for(given) == {"x": [[1, 2], [2, 8], [8, 16]], "m": [[1], [4], [4]]}
    sampled = Plan(inputs={"x": None, "s": None})
    sampled.points = [Point("sample", SAMPLE, {"x": (1, 8), "s": ()}), Point("sample x2", SAMPLE, {"x": (2, 16), "s": ()})]
    assert profile_for(sampled) == {"x": [[1, 8], [1, 8], [2, 16]], "s": [[], [], []]}


def test_trt_confirm_builds_the_engine_at_the_fed_sizes_and_runs_it(tmp_path):
    target = _trt_target()
    path = save(relu_model(), str(tmp_path), "relu.onnx")
    r = run_cli("check", path, "--target", target, "--confirm", "--shapes", "x:1x4,2x4,8x4", "--format", "json")
    assert r.code in (0, 1), r.err
    rec = _confirm_record(r.out, target)
    assert rec["engine"] == "tensorrt" and rec["version"] == TRT_VERSION and rec["device"] == "gpu", rec
    assert "load_error" not in rec and "crashed" not in rec, rec
    assert [(p["label"], p["ok"]) for p in rec["points"]] == [("--shapes min", True), ("--shapes opt", True),
                                                              ("--shapes max", True)]


def test_trt_confirm_reports_the_parsers_own_error(tmp_path):
    target = _trt_target()
    path = save(_unparsable(), str(tmp_path), "custom.onnx")
    r = run_cli("check", path, "--target", target, "--confirm", "--format", "json")
    assert r.code in (0, 1), r.err
    rec = _confirm_record(r.out, target)
    assert rec["engine"] == "tensorrt"
    assert rec["load_error"].startswith("TensorRT's ONNX parser: ") and "NoSuchOp" in rec["load_error"], rec


def test_trt_confirm_here_records_why_it_did_not_run(tmp_path):
    if TRT_VERSION is not None and has_gpu():
        pytest.skip("TensorRT and a GPU are present here: the engine runs (the tests above)")
    path = save(relu_model(), str(tmp_path), "relu.onnx")
    r = run_cli("check", path, "--target", "trt", "--target", "ort", "--confirm", "--format", "json")
    assert r.code in (0, 1), r.err
    rec = _confirm_record(r.out, "trt@10.15")
    why = "tensorrt is not installed" if TRT_VERSION is None else "no CUDA GPU"
    assert why in rec["skipped"], rec
    assert _confirm_record(r.out, "ort@1.32:cpu")["engine"] == "onnxruntime"  # the other target still ran


def test_cpu_only_confirm_does_not_import_tensorrt(tmp_path):
    path = save(relu_model(), str(tmp_path), "relu.onnx")
    code = (
        "import json, sys, graphlint\n"
        f"report = graphlint.check({path!r}, target=['ort', 'trt'], confirm=True)\n"
        "ran = {r.target.spec: (r.confirm or {}).get('engine') for r in report.run.results}\n"
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorrt', 'onnxruntime', 'openvino')\n"
        "              or m in ('graphlint.runners.tensorrt', 'graphlint.runners.onnxruntime',\n"
        "                       'graphlint.runners.openvino'))\n"
        "print(json.dumps({'ran': ran, 'modules': mods}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert doc["ran"]["ort@1.32:cpu"] == "onnxruntime"  # the engine ran, in a child process of its own
    assert doc["modules"] == []  # neither TensorRT nor any engine (nor graphlint's runner of one) in the linter
