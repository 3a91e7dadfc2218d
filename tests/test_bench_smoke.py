"""The benchmark scripts keep working (tiny sizes; timings are printed, never asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench")


def test_make_models_and_run_tiny(tmp_path):
    out = str(tmp_path)
    subprocess.run([sys.executable, os.path.join(BENCH, "make_models.py"), "--out", out, "--scale", "0.002",
                    "--only", "big100k", "dag100k", "llm64", "w0", "w200m", "w2g", "ci0", "ci1"], check=True,
                   capture_output=True)
    llm = onnx.load(os.path.join(out, "llm64.onnx"), load_external_data=False)
    assert any(i.name.startswith("past_key_values.") for i in llm.graph.input)
    onnx.checker.check_model(os.path.join(out, "llm64.onnx"))
    big = onnx.load(os.path.join(out, "big100k.onnx"))
    onnx.checker.check_model(big, full_check=True)
    assert {"If", "LayerNormalization", "Softmax", "Gather", "Reshape", "Transpose", "MatMul"} <= {
        n.op_type for n in big.graph.node}
    assert [d.dim_param for d in big.graph.input[0].type.tensor_type.shape.dim] == ["batch", "seq"]
    # The external-data model is valid with its (sparse) data file, every offset in bounds.
    w = onnx.load(os.path.join(out, "w2g.onnx"))
    onnx.checker.check_model(w)
    data = os.path.join(out, "w2g.data")
    size = os.path.getsize(data)
    for t in w.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            ext = {e.key: e.value for e in t.external_data}
            assert ext["location"] == "w2g.data" and int(ext["offset"]) + int(ext["length"]) <= size
    assert os.stat(data).st_blocks * 512 < size  # sparse: no disk used for the zeros
    res = str(tmp_path / "res.json")
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "run.py"), "big100k", "dag100k", "weights", "ci",
                           "--models", out, "--runs", "1", "--json", res], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "graphlint trt / onnx check+infer" in proc.stdout
    with open(res) as f:
        results = json.load(f)
    assert [r["scenario"] for r in results] == ["big100k", "dag100k", "weights", "ci"]
    assert all(r["ratio"] > 0 for s in results for r in s["ratios"])


def test_startup_bench_runs():
    out = subprocess.run([sys.executable, os.path.join(BENCH, "startup.py"), "--rounds", "1"], check=True,
                         capture_output=True, text=True).stdout
    assert "import graphlint" in out and "graphlint.check(example, 'ort')" in out and "x import onnx" in out


def test_scan_bench_tiny():
    """bench/scan.py on the example alone and a tiny fleet of 3, local pool only."""
    examples = os.path.join(os.path.dirname(__file__), "..", "testmodels", "examples")
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "scan.py"), "--fleet", examples, "--tiny", "3",
                           "--no-ray", "--jobs", "2"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "local pool, from the store" in proc.stdout and "graphlint check (baseline)" in proc.stdout
    assert "model rows/s committed" in proc.stdout
