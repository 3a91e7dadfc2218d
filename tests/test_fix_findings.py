"""graphlint fix driven by the rules' findings: the applied rewrites' findings are gone afterwards."""

from __future__ import annotations

import numpy as np
import onnx
import openvino as ov
import pytest
from onnx import TensorProto, helper, numpy_helper

from testmodels.fix_models import model
from tests.conftest import run_cli
from tests.fixhelp import ops, ort_outputs, run_fix, steps

FUSED_RULES = ("GL0003", "GL1001", "GL1002", "GL1003", "GL1004")


def _lint(path: str, target: str, *select: str) -> list:
    """Findings of an in-process lint (the CLI's JSON is covered by the CLI tests below)."""
    from graphlint.config import resolve_options
    from graphlint.lint import lint_paths

    opts = resolve_options(targets=[target], select=[x for s in select for x in s.split(",")], ignore=[],
                           shapes=[], config_path=None, repo_root=".")
    run = lint_paths([path], opts)
    assert not run.failures, run.failures
    return [f for r in run.results for f in r.findings]


@pytest.mark.parametrize("target", ["trt", "openvino"])
def test_fused_bert_fixed_from_findings(tmp_path, target):
    src = model("bert_fused")
    out = str(tmp_path / "bert.onnx")
    before = [f for f in _lint(src, "trt") if f.rule_id.startswith(FUSED_RULES)]
    assert before, "the fused BERT has fused-op findings for TensorRT"
    # For TensorRT the passes come from the findings alone (trt-plugin suggestions fall back to
    # un-fusing); OpenVINO runs these ops, so there the user asks for the rewrite by name.
    rep = run_fix(src, out, target=target, select=["GL0", "GL1"],
                  rewrites=["unfuse-contrib"] if target == "openvino" else [])
    assert steps(rep)["unfuse-contrib"] == "applied"
    assert not rep.outcome.refused and not rep.remaining
    assert not any(d == "com.microsoft" for d, _ in ops(out))
    for t in ("trt", "openvino"):
        left = [f.rule_id for f in _lint(out, t) if f.rule_id.startswith(FUSED_RULES)]
        assert left == [], left
    ov.Core().compile_model(out, "CPU")


def test_fix_layernorm_and_gelu_from_drift_findings(tmp_path):
    import torch

    from testmodels.common import torch_export

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(16))
            self.b = torch.nn.Parameter(torch.randn(16))
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            x = self.lin(x)
            d = x - x.mean(-1, keepdim=True)
            y = self.w * (d / torch.sqrt(d.pow(2).mean(-1, keepdim=True) + 1e-5)) + self.b
            return torch.nn.functional.gelu(y, approximate="tanh")

    torch.manual_seed(0)
    src = str(tmp_path / "block13.onnx")
    torch_export(Block(), (torch.randn(2, 5, 16),), src, opset=13, input_names=["x"], output_names=["y"])
    rules = {f.rule_id for f in _lint(src, "trt", "GL2")}
    assert {"GL2007", "GL2008"} <= rules
    out = str(tmp_path / "block.onnx")
    r = run_cli("fix", src, "--target", "trt", "--select", "GL2", "-o", out, "-f", "json")
    assert r.code == 0, r.out + r.err
    doc = r.json()
    st = {p["pass"]: p for p in doc["passes"]}
    assert st["fuse-layernorm"]["status"] == st["fuse-gelu"]["status"] == "applied"
    assert {"LayerNormalization", "Gelu"} <= {o for _, o in ops(out)}
    assert max(doc["max_abs_diff"].values()) < 1e-5
    assert {"GL2007", "GL2008"}.isdisjoint({f.rule_id for f in _lint(out, "trt", "GL2")})
    assert doc["remaining"] == []


def test_resize10_upgrade_keeps_asymmetric_meaning(tmp_path):
    import torch
    import torch.nn.functional as F

    from testmodels.common import torch_export

    class Up(torch.nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)

    src = str(tmp_path / "up10.onnx")
    torch_export(Up(), (torch.randn(1, 2, 4, 4),), src, opset=10, input_names=["x"], output_names=["y"])
    assert any(f.rule_id == "GL2001" for f in _lint(src, "trt", "GL2"))
    out = str(tmp_path / "up.onnx")
    rep = run_fix(src, out, select=["GL2"])
    assert steps(rep) == {"resize-coordinate-mode": "applied"}
    step = rep.outcome.steps[0]
    assert not step.intended_change and step.max_abs_diff["y"] == 0.0  # same meaning, verified equal
    m = onnx.load(out)
    assert next(o.version for o in m.opset_import if o.domain == "") == 11
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(ort_outputs(out, {"x": x})["y"], ort_outputs(src, {"x": x})["y"])
    # A plain upgrade without the fix would have shifted results: what the rule warns about.
    plain = onnx.version_converter.convert_version(onnx.load(src), 11)
    onnx.save(plain, str(tmp_path / "plain.onnx"))
    assert not np.allclose(ort_outputs(str(tmp_path / "plain.onnx"), {"x": x})["y"], ort_outputs(src, {"x": x})["y"])


def _tiny(nodes, inputs, outputs, inits=(), opset=11) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def test_softmax_keep_2d_then_upgrade(tmp_path):
    src = str(tmp_path / "sm.onnx")
    onnx.save(_tiny([helper.make_node("Softmax", ["x"], ["y"], axis=1, name="sm")], [("x", [2, 3, 4])], ["y"]), src)
    out = str(tmp_path / "sm13.onnx")
    rep = run_fix(src, out, rewrites=["softmax-keep-2d-semantics", ("opset-upgrade", {"opset": 13})], select=["GL0"])
    assert steps(rep) == {"softmax-keep-2d-semantics": "applied", "opset-upgrade": "applied"}
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    ref = ort_outputs(src, {"x": x})["y"]
    np.testing.assert_allclose(ort_outputs(out, {"x": x})["y"], ref, rtol=1e-6, atol=1e-7)
    assert np.allclose(ref.reshape(2, -1).sum(axis=1), 1.0)  # opset-11 meaning: over the flattened 3x4


def test_groupnorm18_to_per_channel(tmp_path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(2).astype(np.float32), "s"),
             numpy_helper.from_array(rng.standard_normal(2).astype(np.float32), "b")]
    src = str(tmp_path / "gn.onnx")
    onnx.save(_tiny([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, name="gn")],
                    [("x", [1, 4, 3, 3])], ["y"], inits, opset=18), src)
    out = str(tmp_path / "gn21.onnx")
    rep = run_fix(src, out, rewrites=["groupnorm-per-channel"], select=["GL0"])
    assert steps(rep) == {"groupnorm-per-channel": "applied"}, rep.to_dict()
    m = onnx.load(out)
    assert next(o.version for o in m.opset_import if o.domain == "") == 21
    gn = next(n for n in m.graph.node if n.op_type == "GroupNormalization")
    scale = next(t for t in m.graph.initializer if t.name == gn.input[1])
    assert list(scale.dims) == [4]
    assert rep.outcome.engine == "onnxruntime" and max(rep.outcome.max_abs_diff.values()) < 1e-5


def test_gridsample20_names_for_trt(tmp_path):
    src = str(tmp_path / "gs.onnx")
    onnx.save(_tiny([helper.make_node("GridSample", ["x", "grid"], ["y"], mode="linear", name="gs")],
                    [("x", [1, 2, 4, 4]), ("grid", [1, 3, 3, 2])], ["y"], opset=20), src)
    assert any(f.rule_id == "GL2006" for f in _lint(src, "trt", "GL2"))
    out = str(tmp_path / "gs19.onnx")
    rep = run_fix(src, out, select=["GL2"])
    assert steps(rep) == {"gridsample-mode-names": "applied"}
    m = onnx.load(out)
    assert next(o.version for o in m.opset_import if o.domain == "") == 19
    assert [a.s for a in m.graph.node[0].attribute if a.name == "mode"] == [b"bilinear"]
    assert not any(f.rule_id == "GL2006" for f in _lint(out, "trt", "GL2"))


def test_uint8_boundary_fixed_from_findings(tmp_path):
    import torch

    from testmodels.common import torch_export

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, image):  # NHWC uint8, transposed before the Cast: TensorRT rejects it
            return self.conv(image.permute(0, 3, 1, 2).float() / 255.0)

    src = str(tmp_path / "u8.onnx")
    torch_export(Net(), (torch.zeros(1, 8, 8, 3, dtype=torch.uint8),), src, opset=17, input_names=["image"],
                 output_names=["y"])
    assert any(f.rule_id == "GL4004" for f in _lint(src, "trt", "GL4"))
    out = str(tmp_path / "u8.fixed.onnx")
    held = run_fix(src, out, select=["GL4"])
    assert any("changes results; run with --unsafe-fixes" in why for _, why in held.plan.held_back)
    rep = run_fix(src, out, select=["GL4004"])  # named by id: allowed
    step = rep.outcome.steps[0]
    assert (step.name, step.status, step.intended_change) == ("input-cast-normalize", "applied", False)
    assert max(step.max_abs_diff.values()) == 0.0
    assert not any(f.rule_id == "GL4004" for f in _lint(out, "trt", "GL4"))
    assert onnx.load(out).graph.input[0].type.tensor_type.elem_type == TensorProto.UINT8
    # A finding suppressed in the model (graphlint:ignore) is not fixed.
    m = onnx.load(src)
    onnx.helper.set_model_props(m, {"graphlint:ignore": "GL4004"})
    quiet = str(tmp_path / "u8.quiet.onnx")
    onnx.save(m, quiet)
    rep = run_fix(quiet, str(tmp_path / "q.onnx"), select=["GL4004"])
    assert rep.outcome.steps == [] and not rep.outcome.changed


def test_openvino_npu_ir_fixed_from_findings(tmp_path):
    src = model("ir_nolayout")
    rules = {f.rule_id for f in _lint(src, "openvino@npu", "GL3,GL5")}
    assert {"GL3002", "GL5001"} <= rules
    out = str(tmp_path / "npu.xml")
    r = run_cli("fix", src, "--target", "openvino@npu", "--select", "GL3,GL5", "--shapes", "pixel_values:1x3x16x16",
                "--layout", "logits:NCHW", "-o", out)
    assert r.code == 0, r.out + r.err
    left = {f.rule_id for f in _lint(out, "openvino@npu", "GL3,GL5")}
    assert not {"GL3002", "GL5001"} & left, left
    m = ov.Core().read_model(out)
    assert m.input(0).get_partial_shape().is_static
    assert str(ov.layout_helpers.get_layout(m.input(0))) == "[N,C,H,W]"
