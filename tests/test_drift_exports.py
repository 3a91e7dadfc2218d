"""Drift rules on real torch exports: the right rule on the right node, and nothing on clean exports.

Exports (testmodels/export_drift.py): legacy exporter at opsets 11, 13, 17 (and 10 for
interpolate), dynamo exporter at 18 (and 20 for grid_sample), plus a plain opset-17 conv net.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest

from testmodels.export_drift import EXPORTS, exports, file_name, lint, run_openvino, run_ort, torch_io

TARGETS = ["trt", "trt@10.1", "ort", "openvino", "openvino@gpu"]

pytestmark = pytest.mark.slow  # the first run exports 30 models (~40 s); later runs hit the cache


def expected(case: str, opset: int, target: str) -> set[tuple[str, str, str]]:
    """(rule, op type of the node it must name, severity) each export must produce on each target."""
    if case in ("interp_bilinear_ac0", "upsample_nearest") and opset == 10:
        return {("GL2001", "Resize", "warning")}  # Resize-10: asymmetric, changes on upgrade
    if case == "grid_sample" and opset >= 20 and target.startswith("trt"):
        return {("GL2006", "GridSample", "error")}  # mode='linear': TensorRT samples nearest
    if case == "layer_norm" and opset < 17:  # decomposed LayerNorm: fp16 overflow where fp16 runs
        sev = {"openvino@gpu": "warning", "trt": "info", "trt@10.1": "info"}.get(target)
        return {("GL2007", "Pow", sev)} if sev else set()
    if case == "gelu_tanh":
        return {("GL2008", "Tanh", "info")}  # Gelu-20 default is exact: fusions need approximate='tanh'
    return set()  # explicit Resize modes, transposed softmax, decomposed GroupNorm, conv net: drift-free


@pytest.fixture(scope="module")
def folder() -> str:
    return exports()


@pytest.mark.parametrize("target", TARGETS)
def test_each_export_gets_exactly_the_expected_findings(folder, target):
    from graphlint.lint import LintOptions, lint_paths

    paths = {os.path.join(folder, file_name(*e)): e for e in EXPORTS}
    run = lint_paths(sorted(paths), LintOptions(targets=[target], select=["GL2"]))
    assert not run.failures
    got: dict[str, set] = {p: set() for p in paths}
    for f in run.findings():
        got[f.model].add((f.rule_id, f.op_type, f.severity.label))
        # the finding names a real node of that op type, and its fix is structured data
        model = onnx.load(f.model, load_external_data=False)
        names = {n.name for n in model.graph.node if n.op_type == f.op_type}
        assert f.node in names, (f.node, names)
        assert f.rewrite is not None and f.rewrite.params.get("node") == f.node
        assert f.properties["drift"] and f.properties["effect"] in ("silent", "loud")
    for path, (case, opset, _dyn) in paths.items():
        assert got[path] == expected(case, opset, target), os.path.basename(path)


def test_conv_net_is_drift_free_everywhere(folder):
    path = os.path.join(folder, file_name("conv_net", 17, False))
    for target in [*TARGETS, "openvino@npu"]:
        assert lint(path, target) == [], target


def test_legacy_opset10_bilinear_already_differs_from_torch(folder):
    # the Resize-10 the legacy exporter writes for interpolate(align_corners=False) is asymmetric:
    # onnxruntime's numbers are not torch's, and GL2001 says so on that node
    ins, want = torch_io(folder, "interp_bilinear_ac0")
    got10 = run_ort(onnx.load(os.path.join(folder, file_name("interp_bilinear_ac0", 10, False))), {"x": ins[0]})
    got11 = run_ort(onnx.load(os.path.join(folder, file_name("interp_bilinear_ac0", 11, False))), {"x": ins[0]})
    assert np.abs(got10 - want).max() > 0.05
    np.testing.assert_allclose(got11, want, atol=1e-5)  # opset 11 writes half_pixel: torch's numbers
    f = lint(os.path.join(folder, file_name("interp_bilinear_ac0", 10, False)), "ort", "GL2001")
    assert "align_corners=False" in f[0].message


@pytest.mark.parametrize(("case", "opsets"), [
    ("interp_bilinear_ac1", [(11, False), (13, False), (17, False), (18, True)]),
    ("upsample_nearest", [(11, False), (13, False), (17, False), (18, True)]),
    ("softmax_mid", [(11, False), (13, False), (17, False), (18, True)]),
    ("group_norm", [(11, False), (13, False), (17, False), (18, True)]),
    ("grid_sample", [(17, False), (18, True), (20, True)]),
])
def test_clean_exports_really_agree_across_engines(folder, case, opsets):
    """Where the lint is quiet, onnxruntime and OpenVINO both reproduce torch's numbers."""
    ins, want = torch_io(folder, case)
    for opset, dyn in opsets:
        model = onnx.load(os.path.join(folder, file_name(case, opset, dyn)))
        feeds = {i.name: a for i, a in zip(model.graph.input, ins, strict=True)}
        np.testing.assert_allclose(run_ort(model, feeds), want, atol=1e-4, err_msg=f"ort {case} {opset}")
        np.testing.assert_allclose(run_openvino(model, feeds), want, atol=1e-4, err_msg=f"ov {case} {opset}")
