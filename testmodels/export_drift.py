"""Models for the drift rules (GL2xx): real torch exports plus the smallest hand-built graphs.

Real exports (``build(folder)``, cached by ``exports()``): small modules exported with the
legacy exporter at opsets 11, 13 and 17 and the dynamo exporter at opset 18 -- bilinear
interpolate with align_corners True and False, nearest upsample, grid_sample, GroupNorm,
LayerNorm, tanh-approximate GELU, softmax on a middle axis -- plus a few extra exports where
the drift lives (legacy opset 10 interpolate, dynamo opset-20 grid_sample) and a plain
opset-17 conv net that must be drift-free. ``EXPORTS`` names every file and its module.

Hand-built graphs (``tiny``) and engine runners (``run_ort``, ``run_reference``,
``run_openvino``) are what the drift tests use to show each claim with a real engine.

    python -m testmodels.export_drift OUT_DIR
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import warnings
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graphlint.fix.verify import OPENVINO_F32
from testmodels.common import cached, torch_export

# name -> (module factory key, legacy opsets, dynamo opsets)
CASES: dict[str, tuple[list[int], list[int]]] = {
    "interp_bilinear_ac1": ([11, 13, 17], [18]),
    "interp_bilinear_ac0": ([10, 11, 13, 17], [18]),
    "upsample_nearest": ([10, 11, 13, 17], [18]),
    "grid_sample": ([17], [18, 20]),  # GridSample needs opset 16: legacy refuses 11 and 13
    "group_norm": ([11, 13, 17], [18]),
    "layer_norm": ([11, 13, 17], [18]),
    "gelu_tanh": ([11, 13, 17], [18]),
    "softmax_mid": ([11, 13, 17], [18]),
    "conv_net": ([17], []),
}


def _modules() -> dict[str, tuple[Any, tuple]]:
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Interp(nn.Module):
        def __init__(self, mode: str, align_corners: bool | None) -> None:
            super().__init__()
            self.mode, self.align_corners = mode, align_corners

        def forward(self, x):
            return F.interpolate(x, scale_factor=2, mode=self.mode, align_corners=self.align_corners)

    class Grid(nn.Module):
        def forward(self, x, grid):
            return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)

    class Gelu(nn.Module):
        def forward(self, x):
            return F.gelu(x, approximate="tanh")

    class SoftmaxMid(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=1)

    class ConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
            self.head = nn.Linear(8, 4)

        def forward(self, x):
            return self.head(self.body(x).mean(dim=(2, 3)))

    torch.manual_seed(0)
    img = torch.randn(1, 4, 6, 6)
    seq = torch.randn(2, 5, 8)
    return {
        "interp_bilinear_ac1": (Interp("bilinear", True), (img,)),
        "interp_bilinear_ac0": (Interp("bilinear", False), (img,)),
        "upsample_nearest": (Interp("nearest", None), (img,)),
        "grid_sample": (Grid(), (img, torch.rand(1, 5, 5, 2) * 2 - 1)),
        "group_norm": (nn.GroupNorm(2, 4), (img,)),
        "layer_norm": (nn.LayerNorm(8), (seq,)),
        "gelu_tanh": (Gelu(), (seq,)),
        "softmax_mid": (SoftmaxMid(), (torch.randn(2, 5, 3, 4),)),
        "conv_net": (ConvNet(), (torch.randn(1, 3, 16, 16),)),
    }


def file_name(case: str, opset: int, dynamo: bool) -> str:
    return f"{case}_{'dynamo' if dynamo else 'legacy'}{opset}.onnx"


EXPORTS: list[tuple[str, int, bool]] = [
    (case, op, dyn) for case, (legacy, dynamo) in CASES.items()
    for dyn, ops in ((False, legacy), (True, dynamo)) for op in ops
]


def build(folder: str) -> None:
    """Export every case; the torch reference outputs go to reference.npz for the tests."""
    import torch

    mods = _modules()
    refs: dict[str, np.ndarray] = {}
    inputs: dict[str, list[np.ndarray]] = {}
    for case, op, dyn in EXPORTS:
        module, args = mods[case]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch_export(module, args, os.path.join(folder, file_name(case, op, dyn)), opset=op, dynamo=dyn)
        if case not in refs:
            with torch.no_grad():
                refs[case] = module.eval()(*args).numpy()
            inputs[case] = [a.numpy() for a in args]
    np.savez(os.path.join(folder, "reference.npz"), **{f"{k}__out": v for k, v in refs.items()},
             **{f"{k}__in{i}": a for k, arrs in inputs.items() for i, a in enumerate(arrs)})
    with open(os.path.join(folder, "exports.json"), "w") as f:
        json.dump([file_name(*e) for e in EXPORTS], f)


def exports() -> str:
    """The cached export folder."""
    return cached("drift", build)


def torch_io(folder: str, case: str) -> tuple[list[np.ndarray], np.ndarray]:
    data = np.load(os.path.join(folder, "reference.npz"))
    ins = [data[k] for k in sorted(k for k in data.files if k.startswith(f"{case}__in"))]
    return ins, data[f"{case}__out"]


# --- the smallest graphs ---------------------------------------------------------------------
_DT = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("float16"): TensorProto.FLOAT16,
       np.dtype("int64"): TensorProto.INT64, np.dtype("bool"): TensorProto.BOOL}


def tiny(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[Any, list | None]],
         outputs: dict[str, tuple[Any, list | None]], opset: int,
         consts: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """A one-or-few-node model: inputs/outputs as name -> (numpy dtype, shape), consts as initializers."""
    def vi(name: str, spec: tuple[Any, list | None]) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, _DT[np.dtype(spec[0])], spec[1])

    graph = helper.make_graph(nodes, "drift", [vi(k, v) for k, v in inputs.items()],
                              [vi(k, v) for k, v in outputs.items()],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in (consts or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="graphlint-tests")
    model.ir_version = 8
    return model


def save(model: onnx.ModelProto, folder: str, name: str) -> str:
    path = os.path.join(folder, name)
    onnx.save(model, path)
    return path


class EngineError(Exception):
    """An engine refused the model (load, conversion or run)."""


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray], optimize: bool = True) -> np.ndarray:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)[0]
    except Exception as e:
        raise EngineError(f"onnxruntime: {e}") from None


def run_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator

    try:
        return ReferenceEvaluator(model).run(None, feeds)[0]
    except Exception as e:
        raise EngineError(f"onnx.reference: {e}") from None


@functools.cache
def _ov_core():
    import openvino as ov

    return ov.Core()


def run_openvino(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """Convert and run on the OpenVINO CPU plugin (in this process: only for models known not to crash it)."""
    with tempfile.TemporaryDirectory() as d:
        path = save(model, d, "m.onnx")
        try:
            core = _ov_core()
            compiled = core.compile_model(core.read_model(path), "CPU", OPENVINO_F32)
            return compiled([feeds[i.get_any_name()] for i in compiled.inputs])[0]
        except Exception as e:
            raise EngineError(f"openvino: {e}") from None


def openvino_subprocess(model: onnx.ModelProto) -> int:
    """Convert a model with OpenVINO in a child process; returns its exit code (negative: killed by a signal)."""
    with tempfile.TemporaryDirectory() as d:
        path = save(model, d, "m.onnx")
        code = "import openvino as ov, sys; ov.Core().compile_model(ov.convert_model(sys.argv[1]), 'CPU')"
        return subprocess.run([sys.executable, "-c", code, path], capture_output=True, timeout=120).returncode


def lint(path: str, target: str, select: str = "GL2") -> list:
    """Findings of the selected rules for one model file and one target (the library API the CLI uses)."""
    from graphlint.lint import LintOptions, lint_paths

    run = lint_paths([path], LintOptions(targets=[target], select=[select]))
    if run.failures:
        raise AssertionError(f"lint failed to load {path}: {run.failures}")
    return list(run.findings())


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out", "drift")
    os.makedirs(out, exist_ok=True)
    build(out)
    print(f"wrote {len(EXPORTS)} models to {out}")
