"""Run quantized models on ONNX Runtime and OpenVINO and say what each engine did.

``run_ort`` and ``run_openvino`` return an :class:`Outcome`: accepted or not (and at which stage,
with the engine's first error line), the output's error relative to the float model, and for
OpenVINO how many FakeQuantize ops its ONNX frontend made and which layers the CPU plugin runs
in int8/uint8 (``runtimePrecision`` of the compiled model). OpenVINO compiles with
``INFERENCE_PRECISION_HINT=f32`` (graphlint.fix.verify.OPENVINO_F32): hosts with AVX512_BF16
otherwise run bf16 and the numbers would measure that instead.

``python -m testmodels.quant_engines`` prints the table docs/quantization.md quotes.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

import numpy as np

from graphlint.fix.verify import OPENVINO_F32
from testmodels.quant_export import base_of, exports, feeds

EVAL_SEED = 7  # inputs the comparisons use, none of the calibration batches


@dataclass
class Outcome:
    engine: str
    ok: bool
    stage: str = ""  # where it failed: "load", "compile" or "run"
    error: str = ""  # the engine's message, one line
    rel_err: float | None = None  # max |out - float| / max |float|
    fake_quantize: int = 0  # OpenVINO: FakeQuantize ops after conversion
    int8_layers: list[str] = field(default_factory=list)  # OpenVINO: layer types run in i8/u8

    def __str__(self) -> str:
        if not self.ok:
            return f"{self.engine}: rejects at {self.stage}: {self.error}"
        extra = f", FakeQuantize={self.fake_quantize}, int8 layers={self.int8_layers}" if self.engine == "openvino" else ""
        return f"{self.engine}: runs, rel. error {self.rel_err:.3g}{extra}"


def _line(e: Exception) -> str:
    """The message's informative line (OpenVINO puts it last, ORT first)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in lines:
        if any(k in ln for k in ("failed", "FAIL", "Error", "error", "No conversion rule", "CALLBACK", "Check")):
            last = ln
    return (locals().get("last") or (lines[-1] if lines else type(e).__name__))[:300]


def _rel(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(out.astype(np.float64) - ref).max() / (np.abs(ref).max() or 1.0))


@functools.cache
def reference(base: str) -> np.ndarray:
    """The float model's output on the evaluation inputs (ONNX Runtime CPU)."""
    out = run_ort(os.path.join(exports(), f"{base}.onnx"), raw=True)
    assert isinstance(out, np.ndarray), out
    return out


def run_ort(path: str, raw: bool = False, optimize: bool = True) -> Outcome | np.ndarray:
    import onnxruntime as ort

    base = base_of(os.path.basename(path)[:-5])
    so = ort.SessionOptions()
    so.log_severity_level = 4
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    except Exception as e:
        return Outcome("ort", False, "load", _line(e))
    try:
        out = sess.run(None, feeds(base, EVAL_SEED))[0]
    except Exception as e:
        return Outcome("ort", False, "run", _line(e))
    return out if raw else Outcome("ort", True, rel_err=_rel(out, reference(base)))


@functools.cache
def _core():
    import openvino as ov

    return ov.Core()


def run_openvino(path: str, config: dict | None = None) -> Outcome:
    base = base_of(os.path.basename(path)[:-5])
    core = _core()
    try:
        model = core.read_model(path)
    except Exception as e:
        return Outcome("openvino", False, "load", _line(e))
    fq = sum(op.get_type_name() == "FakeQuantize" for op in model.get_ops())
    try:
        compiled = core.compile_model(model, "CPU", OPENVINO_F32 if config is None else config)
    except Exception as e:
        return Outcome("openvino", False, "compile", _line(e), fake_quantize=fq)
    inputs = feeds(base, EVAL_SEED)
    try:
        out = compiled({port: inputs[next(n for n in port.get_names() if n in inputs)] for port in compiled.inputs})
    except Exception as e:
        return Outcome("openvino", False, "run", _line(e), fake_quantize=fq)
    int8 = sorted({op.get_rt_info()["layerType"].astype(str) for op in compiled.get_runtime_model().get_ops()
                   if op.get_rt_info()["runtimePrecision"].astype(str) in ("i8", "u8")})
    return Outcome("openvino", True, rel_err=_rel(out[compiled.outputs[0]], reference(base)), fake_quantize=fq,
                   int8_layers=int8)


def survey(folder: str) -> dict[str, tuple[Outcome, Outcome]]:
    """Every model of a folder on both engines."""
    names = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".onnx") and ".pre." not in f)
    return {n: (run_ort(os.path.join(folder, n + ".onnx")), run_openvino(os.path.join(folder, n + ".onnx")))
            for n in names}


if __name__ == "__main__":
    from testmodels.quantized import models

    for name, (o, v) in survey(models()).items():
        print(f"| {name} | {o} | {v} |")
