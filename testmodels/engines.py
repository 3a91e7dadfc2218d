"""Run one ONNX model on onnxruntime CPU or OpenVINO CPU (f32) and compare with reference outputs.

What "the engine computes something other than the spec" means in the engine-drift table
(rules/data/engine_drift.toml), its generator and its tests: the same inputs through the engine
as a user runs it (onnxruntime with its default graph optimizations; OpenVINO CPU compiled with
INFERENCE_PRECISION_HINT=f32, since this project's hosts may default to bf16), outputs compared
with the reference: floats by ``allclose`` at rtol 1e-3 / atol 1e-4 (float16 and bfloat16 at
graphlint.fix.verify's looser tolerances), NaN where the reference has NaN; integers, bools and
strings exactly; a different shape is its own verdict.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphlint.fix.verify import OPENVINO_F32
from graphlint.runners.compare import tolerance

SPEC_TOL = (1e-3, 1e-4)  # rtol, atol (fp32, as the issue measures)
ENGINES = ("ort", "openvino")


class LoadError(Exception):
    """The engine refuses the model (session creation / read / compile)."""


class RunError(Exception):
    """The engine loads the model but fails at inference."""


def _line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from src/", "Check '"))]
    return " ".join((useful or lines or [type(e).__name__])[0].split())[:300]


def ort_session(model: Any) -> Any:
    """A quiet, single-threaded ONNX Runtime CPU session (``model``: a path or serialized bytes)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def run_ort(model: Any, inputs: list[Any]) -> list[Any]:
    """``model``: a path or serialized bytes. Inputs in graph order (the first len(inputs))."""
    try:
        sess = ort_session(model)
    except Exception as e:
        raise LoadError(_line(e)) from None
    names = [i.name for i in sess.get_inputs()]
    try:
        return list(sess.run(None, dict(zip(names, inputs, strict=False))))
    except Exception as e:
        raise RunError(_line(e)) from None


_core = None


def run_openvino(model: Any, inputs: list[Any], output_names: list[str]) -> list[Any]:
    """``model``: a path or serialized ONNX bytes; CPU at f32, one thread."""
    global _core
    import openvino as ov

    if _core is None:
        _core = ov.Core()
    if any(not isinstance(x, np.ndarray) for x in inputs):
        raise LoadError("inputs that are not tensors (sequence / optional)")
    try:
        ovm = _core.read_model(model) if isinstance(model, str) else _core.read_model(model, b"")
        compiled = _core.compile_model(ovm, "CPU", {**OPENVINO_F32, "INFERENCE_NUM_THREADS": 1})
    except Exception as e:
        raise LoadError(_line(e)) from None
    try:
        feeds = {i: _ov_tensor(x, p.get_element_type()) for i, (x, p) in enumerate(zip(inputs, compiled.inputs, strict=False))}
        req = compiled.create_infer_request()
        res = req.infer(feeds)
    except Exception as e:
        raise RunError(_line(e)) from None
    by_name = {}
    for i, p in enumerate(compiled.outputs):
        arr = _from_ov(np.asarray(res[p]).copy(), p.get_element_type(), tuple(req.get_output_tensor(i).shape))
        for n in p.get_names():
            by_name[n] = arr
        by_name.setdefault(f"#{i}", arr)
    return [by_name.get(n, by_name.get(f"#{i}")) for i, n in enumerate(output_names)]


# OpenVINO element types that numpy has no dtype for: the ml_dtypes type onnx uses, and the
# number of bits (OpenVINO packs 4-bit elements two to a byte, low nibble first; 8- and 16-bit
# ones travel as their raw bytes).
_OV_RAW = {"bf16": ("bfloat16", 16), "f8e4m3": ("float8_e4m3fn", 8), "f8e5m2": ("float8_e5m2", 8),
           "f8e8m0": ("float8_e8m0fnu", 8), "u4": ("uint4", 4), "i4": ("int4", 4), "f4e2m1": ("float4_e2m1fn", 4)}


def _ov_tensor(x: np.ndarray, etype: Any) -> Any:
    import ml_dtypes
    import openvino as ov

    raw = _OV_RAW.get(etype.get_type_name())
    if raw is None:
        return x
    bits = np.asarray(x, getattr(ml_dtypes, raw[0])).reshape(-1)
    t = ov.Tensor(etype, list(x.shape))
    dst = np.asarray(t.data).reshape(-1)
    if raw[1] == 4:
        nib = bits.view(np.uint8) & 0xF
        nib = np.concatenate([nib, np.zeros(nib.size % 2, np.uint8)])
        dst.view(np.uint8)[...] = nib[0::2] | (nib[1::2] << 4)
    else:
        dst.view(np.uint8 if raw[1] == 8 else np.uint16)[...] = bits.view(np.uint8 if raw[1] == 8 else np.uint16)
    return t


def _from_ov(arr: np.ndarray, etype: Any, shape: tuple[int, ...]) -> np.ndarray:
    import ml_dtypes

    raw = _OV_RAW.get(etype.get_type_name())
    if raw is None:
        return arr
    dt = np.dtype(getattr(ml_dtypes, raw[0]))
    if raw[1] == 4:
        b = arr.reshape(-1).view(np.uint8)
        nib = np.stack([b & 0xF, b >> 4], axis=1).reshape(-1)[: int(np.prod(shape))]
        return nib.astype(np.uint8).view(dt).reshape(shape) if dt.itemsize == 1 else nib.reshape(shape)
    return arr.reshape(-1).view(np.uint8 if raw[1] == 8 else np.uint16).view(dt).reshape(shape)


def run(engine: str, model: Any, inputs: list[Any], output_names: list[str] | None = None) -> list[Any]:
    """``model``: a path or an onnx.ModelProto (written to a scratch file: OpenVINO reads
    initializers of a model given as bytes differently from one given as a file)."""
    if not isinstance(model, str):
        import onnx

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "model.onnx")
            onnx.save(model, path)
            return run(engine, path, inputs, output_names or [o.name for o in model.graph.output])
    if engine == "ort":
        return run_ort(model, inputs)
    if output_names is None:
        import onnx

        output_names = [o.name for o in onnx.load(model, load_external_data=False).graph.output]
    return run_openvino(model, inputs, output_names)


@dataclass
class Verdict:
    status: str  # "match" | "values" | "shape" | "dtype"
    max_abs: float | None = None  # largest |engine - reference| over comparable elements
    detail: str = ""

    @property
    def differs(self) -> bool:
        return self.status != "match"


def _as_float(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) if a.dtype.kind in "fiub" or a.dtype.kind == "V" else np.asarray(a, np.float64)


def _one(ref: Any, out: Any) -> Verdict:
    if isinstance(ref, list) or isinstance(out, list):
        if not isinstance(ref, list) or not isinstance(out, list) or len(ref) != len(out):
            return Verdict("shape", None, "sequence length differs")
        worst = Verdict("match", 0.0)
        for r, o in zip(ref, out, strict=True):
            v = _one(r, o)
            if v.differs:
                return v
            worst.max_abs = max(worst.max_abs or 0.0, v.max_abs or 0.0)
        return worst
    if ref is None or out is None:
        return Verdict("match" if ref is None and out is None else "shape", None, "optional presence differs")
    ref, out = np.asarray(ref), np.asarray(out)
    if ref.dtype.kind == "V" and out.dtype.kind == "u" and out.dtype.itemsize == ref.dtype.itemsize:
        out = out.view(ref.dtype)  # engines hand float8 back as its raw bytes
    if ref.shape != out.shape:
        return Verdict("shape", None, f"shape {list(out.shape)}, spec {list(ref.shape)}")
    if ref.dtype.kind in "OUS" or out.dtype.kind in "OUS":
        same = ref.astype(str).tolist() == out.astype(str).tolist()
        return Verdict("match" if same else "values", None, "" if same else "strings differ")
    try:
        a, b = _as_float(ref), _as_float(out)
    except (TypeError, ValueError):
        return Verdict("dtype", None, f"dtype {out.dtype}, spec {ref.dtype}")
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    fin = ~(nan_a | nan_b)
    both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(invalid="ignore"):
        diff = np.where(both_inf, 0.0, np.abs(a - b))
    d = float(np.max(diff[fin])) if fin.any() else 0.0
    if not np.array_equal(nan_a, nan_b):
        return Verdict("values", d if np.isfinite(d) else float("inf"), "NaN where the spec has none, or the reverse")
    if ref.dtype.kind in "fcV" or out.dtype.kind in "fcV":
        rtol, atol = (max(x, y) for x, y in zip(tolerance(ref, out), SPEC_TOL, strict=True))
        ok = bool(np.all(both_inf[fin] | np.isclose(a[fin], b[fin], rtol=rtol, atol=atol)))
    else:
        ok = bool(np.array_equal(a, b))
    return Verdict("match" if ok else "values", d)


def compare(refs: list[Any], outs: list[Any]) -> Verdict:
    """The first differing output's verdict, else a match with the largest difference seen."""
    if len(outs) < len(refs):
        return Verdict("shape", None, f"{len(outs)} outputs, spec {len(refs)}")
    best = Verdict("match", 0.0)
    for i, (r, o) in enumerate(zip(refs, outs, strict=False)):
        v = _one(r, o)
        if v.differs:
            v.detail = f"output {i}: {v.detail}".rstrip(": ")
            return v
        best.max_abs = max(best.max_abs or 0.0, v.max_abs or 0.0)
    return best
