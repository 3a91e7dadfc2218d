"""Real transformers models (testmodels/build_fused.py), unfused and fused by onnxruntime.transformers.optimizer.

TensorRT: errors on every fused com.microsoft node, clean unfused. ONNX Runtime: clean, and the
sessions load. OpenVINO: graphlint's verdict equals an actual CPU compile, and OpenVINO IR of the
same model (native ops) is clean.
"""

from __future__ import annotations

import os

import onnx
import pytest

from graphlint.lint import LintOptions, lint_paths

MODELS = ("bert", "bert_fused", "vit", "vit_fused")
pytestmark = pytest.mark.slow  # torch export + fusion on the first run (cached afterwards)


@pytest.fixture(scope="module")
def folder() -> str:
    from testmodels import build_fused
    from testmodels.common import cached

    return cached("fused-transformers", build_fused.build)


def _lint(path: str, target: str):
    run = lint_paths([path], LintOptions(targets=[target], select=["target-support"]))
    assert not run.failures
    return run.results[0]


def _errors(res):
    return [f for f in res.findings if f.severity.label == "error"]


def test_fusion_produced_contrib_ops(folder):
    ops = {n.op_type for n in onnx.load(os.path.join(folder, "bert_fused.onnx")).graph.node if n.domain}
    assert {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization"} <= ops
    vit = {n.op_type for n in onnx.load(os.path.join(folder, "vit_fused.onnx")).graph.node if n.domain}
    assert "SkipLayerNormalization" in vit


@pytest.mark.parametrize("name", MODELS)
def test_trt(folder, name):
    path = os.path.join(folder, f"{name}.onnx")
    res = _lint(path, "trt")
    contrib = {n.name for n in onnx.load(path).graph.node if n.domain == "com.microsoft"}
    flagged = {f.node for f in _errors(res)}
    assert flagged == contrib  # every fused node, nothing else
    assert all(f.rule_id in ("GL1002", "GL1003") and f.rewrite is not None for f in _errors(res))
    part = res.stats["partition"]
    assert (part["unsupported_islands"] > 0) == bool(contrib)
    if name == "bert_fused":
        rewrites = {f.op_type: f.rewrite.name for f in _errors(res)}
        assert rewrites["SkipLayerNormalization"] == "trt-plugin" and rewrites["BiasGelu"] == "unfuse-contrib"
        assert any(f.rule_id == "GL1003" and f.op_type == "Attention" for f in _errors(res))


@pytest.mark.parametrize("name", MODELS)
def test_ort_clean_and_loads(folder, name):
    import onnxruntime as ort

    path = os.path.join(folder, f"{name}.onnx")
    assert not _errors(_lint(path, "ort"))
    ort.InferenceSession(path, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", MODELS)
def test_openvino_verdict_equals_cpu_compile(folder, name):
    import openvino as ov

    path = os.path.join(folder, f"{name}.onnx")
    res = _lint(path, "openvino")
    core = ov.Core()
    try:
        core.compile_model(core.read_model(path), "CPU")
        compiled = True
    except Exception:
        compiled = False
    assert bool(_errors(res)) == (not compiled), [f.message for f in _errors(res)]
    if "fused" not in name:
        assert compiled


def test_openvino_ir_is_native(folder, tmp_path):
    from testmodels.common import to_openvino

    xml = to_openvino(os.path.join(folder, "bert_fused.onnx"), os.path.join(tmp_path, "bert_fused.xml"))
    for target in ("openvino", "openvino@gpu"):
        run = lint_paths([xml], LintOptions(targets=[target], select=["target-support"]))
        assert not run.failures and not _errors(run.results[0])
