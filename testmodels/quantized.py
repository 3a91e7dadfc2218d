"""Quantized test models, made with onnxruntime.quantization from the float exports in quant_export.

Every variant is one call of ONNX Runtime's own tools, with the options a user would pass;
``VARIANTS`` names each file, the float model it starts from, and the call. The schemes:

* static QDQ: int8 symmetric activations and weights (what TensorRT takes), per-tensor and
  per-channel; asymmetric uint8 and int8 activations (ORT's defaults); 16-bit activations
  (``UseQDQContribOps``), with and without ``QDQKeepRemovableActivations``; BERT quantized
  without ``quant_pre_process`` (constants stay ``Constant`` nodes and are quantized at run
  time); per-channel MatMul weights along the input (K) axis;
* QOperator: ``QLinearConv``/``QLinearMatMul`` and the com.microsoft ``QLinearAdd``/``QGemm``/...;
* dynamic: ``DynamicQuantizeLinear`` + ``MatMulInteger``/``ConvInteger``; on the transformer-fused
  BERT, com.microsoft ``QAttention``/``QEmbedLayerNormalization``;
* weight-only int4: com.microsoft ``MatMulNBits`` and blocked ``DequantizeLinear`` (opset 21),
  symmetric and asymmetric (``MatMulNBitsQuantizer``);
* fp16 scales: a QDQ model through ``onnxruntime.transformers.float16`` at opset 17 (invalid:
  DequantizeLinear-13 takes float scales only) and after upgrading to opset 19.

``python -m testmodels.quantized`` builds them all (cached under testmodels/out/).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import onnx

from graphlint.fix.graphutil import topo_sort
from testmodels.common import cached
from testmodels.quant_export import exports, feeds, preprocessed


@dataclass(frozen=True)
class Variant:
    base: str  # float model (quant_export.NAMES)
    how: str  # "static", "dynamic", "nbits", "fp16"
    options: dict[str, Any] = field(default_factory=dict)
    preprocess: bool = True  # start from quant_pre_process's output (where it succeeded)
    note: str = ""


S8_SYM = {"activation_type": "QInt8", "weight_type": "QInt8",
          "extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True}}
U8_ASYM = {"activation_type": "QUInt8", "weight_type": "QInt8"}
S8_ASYM = {"activation_type": "QInt8", "weight_type": "QInt8", "extra_options": {"ActivationSymmetric": False}}
U16 = {"activation_type": "QUInt16", "weight_type": "QInt8", "extra_options": {"UseQDQContribOps": True}}

VARIANTS: dict[str, Variant] = {}
for _m in ("bert", "vit", "resnet", "resnet_dynamo", "whisper_enc"):
    VARIANTS[f"{_m}_qdq_s8_sym"] = Variant(_m, "static", {"quant_format": "QDQ", **S8_SYM})
    VARIANTS[f"{_m}_qdq_u8_asym"] = Variant(_m, "static", {"quant_format": "QDQ", **U8_ASYM})
    VARIANTS[f"{_m}_dyn"] = Variant(_m, "dynamic", {"weight_type": "QInt8"})
for _m in ("vit", "resnet", "resnet_dynamo", "whisper_enc"):
    VARIANTS[f"{_m}_qop_u8"] = Variant(_m, "static", {"quant_format": "QOperator", **U8_ASYM})
for _m in ("vit", "resnet", "whisper_enc"):
    VARIANTS[f"{_m}_qdq_s8_asym"] = Variant(_m, "static", {"quant_format": "QDQ", **S8_ASYM})
    VARIANTS[f"{_m}_qdq_s8_sym_pc"] = Variant(_m, "static", {"quant_format": "QDQ", "per_channel": True, **S8_SYM})
for _m in ("bert", "whisper_enc"):
    for _sym in (True, False):
        tag = "sym" if _sym else "asym"
        VARIANTS[f"{_m}_nbits_{tag}"] = Variant(_m, "nbits", {"bits": 4, "block_size": 32, "is_symmetric": _sym,
                                                               "quant_format": "QOperator"})
        VARIANTS[f"{_m}_int4qdq_{tag}"] = Variant(_m, "nbits", {"bits": 4, "block_size": 32, "is_symmetric": _sym,
                                                                "quant_format": "QDQ"})
VARIANTS.update({
    "resnet_qdq_u16": Variant("resnet", "static", {"quant_format": "QDQ", **U16},
                              note="ORT drops the Relu after each Conv: the Q's range clamps at 0 instead"),
    "resnet_qdq_u16_keep": Variant("resnet", "static", {"quant_format": "QDQ", **U16, "extra_options": {
        **U16["extra_options"], "QDQKeepRemovableActivations": True}}),
    "vit_qdq_u16": Variant("vit", "static", {"quant_format": "QDQ", **U16}),
    "vit_qdq_noprep": Variant("vit", "static", {"quant_format": "QDQ", **S8_SYM}, preprocess=False,
                              note="no quant_pre_process: the attention scale stays a Constant and gets a Q at run time"),
    "vit_qdq_pc_k": Variant("vit", "static", {"quant_format": "QDQ", "per_channel": True, **S8_SYM,
                                              "op_types_to_quantize": ["MatMul"],
                                              "extra_options": {**S8_SYM["extra_options"],
                                                                "QDQOpTypePerChannelSupportToAxis": {"MatMul": 0}}},
                            preprocess=False, note="MatMul weight scales along K (the summed axis)"),
    "vit_qdq_pc_n": Variant("vit", "static", {"quant_format": "QDQ", "per_channel": True, **S8_SYM,
                                              "op_types_to_quantize": ["MatMul"]},
                            preprocess=False, note="the same with ORT's default axis (N, the output channels)"),
    "resnet_qdq_s8_sym_qbias0": Variant("resnet", "static", {"quant_format": "QDQ", **S8_SYM, "extra_options": {
        **S8_SYM["extra_options"], "QuantizeBias": False}}),
    "bert_fused_dyn": Variant("bert", "dynamic", {"weight_type": "QInt8", "fuse": True,
                                                  "extra_options": {"DefaultTensorType": onnx.TensorProto.FLOAT}}),
    "resnet_fp16scale_op17": Variant("resnet", "fp16", {"source": "resnet_qdq_s8_sym", "opset": None}),
    "resnet_fp16scale_op19": Variant("resnet", "fp16", {"source": "resnet_qdq_s8_sym", "opset": 19}),
})


class _Reader:
    """A CalibrationDataReader over four fixed batches (seeds 1-4)."""

    def __init__(self, base: str) -> None:
        self._it = iter([feeds(base, seed) for seed in range(1, 5)])

    def get_next(self) -> dict | None:
        return next(self._it, None)


def _enums(options: dict[str, Any]) -> dict[str, Any]:
    from onnxruntime.quantization import QuantFormat, QuantType

    out = dict(options)
    for key, enum in (("activation_type", QuantType), ("weight_type", QuantType), ("quant_format", QuantFormat)):
        if isinstance(out.get(key), str):
            out[key] = enum[out[key]]
    return out


def _quantize_static(src: str, dst: str, v: Variant) -> None:
    from onnxruntime.quantization import quantize_static

    quantize_static(src, dst, _Reader(v.base), **_enums(v.options))


def _quantize_dynamic(src: str, dst: str, v: Variant) -> None:
    from onnxruntime.quantization import quantize_dynamic

    opts = _enums(v.options)
    if opts.pop("fuse", False):  # ORT's transformer fusions first: Attention, EmbedLayerNormalization, ...
        from onnxruntime.transformers.optimizer import optimize_model

        fused = dst + ".fused.onnx"
        optimize_model(src, model_type="bert", num_heads=4, hidden_size=32, opt_level=1).save_model_to_file(fused)
        src = fused
    quantize_dynamic(src, dst, **opts)


def _quantize_nbits(src: str, dst: str, v: Variant) -> None:
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    opts = dict(v.options)
    opts["quant_format"] = QuantFormat[opts["quant_format"]]
    q = MatMulNBitsQuantizer(onnx.load(src), **opts)
    q.process()
    q.model.save_model_to_file(dst)


def _fp16_scales(folder: str, dst: str, v: Variant) -> None:
    from onnx import version_converter
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(os.path.join(folder, v.options["source"] + ".onnx"))
    if v.options["opset"]:
        model = version_converter.convert_version(model, v.options["opset"])
    model = convert_float_to_float16(model, keep_io_types=True)
    topo_sort(model.graph)  # the converter appends its input Casts last (what graphlint fix's topological-sort does)
    onnx.save(model, dst)


_BUILDERS: dict[str, Callable[[str, str, Variant], None]] = {
    "static": _quantize_static, "dynamic": _quantize_dynamic, "nbits": _quantize_nbits,
}


def build(folder: str, float_folder: str | None = None) -> None:
    """Build into ``folder``; runs there because ORT's quantization tools write temporary
    ``<uuid>.data`` files into the working directory."""
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        _build(folder, float_folder)
    finally:
        os.chdir(cwd)


def _build(folder: str, float_folder: str | None = None) -> None:
    src_folder = float_folder or exports()
    logging.getLogger().setLevel(logging.ERROR)  # the quantizers log per node at INFO/WARNING
    for name, v in VARIANTS.items():
        dst = os.path.join(folder, f"{name}.onnx")
        if v.how == "fp16":
            continue
        src = preprocessed(src_folder, v.base) if v.preprocess else os.path.join(src_folder, f"{v.base}.onnx")
        _BUILDERS[v.how](src, dst, v)
    for name, v in VARIANTS.items():  # after their sources
        if v.how == "fp16":
            _fp16_scales(folder, os.path.join(folder, f"{name}.onnx"), v)
    for extra in os.listdir(folder):  # intermediate files of the fused path
        if extra.endswith(".fused.onnx"):
            os.remove(os.path.join(folder, extra))


def models() -> str:
    """The cached folder of quantized variants (rebuilt when the float exports change)."""
    float_folder = exports()
    key = os.path.basename(float_folder).rsplit("-", 1)[-1]
    return cached(f"quantized-{key}", lambda d: build(d, float_folder))


def path(name: str) -> str:
    return os.path.join(models(), f"{name}.onnx")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        os.makedirs(sys.argv[1], exist_ok=True)
        build(sys.argv[1])
        print(sys.argv[1])
    else:
        print(models())
