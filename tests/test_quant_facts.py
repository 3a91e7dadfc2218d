"""rules/data/quantization.toml: every fact is complete and cited, and each ORT/OpenVINO claim is shown
by running the engine on models made with onnxruntime.quantization (testmodels/quantized.py)."""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import tempfile

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from testmodels import quant_tiny
from testmodels.quant_engines import run_openvino, run_ort
from testmodels.quantized import VARIANTS, models
from tests.conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

with open(os.path.join(ROOT, "rules", "data", "quantization.toml"), "rb") as _f:
    TABLE = tomllib.load(_f)
FACTS = TABLE["fact"]
ENGINES = {"trt", "ort", "openvino", "openvino@npu"}
VERDICTS = {"rejects", "wrong-results", "slower", "runs", "undocumented"}


@functools.cache
def ort(name: str):
    return run_ort(os.path.join(models(), f"{name}.onnx"))


@functools.cache
def ov(name: str):
    return run_openvino(os.path.join(models(), f"{name}.onnx"))


def load(name: str) -> onnx.ModelProto:
    return onnx.load(os.path.join(models(), f"{name}.onnx"))


def _consts(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def _zero_points(model: onnx.ModelProto, op: str = "QuantizeLinear") -> list[np.ndarray]:
    consts = _consts(model)
    return [consts[n.input[2]] for n in model.graph.node if n.op_type == op and len(n.input) > 2 and n.input[2] in consts]


# --------------------------------------------------------------------------- the table itself
def _tests_in(path: str) -> set[str]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return {n.name for n in ast.parse(f.read()).body if isinstance(n, ast.FunctionDef)}


def test_fact_ids_are_unique():
    ids = [f["id"] for f in FACTS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f["id"])
def test_fact_is_complete(fact):
    for key in ("id", "engine", "scheme", "verdict", "claim", "source", "evidence"):
        assert fact.get(key), f"{fact['id']} lacks {key}"
    assert fact["engine"] in ENGINES and fact["verdict"] in VERDICTS
    if fact["verdict"] != "runs":  # a problem says how to get a model the target takes
        assert fact.get("remedy")
    remedy = fact.get("remedy", "")
    assert remedy in TABLE["tools"] or " " in remedy or remedy == "", "remedy: a [tools] key or a sentence"
    path, _, name = fact["evidence"].partition("::")
    assert name in _tests_in(path), f"{fact['evidence']} does not exist"
    if fact["engine"] in ("ort", "openvino"):  # claims about engines that run here were run here
        assert "(run here)" in fact["source"]


def test_trt_sources_are_cited_with_versions():
    versioned = re.compile(r"[0-9a-f]{40}|\b10\.(1|15)\b|1\.32\.0|10\.11\.0")
    for fact in FACTS:
        if fact["engine"] in ("trt", "openvino@npu"):
            assert versioned.search(fact["source"]), f"{fact['id']}: no version or commit in its source"
            assert "(run here)" not in fact["source"]
    assert re.search(r"[0-9a-f]{40}", TABLE["tools"]["modelopt_source"])


def test_trt_rows_say_what_the_facts_cite():
    # "operators.md:ROW" in a TensorRT fact names the row of the 10.15 matrix graphlint ships
    with open(os.path.join(ROOT, "rules", "data", "support", "trt-10.15.json"), encoding="utf-8") as f:
        by_row = {spec["row"]: (op, spec) for op, spec in json.load(f)["ops"].items()}
    cited = 0
    for fact in FACTS:
        if fact["engine"] != "trt":
            continue
        cites = [part.split(";")[0] for part in fact["source"].split("operators.md")[1:]]
        for row in (int(r) for part in cites for r in re.findall(r":(\d+)", part)):
            op, spec = by_row[row]
            assert op in fact["claim"] or op in fact["source"] or op in fact["scheme"], (fact["id"], row, op)
            if fact["verdict"] == "rejects" and op not in ("QuantizeLinear", "DequantizeLinear"):
                assert spec["supported"] is False, (fact["id"], op)
            cited += 1
    assert cited >= 8
    assert by_row[62][0] == "DequantizeLinear" and "int32" not in by_row[62][1]["types"]
    assert "zero" in by_row[142][1]["restrictions"]


# --------------------------------------------------------------------------- TensorRT premises
def test_asymmetric_variants_have_nonzero_zero_points():
    # what the TensorRT parser refuses is in what ORT's defaults write, and absent from the symmetric call
    for name in ("resnet_qdq_u8_asym", "vit_qdq_s8_asym", "whisper_enc_qdq_u8_asym"):
        zps = _zero_points(load(name))
        assert any((z != 0).any() for z in zps), name
    u8 = _zero_points(load("resnet_qdq_u8_asym"))
    assert all(z.dtype == np.uint8 for z in u8)
    for name in ("resnet_qdq_s8_sym", "vit_qdq_s8_sym", "whisper_enc_qdq_s8_sym", "bert_qdq_s8_sym"):
        model = load(name)
        for op in ("QuantizeLinear", "DequantizeLinear"):
            zps = [z for z in _zero_points(model, op) if z.dtype == np.int8]
            assert zps and all((z == 0).all() for z in zps), name


def test_sixteen_bit_variants_use_16bit_zero_points():
    model = load("resnet_qdq_u16")
    zps = _zero_points(model)
    assert zps and all(z.dtype == np.uint16 for z in zps)
    assert {n.domain for n in model.graph.node if n.op_type == "QuantizeLinear"} == {"com.microsoft"}


def test_int4_qdq_variants_are_blocked_dequantize():
    for name in ("bert_int4qdq_sym", "whisper_enc_int4qdq_asym"):
        model = load(name)
        consts = _consts(model)
        dqs = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
        assert dqs and max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) >= 21
        for n in dqs:
            w = model.graph.initializer[[i.name for i in model.graph.initializer].index(n.input[0])]
            # symmetric: INT4 (TensorRT's type); asymmetric: UINT4 with zero points, not a TensorRT type
            assert w.data_type == (onnx.TensorProto.INT4 if name.endswith("_sym") else onnx.TensorProto.UINT4)
            assert {a.name: a.i for a in n.attribute}.get("block_size") == 32
            assert consts[n.input[1]].ndim == len(w.dims)  # TensorRT's blocked form: scale of the weight's rank
        zps = [consts[n.input[2]] for n in dqs if len(n.input) > 2]
        assert (not zps or all((z == 0).all() for z in zps)) == name.endswith("_sym")
    assert {n.op_type for n in load("bert_nbits_sym").graph.node} >= {"MatMulNBits"}


def test_quantize_bias_false_keeps_float_bias():
    def int32_dqs(name):
        model = load(name)
        consts = _consts(model)
        return [n for n in model.graph.node if n.op_type == "DequantizeLinear"
                and n.input[0] in consts and consts[n.input[0]].dtype == np.int32]

    assert int32_dqs("resnet_qdq_s8_sym")  # ORT's default QuantizeBias=True
    assert int32_dqs("resnet_qdq_s8_sym_qbias0") == []
    assert ort("resnet_qdq_s8_sym_qbias0").ok


# --------------------------------------------------------------------------- ONNX Runtime
def test_ort_runs_every_tool_variant():
    for name in VARIANTS:
        if name == "resnet_fp16scale_op17":
            continue
        got = ort(name)
        assert got.ok and np.isfinite(got.rel_err), (name, str(got))


def test_fp16_scales_need_opset_19_on_ort():
    bad, good = ort("resnet_fp16scale_op17"), ort("resnet_fp16scale_op19")
    assert not bad.ok and bad.stage == "load"
    assert "INVALID_GRAPH" in bad.error and "float16" in bad.error and "DequantizeLinear" in bad.error
    assert good.ok and good.rel_err < 0.05
    model = load("resnet_fp16scale_op17")
    consts = _consts(model)
    assert any(consts[n.input[1]].dtype == np.float16 for n in model.graph.node if n.op_type == "DequantizeLinear")
    # OpenVINO takes both
    assert ov("resnet_fp16scale_op17").ok and ov("resnet_fp16scale_op19").ok
    assert ov("resnet_fp16scale_op17").fake_quantize > 0


def test_k_axis_scales_leave_matmuls_unfused_on_ort():
    import onnxruntime as ort_

    def fused(name: str) -> tuple[int, int]:
        with tempfile.TemporaryDirectory() as d:
            so = ort_.SessionOptions()
            so.log_severity_level = 4
            so.optimized_model_filepath = os.path.join(d, "opt.onnx")
            ort_.InferenceSession(os.path.join(models(), f"{name}.onnx"), so, providers=["CPUExecutionProvider"])
            ops = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
        return ops.count("QLinearMatMul"), ops.count("MatMul")

    axes = {name: {a.i for n in load(name).graph.node if n.op_type == "DequantizeLinear" for a in n.attribute
                   if a.name == "axis"} for name in ("vit_qdq_pc_k", "vit_qdq_pc_n")}
    assert axes == {"vit_qdq_pc_k": {0}, "vit_qdq_pc_n": {1}}
    (k_fused, k_float), (n_fused, n_float) = fused("vit_qdq_pc_k"), fused("vit_qdq_pc_n")
    assert k_fused < n_fused and k_float > n_float


# --------------------------------------------------------------------------- OpenVINO
def test_openvino_runs_qdq_in_int8():
    for name in ("resnet_qdq_s8_sym", "resnet_qdq_u8_asym", "resnet_qdq_s8_sym_pc", "resnet_dynamo_qdq_s8_sym",
                 "whisper_enc_qdq_s8_sym", "whisper_enc_qdq_u8_asym", "vit_qdq_s8_sym"):
        got, ref = ov(name), ort(name)
        assert got.ok and got.fake_quantize > 0, (name, str(got))
        assert {"Convolution", "FullyConnected"} & set(got.int8_layers), (name, got.int8_layers)
        assert abs(got.rel_err - ref.rel_err) < 0.02, (name, got.rel_err, ref.rel_err)


def test_openvino_rejects_run_time_quantized_constants():
    for name in ("bert_qdq_s8_sym", "bert_qdq_u8_asym", "vit_qdq_noprep"):
        got = ov(name)
        assert not got.ok and got.stage == "compile", (name, str(got))
        assert "MultiplyPartialTransformation" in got.error
        model = load(name)
        producers = {o: n for n in model.graph.node for o in n.output}
        consts = set(_consts(model))
        assert any(n.op_type == "QuantizeLinear" and (n.input[0] in consts or getattr(
            producers.get(n.input[0]), "op_type", "") == "Constant") for n in model.graph.node)
    assert ov("vit_qdq_s8_sym").ok  # the same model after quant_pre_process folded its constants
    # the trigger, isolated: the same numbers stored pre-quantized compile
    core = _ov_core()
    for combine, transformation in (("Mul", "MultiplyPartialTransformation"), ("Add", "AddTransformation")):
        with pytest.raises(RuntimeError, match=transformation):
            _ov_compile(core, quant_tiny.quantized_constant(prequantized=False, combine=combine))
        _ov_compile(core, quant_tiny.quantized_constant(prequantized=True, combine=combine))


def test_openvino_strips_16bit_clamps():
    bad, keep = ov("resnet_qdq_u16"), ov("resnet_qdq_u16_keep")
    assert ort("resnet_qdq_u16").rel_err < 0.05 and ort("resnet_qdq_u16_keep").rel_err < 0.05
    assert bad.ok and bad.rel_err > 0.5, str(bad)  # runs, numbers wrong
    assert keep.ok and keep.rel_err < 0.05, str(keep)
    ops = [n.op_type for n in load("resnet_qdq_u16").graph.node]
    assert "Relu" not in ops and "Relu" in [n.op_type for n in load("resnet_qdq_u16_keep").graph.node]
    # a model without Relu/Clip to remove is not affected
    assert ov("vit_qdq_u16").ok and ov("vit_qdq_u16").rel_err < 0.05


def test_openvino_qlinear_add_wraps():
    import onnxruntime as ort_

    rng = np.random.default_rng(0)
    core = _ov_core()
    for zp, lo, hi, wrong in ((0, 0, 60, False), (128, 0, 100, True), (100, 100, 256, True)):
        a = rng.integers(lo, hi, (1, 4, 3, 3)).astype(np.uint8)
        b = rng.integers(lo, hi, (1, 4, 3, 3)).astype(np.uint8)
        model = quant_tiny.qlinear_add(zp)
        want = quant_tiny.qlinear_add_reference(a, b, zp)
        got_ort = ort_.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"a": a, "b": b})[0]
        got_ov = _ov_compile(core, model)({"a": a, "b": b})[0]
        assert np.abs(got_ort.astype(int) - want).max() <= 1
        assert (np.abs(got_ov.astype(int) - want).max() > 100) == wrong, (zp, got_ov, want)
    # in a real QOperator export: ResNet (dynamo) converts and runs with wrong numbers
    real = ov("resnet_dynamo_qop_u8")
    assert real.ok and real.rel_err > 0.5 and ort("resnet_dynamo_qop_u8").rel_err < 0.05, str(real)
    vit = ov("vit_qop_u8")
    assert not vit.ok and "QLinearAdd" in vit.error


def test_openvino_lacks_some_quantized_contrib_ops():
    for name, op in (("resnet_qop_u8", "QLinearGlobalAveragePool"), ("bert_fused_dyn", "QAttention")):
        got = ov(name)
        assert not got.ok and got.stage == "load" and op in got.error, (name, str(got))
    ops = {n.op_type for n in load("vit_qop_u8").graph.node}
    assert "QGemm" in ops
    got = run_openvino_error("vit_qop_u8")
    assert "No conversion rule found for operations: com.microsoft.QGemm" in got


def test_openvino_runs_dynamic_quantization_in_float():
    for name in ("bert_dyn", "vit_dyn", "resnet_dyn", "whisper_enc_dyn"):
        got, ref = ov(name), ort(name)
        assert got.ok and abs(got.rel_err - ref.rel_err) < 1e-3, (name, str(got))
        assert not {"Convolution", "FullyConnected", "MatMul"} & set(got.int8_layers), (name, got.int8_layers)
        assert "DynamicQuantizeLinear" in {n.op_type for n in load(name).graph.node}


def test_int4_weight_only_runs_everywhere_here():
    for name in ("bert_nbits_sym", "bert_nbits_asym", "bert_int4qdq_sym", "whisper_enc_int4qdq_asym"):
        got, ref = ov(name), ort(name)
        assert got.ok and ref.ok and abs(got.rel_err - ref.rel_err) < 1e-3, (name, str(got), str(ref))


# --------------------------------------------------------------------------- helpers
@functools.cache
def _ov_core():
    import openvino as ov_

    return ov_.Core()


def _ov_compile(core, model: onnx.ModelProto):
    from graphlint.fix.verify import OPENVINO_F32

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        onnx.save(model, path)
        return core.compile_model(core.read_model(path), "CPU", OPENVINO_F32)


def run_openvino_error(name: str) -> str:
    """OpenVINO's whole conversion message (Outcome keeps one line)."""
    try:
        _ov_core().read_model(os.path.join(models(), f"{name}.onnx"))
    except Exception as e:
        return str(e)
    return ""
