"""Engine runs at reduced precision, for the precision tests and bench/precision_drift.py.

* ONNX Runtime: the model converted with ``onnxruntime.transformers.float16.convert_float_to_float16``
  (``keep_io_types=True``), optionally with a ``node_block_list``, run on the CPU provider.
* OpenVINO CPU: the ONNX file converted to IR, optionally with ``<attribute name="precise"
  version="0"/>`` (``ov::disable_fp16_compression``'s IR spelling) in the named layers' rt_info,
  compiled with ``INFERENCE_PRECISION_HINT`` set to the precision asked for.

``drift(ref, got)`` is the comparison every caller uses: the largest absolute difference over
all outputs (inf when a non-finite value appears where the reference is finite), and whether
each output's argmax over its last axis is unchanged.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import onnx

from graphlint.fix.verify import OPENVINO_F32
from graphlint.fp16 import join_blocked  # noqa: F401  (re-exported for the tests)

PRECISE = '<attribute name="precise" version="0" />'


def run_ort(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    data = model if isinstance(model, str) else model.SerializeToString()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in sess.run(None, feeds)]


def run_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnx.reference on the model: every op computes in its declared dtype (fp16 stays fp16)."""
    import onnx_graphsurgeon as gs
    from onnx.reference import ReferenceEvaluator

    graph = gs.import_onnx(model)
    graph.toposort()  # convert_float_to_float16 appends its input Casts at the end of the node list
    with warnings.catch_warnings():  # fp16 overflow in a Cast is what is being measured
        warnings.simplefilter("ignore", RuntimeWarning)
        return [np.asarray(o) for o in ReferenceEvaluator(gs.export_onnx(graph)).run(None, feeds)]


def ort_fp16(path: str, block: Iterable[str] = ()) -> onnx.ModelProto:
    """The model as ``convert_float_to_float16`` writes it (inputs and outputs stay float32)."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(path)
    return convert_float_to_float16(model, keep_io_types=True, node_block_list=sorted(set(block)) or None)


def ir_text(onnx_path: str, workdir: str) -> tuple[str, str]:
    """(xml text, bin path) of the ONNX file converted to OpenVINO IR (weights kept fp32)."""
    import openvino as ov

    xml = os.path.join(workdir, "model.xml")
    ov.save_model(ov.convert_model(onnx_path), xml, compress_to_fp16=False)
    with open(xml, encoding="utf-8") as f:
        return f.read(), os.path.join(workdir, "model.bin")


def mark_layers(xml: str, names: Iterable[str], attribute: str = PRECISE) -> tuple[str, int]:
    """The IR text with ``attribute`` in each named layer's rt_info; also how many layers got it."""
    wanted = set(names)
    count = 0

    def add(m: re.Match[str]) -> str:
        nonlocal count
        name = m.group(2)
        if name not in wanted:
            return m.group(0)
        count += 1
        body = m.group(3)
        head = body.split("<input>")[0].split("<output>")[0]
        if attribute in head:
            return m.group(0)
        if "<rt_info>" in head:
            return m.group(1) + body.replace("<rt_info>", f"<rt_info>{attribute}", 1)
        return m.group(1) + f"\n\t\t\t<rt_info>{attribute}</rt_info>" + body

    out = re.sub(r'(<layer id="\d+" name="([^"]*)"[^>]*>)(.*?</layer>)', add, xml, flags=re.S)
    return out, count


@contextlib.contextmanager
def _compiled(xml: str, bin_path: str, hint: str) -> Iterator[Any]:
    """The IR text compiled on OpenVINO CPU at ``hint`` (f32 pins OPENVINO_F32), from a scratch .xml."""
    import openvino as ov

    core = ov.Core()
    fd, path = tempfile.mkstemp(suffix=".xml", dir=os.path.dirname(bin_path))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(xml)
    try:
        config = OPENVINO_F32 if hint == "f32" else {"INFERENCE_PRECISION_HINT": hint}
        yield core.compile_model(core.read_model(path, bin_path), "CPU", config)
    finally:
        os.unlink(path)


def run_openvino(xml: str, bin_path: str, feeds: dict[str, np.ndarray], hint: str) -> tuple[list[np.ndarray], str]:
    """Outputs and the inference precision the compiled model reports (the plugin may substitute)."""
    with _compiled(xml, bin_path, hint) as compiled:
        result = compiled(feeds)
        outs = [np.asarray(result[o]) for o in compiled.outputs]
        return outs, precision_name(compiled.get_property("INFERENCE_PRECISION_HINT"))


def openvino_bf16() -> bool:
    """Whether this host's OpenVINO CPU plugin compiles with bf16 when asked (native or not)."""
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([1, 4], np.float32)
    compiled = ov.Core().compile_model(ov.Model([ops.add(x, x)], [x]), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    return precision_name(compiled.get_property("INFERENCE_PRECISION_HINT")) == "bf16"


def precision_name(element_type: Any) -> str:
    """'bf16' / 'f16' / 'f32' for an OpenVINO element type as the compiled model reports it."""
    text = str(element_type)
    return next((short for long, short in (("bfloat16", "bf16"), ("float16", "f16"), ("float32", "f32"))
                 if long in text), text)


def runtime_precisions(xml: str, bin_path: str, hint: str) -> dict[str, tuple[str, str]]:
    """Per executed CPU node: (layer type, runtime precision), from the compiled model's runtime graph."""
    with _compiled(xml, bin_path, hint) as compiled:
        out = {}
        for op in compiled.get_runtime_model().get_ordered_ops():
            rt = op.get_rt_info()
            out[op.get_friendly_name()] = (rt["layerType"].astype(str), rt["runtimePrecision"].astype(str))
        return out


def drift(ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
    """Largest |difference| over all outputs (inf for a new non-finite value) and argmax agreement."""
    worst = 0.0
    same = True
    for r, g in zip(ref, got, strict=True):
        r64, g64 = r.astype(np.float64), g.astype(np.float64)
        bad = np.isfinite(r64) & ~np.isfinite(g64)
        if bad.any():
            worst = float("inf")
        ok = np.isfinite(r64) & np.isfinite(g64)
        if ok.any():
            worst = max(worst, float(np.abs(r64[ok] - g64[ok]).max()))
        if r.ndim >= 1 and r.shape[-1] > 1:
            with np.errstate(invalid="ignore"):
                same = same and bool((np.nan_to_num(r64).argmax(-1) == np.nan_to_num(g64, nan=-np.inf).argmax(-1)).all())
    return {"max_abs": worst, "argmax_same": same}
