"""The engine facts of rules/data/precision.toml, shown with the engines on this machine.

Real exports from testmodels/export_precision.py; ONNX Runtime fp32 is the reference. OpenVINO
bf16 claims need a CPU plugin that compiles bf16 when asked: where it does not, those tests skip
(the compiled precision is what decides, not the host's flags).
"""

from __future__ import annotations

import functools
import os
import re
import tempfile

import numpy as np
import onnx
import pytest

from graphlint.target import data_dir

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from testmodels import precision_runs as P
from testmodels.export_precision import inputs, models

TOL = 0.01  # "within tolerance": outputs are O(0.1 .. 3); bf16 rounding alone gives 2e-4 .. 4e-3
DRIFT = 0.05  # "drifts": five times that


@functools.cache
def table() -> dict:
    with open(os.path.join(data_dir(), "precision.toml"), "rb") as f:
        return tomllib.load(f)


@functools.cache
def folder() -> str:
    return models()


def _case(name: str) -> tuple[str, dict[str, np.ndarray], list[np.ndarray]]:
    path = os.path.join(folder(), f"{name}.onnx")
    feeds = inputs(folder(), name)
    return path, feeds, P.run_ort(path, feeds)


needs_bf16 = pytest.mark.skipif(not P.openvino_bf16(), reason="this OpenVINO CPU plugin does not compile bf16")


def _layers(xml: str, types: set[str]) -> list[str]:
    return [n for n, t in re.findall(r'<layer id="\d+" name="([^"]*)" type="([^"]*)"', xml) if t in types]


@needs_bf16
def test_openvino_cpu_bf16_obeys_precise_mark(tmp_path):
    path, _feeds, _ = _case("linear_attn")
    xml, bin_path = P.ir_text(path, str(tmp_path))
    cumsums = _layers(xml, {"CumSum"})
    assert len(cumsums) == 4
    plain = P.runtime_precisions(xml, bin_path, "bf16")
    assert {plain[n][1] for n in cumsums} == {"bf16"}
    marked, count = P.mark_layers(xml, cumsums)
    assert count == 4
    kept = P.runtime_precisions(marked, bin_path, "bf16")
    assert {kept[n][1] for n in cumsums} == {"f32"}
    # the other IR spellings: the new attribute with the f16 entry is obeyed, bf16-only is not,
    # and the C++ helper's name is not an IR attribute at all
    spelled = {
        '<attribute name="DisablePrecisionConversion" version="0" value="dynamic:f16" />': "f32",
        '<attribute name="DisablePrecisionConversion" version="0" value="dynamic:bf16" />': "bf16",
        '<attribute name="disable_fp16_compression" version="0" />': "bf16",
    }
    for attribute, want in spelled.items():
        other, _ = P.mark_layers(xml, cumsums, attribute)
        got = P.runtime_precisions(other, bin_path, "bf16")
        assert {got[n][1] for n in cumsums} == {want}, attribute


def test_openvino_cpu_f16_hint_falls_back_to_bf16_here(tmp_path):
    path, feeds, _ref = _case("clip")
    xml, bin_path = P.ir_text(path, str(tmp_path))
    f16, compiled_as = P.run_openvino(xml, bin_path, feeds, "f16")
    if compiled_as == "f16":
        pytest.skip("this CPU computes f16 natively")
    bf16, bf16_as = P.run_openvino(xml, bin_path, feeds, "bf16")
    assert compiled_as == bf16_as
    for a, b in zip(f16, bf16, strict=True):
        np.testing.assert_array_equal(a, b)


def test_openvino_onnx_frontend_drops_node_metadata(tmp_path):
    import openvino as ov

    path, _, _ = _case("linear_attn")
    model = onnx.load(path)
    for node in model.graph.node:
        if node.op_type == "CumSum":
            entry = node.metadata_props.add()
            entry.key, entry.value = "precise", "0"
    marked = os.path.join(str(tmp_path), "meta.onnx")
    onnx.save(model, marked)
    converted = ov.convert_model(marked)
    cumsums = [op for op in converted.get_ordered_ops() if op.get_type_name() == "CumSum"]
    assert cumsums and not any("precise" in str(list(op.get_rt_info().keys())) for op in cumsums)


def test_convert_model_fuses_decomposed_norms_and_softmax(tmp_path):
    # seq_mask writes LayerNorm as mean/pow/sqrt/div and softmax as exp/sum/div
    path, _, _ = _case("seq_mask")
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"Pow", "Exp", "Sqrt"} <= ops
    xml, _ = P.ir_text(path, str(tmp_path))
    types = set(re.findall(r'type="([^"]*)"', xml))
    assert {"MVN", "SoftMax"} <= types and not {"Power", "Exp", "Sqrt"} & types


@needs_bf16
def test_long_cumsum_drifts_in_openvino_bf16_and_the_marks_fix_it(tmp_path):
    path, feeds, ref = _case("linear_attn")
    xml, bin_path = P.ir_text(path, str(tmp_path))
    plain = P.drift(ref, P.run_openvino(xml, bin_path, feeds, "bf16")[0])
    assert plain["max_abs"] > DRIFT and not plain["argmax_same"]
    marked, _ = P.mark_layers(xml, _layers(xml, {"CumSum"}))
    kept = P.drift(ref, P.run_openvino(marked, bin_path, feeds, "bf16")[0])
    assert kept["max_abs"] < TOL and kept["argmax_same"]
    # the same model through the ORT converter: CumSum is in its default op_block_list
    assert P.drift(ref, P.run_ort(P.ort_fp16(path), feeds))["max_abs"] < TOL


@needs_bf16
def test_openvino_bf16_cumsum_accumulates_in_bf16_reductions_do_not():
    import openvino as ov
    import openvino.opset13 as ops

    n = 1024
    x = ops.parameter([1, 4, n], np.float32)
    w = ops.constant(np.eye(n, dtype=np.float32))
    h = ops.matmul(x, w, False, False)  # a MatMul first: the plugin keeps the graph tail in f32
    axis = ops.constant(np.array(-1, np.int64))
    outs = [ops.matmul(ops.cumsum(h, axis), w, False, False),
            ops.matmul(ops.reduce_sum(h, ops.constant(np.array([-1], np.int64)), True), ops.constant(np.ones((1, 1), np.float32)), False, False)]
    model = ov.Model(outs, [x])
    data = (1.0 + np.random.default_rng(0).random((1, 4, n)) * 0.01).astype(np.float32)
    core = ov.Core()
    f32 = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})({0: data})
    bf16 = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})({0: data})
    rel = [float(np.abs(bf16[i] - f32[i]).max() / np.abs(f32[i]).max()) for i in range(2)]
    assert rel[0] > 0.5  # the running sum stalls at 256
    assert rel[1] < 0.01  # the reduction's accumulator is f32; only its output is rounded


def test_ort_block_list_keeps_fp16_between_blocked_nodes():
    path, feeds, ref = _case("llama_massive")
    chain = [n.name for n in onnx.load(path).graph.node if n.op_type in {"Pow", "ReduceMean", "Add", "Sqrt", "Reciprocal"}]
    blocked = P.ort_fp16(path, chain)
    pairs = [n for n in blocked.graph.node if n.op_type == "Cast" and n.name.endswith("_cast_to_fp16_node")]
    assert pairs  # the converter casts each blocked node's result back to fp16
    assert P.drift(ref, P.run_reference(blocked, feeds))["max_abs"] > DRIFT
    joined = P.join_blocked(blocked)
    assert P.drift(ref, P.run_reference(joined, feeds))["max_abs"] < TOL
    assert P.drift(ref, P.run_ort(joined, feeds))["max_abs"] < TOL


def test_square_overflow_in_fp16_and_its_keep_list():
    path, feeds, ref = _case("llama_massive")
    fp16 = P.ort_fp16(path)
    assert P.drift(ref, P.run_reference(fp16, feeds))["max_abs"] > DRIFT
    # ONNX Runtime's CPU provider computes Pow and ReduceMean in fp32 between its own Casts
    assert P.drift(ref, P.run_ort(fp16, feeds))["max_abs"] < TOL
    # the same model without the massive channel: fp16 is fine everywhere
    path2, feeds2, ref2 = _case("llama")
    assert P.drift(ref2, P.run_reference(P.ort_fp16(path2), feeds2))["max_abs"] < TOL


@needs_bf16
def test_clip_bf16_drift_is_spread_over_the_matmuls(tmp_path):
    path, feeds, ref = _case("clip")
    xml, bin_path = P.ir_text(path, str(tmp_path))
    plain = P.drift(ref, P.run_openvino(xml, bin_path, feeds, "bf16")[0])["max_abs"]
    assert plain > 2 * TOL
    heavy = {"MatMul", "Convolution", "Const", "Parameter", "Result"}
    rest = [n for n, t in re.findall(r'<layer id="\d+" name="([^"]*)" type="([^"]*)"', xml) if t not in heavy]
    marked, _ = P.mark_layers(xml, rest)
    assert P.drift(ref, P.run_openvino(marked, bin_path, feeds, "bf16")[0])["max_abs"] > 0.6 * plain
    assert P.drift(ref, P.run_openvino(xml, bin_path, feeds, "f32")[0])["max_abs"] < 1e-4


def test_mask_constants_are_clamped_by_the_converter():
    path, feeds, ref = _case("llama")
    model = onnx.load(path)
    assert any(onnx.numpy_helper.to_array(t).min() < -1e38 for t in model.graph.initializer
               if t.data_type == onnx.TensorProto.FLOAT)
    fp16 = P.ort_fp16(path)
    lows = [onnx.numpy_helper.to_array(t).min() for t in fp16.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16]
    assert min(lows) == np.float16(-65504)
    assert P.drift(ref, P.run_reference(fp16, feeds))["max_abs"] < TOL


def test_openvino_gpu_claims_are_cited():
    entry = next(e for e in table()["engine"] if e["id"] == "openvino-gpu-f16")
    assert entry["honoured"] == "not runnable here" and "not runnable here" in entry["source"]
    assert "releases/2026/4" in entry["source"]


def test_trt_claims_are_cited():
    entry = next(e for e in table()["engine"] if e["id"] == "trt-fp16")
    assert "--layerPrecisions" in entry["keep_fp32"] and "--layerOutputTypes" in entry["keep_fp32"]
    assert "docs.nvidia.com/deeplearning/tensorrt/10.16.1" in entry["source"] and "not runnable here" in entry["source"]


def test_every_entry_names_an_existing_evidence_test():
    import ast

    here = os.path.abspath(__file__)
    with open(here, encoding="utf-8") as f:
        names = {n.name for n in ast.parse(f.read()).body if isinstance(n, ast.FunctionDef)}
    data = table()
    for entry in [*data["engine"], *data["culprit"], *data["accumulation"]]:
        path, _, name = entry["evidence"].partition("::")
        assert os.path.basename(path) == os.path.basename(here) and name in names, entry.get("id", entry)
        assert entry.get("source") or entry.get("measured") or entry.get("accumulates"), entry.get("id", entry)
    engines = {e["id"] for e in data["engine"]}
    for entry in [*data["default"], *data["accumulation"]]:
        assert entry["engine"] in engines or entry["engine"] == "", entry


def test_the_mark_helper_writes_rt_info_once():
    path, _, _ = _case("linear_attn")
    with tempfile.TemporaryDirectory() as work:
        xml, _ = P.ir_text(path, work)
    names = _layers(xml, {"CumSum"})[:1]
    once, n1 = P.mark_layers(xml, names)
    twice, n2 = P.mark_layers(once, names)
    assert n1 == n2 == 1 and once.count(P.PRECISE) == twice.count(P.PRECISE) == 1
