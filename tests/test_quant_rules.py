"""The quantization rules (GL7xxx) on models made with onnxruntime.quantization, and the two exact fixes,
checked against what ONNX Runtime and OpenVINO do with the same models (tests/test_quant_facts.py)."""

from __future__ import annotations

import functools
import os

import pytest

from testmodels.quant_engines import run_openvino, run_ort
from testmodels.quantized import models
from tests.conftest import run_cli


@functools.cache
def findings(target: str) -> dict[str, list]:
    from graphlint.lint import LintOptions, lint_paths

    d = models()
    names = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".onnx"))
    run = lint_paths([os.path.join(d, n + ".onnx") for n in names], LintOptions(targets=[target], select=["GL7"]))
    assert not run.failures
    out: dict[str, list] = {n: [] for n in names}
    for f in run.findings():
        out[os.path.basename(f.model)[:-5]].append(f)
    return out


def ids(target: str, name: str, severity: str | None = None) -> set[str]:
    return {f.rule_id for f in findings(target)[name] if severity is None or f.severity.label == severity}


def test_healthy_models_are_nearly_silent():
    # what each engine runs correctly gets no warning or error from the family
    for name in ("resnet_qdq_s8_sym", "resnet_qdq_u8_asym", "vit_qdq_s8_sym", "whisper_enc_qdq_s8_sym_pc",
                 "bert_nbits_sym", "whisper_enc_int4qdq_asym", "resnet_qdq_u16_keep", "vit_qdq_u16"):
        assert run_openvino(os.path.join(models(), name + ".onnx")).ok
        assert not ids("openvino", name) - {"GL7009"}, name
    for name in findings("ort"):
        if name not in ("resnet_fp16scale_op17", "vit_qdq_pc_k"):
            assert not ids("ort", name), (name, ids("ort", name))
    assert ids("trt", "resnet_qdq_s8_sym_qbias0") <= {"GL7008"}  # TensorRT's recipe: info on placement only
    assert ids("trt", "bert_int4qdq_sym") == set()


def test_trt_scheme_findings_explain_and_do_not_double_count():
    dyn = findings("trt")["bert_dyn"]
    assert [f.rule_id for f in dyn] == ["GL7001"] and dyn[0].severity.label == "info"  # GL1001 has the errors
    assert "DynamicQuantizeLinear" in dyn[0].message and "QuantType.QInt8" in dyn[0].message
    assert dyn[0].properties["fact"] == "trt-dynamic-quantization"
    qop = {f.properties["scheme"] for f in findings("trt")["vit_qop_u8"] if f.rule_id == "GL7001"}
    assert qop == {"qoperator"}
    nbits = [f for f in findings("trt")["bert_nbits_sym"] if f.rule_id == "GL7001"]
    assert nbits and "is_symmetric=True" in nbits[0].message and "QuantFormat.QDQ" in nbits[0].message


def test_trt_qdq_requirements_name_the_cause_and_the_call():
    u8 = [f for f in findings("trt")["resnet_qdq_u8_asym"] if f.rule_id == "GL7002"]
    assert len(u8) == 1 and u8[0].severity.label == "error"  # uint8 DQ inputs: no per-node error covers them
    assert "non-zero zero points" in u8[0].message and "uint8" in u8[0].message and "int32 bias" in u8[0].message
    assert '"ActivationSymmetric": True' in u8[0].message and '"QuantizeBias": False' in u8[0].message
    s8 = [f for f in findings("trt")["resnet_qdq_s8_sym"] if f.rule_id == "GL7002"]
    assert len(s8) == 1 and s8[0].severity.label == "info" and "int32 bias" in s8[0].message  # GL1005 has them
    assert "GL7002" in ids("trt", "resnet_qdq_u16", "error")
    assert "GL7002" in ids("trt", "whisper_enc_int4qdq_asym")  # uint4 + zero points


def test_openvino_errors_match_engine_runs():
    # every OpenVINO error the family raises is a model OpenVINO refuses or gets wrong
    for name, rules in findings("openvino").items():
        errors = {f.rule_id for f in rules if f.severity.label == "error"}
        if not errors:
            continue
        got, ref = run_openvino(os.path.join(models(), name + ".onnx")), run_ort(os.path.join(models(), name + ".onnx"))
        assert not got.ok or got.rel_err > 10 * max(ref.rel_err, 0.01), (name, errors, str(got))
    assert ids("openvino", "bert_qdq_s8_sym", "error") == {"GL7003"}
    assert ids("openvino", "vit_qdq_noprep", "error") == {"GL7003"}
    assert ids("openvino", "resnet_qdq_u16", "error") == {"GL7004"}
    assert "GL7005" in ids("openvino", "resnet_dynamo_qop_u8", "error")
    assert ids("openvino", "resnet_fp16scale_op17") == {"GL7007"}


def test_per_channel_axis_on_k():
    f = [x for x in findings("ort")["vit_qdq_pc_k"] if x.rule_id == "GL7006"]
    assert len(f) == 1 and f[0].severity.label == "warning" and len(f[0].properties["nodes"]) == 12
    assert ids("ort", "vit_qdq_pc_n") == set() and "GL7006" in ids("trt", "vit_qdq_pc_k")


@pytest.mark.parametrize("name,rule,rewrite", [("resnet_qdq_u16", "GL7004", "relu-before-clamping-q")])
def test_fix_is_exact_and_removes_the_finding(tmp_path, name, rule, rewrite):
    src = os.path.join(models(), name + ".onnx")
    out = str(tmp_path / f"{name}.onnx")
    res = run_cli("fix", src, "--target", "openvino", "--select", rule, "-o", out)
    assert res.code == 0, res.err
    assert rewrite in res.out and "max |diff| 0" in res.out  # verified equal in ONNX Runtime
    assert run_cli(out, "--target", "openvino", "--select", rule).code == 0  # the finding is gone
    fixed = run_openvino(out)
    assert fixed.ok and fixed.rel_err < 0.05 + run_ort(src).rel_err, str(fixed)


def test_fold_quantized_constant_is_exact_but_not_enough_for_openvino(tmp_path):
    # the rewrite is exact and removes the MultiplyPartialTransformation crash; OpenVINO then
    # fails on the unfused bias Add (AddTransformation), which is why GL7003 does not attach it
    src = os.path.join(models(), "vit_qdq_noprep.onnx")
    out = str(tmp_path / "vit.onnx")
    res = run_cli("fix", src, "--target", "openvino", "--rewrite", "fold-quantized-constant", "-o", out)
    assert res.code == 0, res.err
    assert "fold-quantized-constant: 6 change(s)" in res.out and "max |diff| 0" in res.out
    assert run_cli(out, "--target", "openvino", "--select", "GL7003").code == 0
    after = run_openvino(out)
    assert not after.ok and "AddTransformation" in after.error
    assert not any(f.rewrite for f in findings("openvino")["vit_qdq_noprep"] if f.rule_id == "GL7003")


@pytest.mark.parametrize("name", ["resnet_dyn", "vit_dyn", "whisper_enc_dyn"])
def test_dequantize_dynamic_gives_trt_float_ops_with_the_same_results(tmp_path, name):
    # quantize_dynamic's DynamicQuantizeLinear/MatMulInteger/ConvInteger are rows TensorRT's parser
    # marks unsupported; the rewrite computes the same quantization with float ops, which the fix
    # runner verifies in ONNX Runtime, and both engines here run the result as they ran the original
    import onnx

    src = os.path.join(models(), name + ".onnx")
    out = str(tmp_path / f"{name}.onnx")
    assert "GL7001" in ids("trt", name)
    assert run_cli(src, "--target", "trt", "--select", "GL1001").code == 1  # the parser's rows refuse them
    res = run_cli("fix", src, "--target", "trt", "--select", "GL7001", "-o", out)
    assert res.code == 0, res.err
    assert "dequantize-dynamic" in res.out and "verified in onnxruntime" in res.out, res.out
    ops = {n.op_type for n in onnx.load(out).graph.node}
    assert not ops & {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"}, ops
    after = run_cli(out, "--target", "trt", "--select", "GL1001,GL7001", "--fail-level", "warning")
    assert after.code == 0, after.out
    before_ort, before_ov = run_ort(src), run_openvino(src)
    fixed_ort, fixed_ov = run_ort(out), run_openvino(out)
    assert fixed_ort.ok and abs(fixed_ort.rel_err - before_ort.rel_err) < 1e-4, (str(before_ort), str(fixed_ort))
    assert fixed_ov.ok and fixed_ov.rel_err < before_ov.rel_err + 0.02, (str(before_ov), str(fixed_ov))
