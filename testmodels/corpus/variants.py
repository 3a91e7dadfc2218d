"""What users do to an export before shipping it: fuse, fp16, quantize, upgrade the opset.

Every variant starts from a file of the exports folder (exports.py) and runs the real tool:

* ``onnxruntime.transformers.optimizer.optimize_model`` (model types bert, gpt2, vit, clip, bart,
  t5, swin; default opt_level, and opt_level 2) and an onnxruntime session's saved optimized
  graph (``optimized_model_filepath``, levels extended and all: com.microsoft / nchwc ops);
* float16: ``onnxruntime.transformers.float16.convert_float_to_float16(keep_io_types=True)``,
  the fused-model method ``OnnxModel.convert_float_to_float16``, and onnxconverter-common's
  converter (keep_io_types True and False);
* ``onnxruntime.quantization``: quantize_static (QDQ and QOperator, per-tensor and per-channel,
  int8 and uint8 activations, 4 calibration batches of random inputs) and quantize_dynamic;
* ``onnx.version_converter.convert_version`` upgrades; ``onnxscript.optimizer.optimize``; and a
  model written in onnxscript (onnxscript_model.py, with a model-local function).

    python -m testmodels.corpus.variants EXPORTS_DIR OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Callable

import onnx

HEADS, HIDDEN = 4, 32  # exports.py's configs


def _fuse(model_type: str, opt_level: int | None = None) -> Callable[[str, str], None]:
    def run(src: str, dst: str) -> None:
        from onnxruntime.transformers.optimizer import optimize_model

        m = optimize_model(src, model_type=model_type, num_heads=HEADS, hidden_size=HIDDEN, opt_level=opt_level)
        m.save_model_to_file(dst)
    return run


def _ort_saved(level: str) -> Callable[[str, str], None]:
    """An onnxruntime session's own optimized graph, saved as users do to skip optimization at load."""
    def run(src: str, dst: str) -> None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        so.optimized_model_filepath = dst
        so.log_severity_level = 3
        ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    return run


def _fp16_ort(keep_io_types: bool = True) -> Callable[[str, str], None]:
    def run(src: str, dst: str) -> None:
        from onnxruntime.transformers.float16 import convert_float_to_float16

        onnx.save(convert_float_to_float16(onnx.load(src), keep_io_types=keep_io_types), dst)
    return run


def _fp16_fused(src: str, dst: str) -> None:
    """The GPU recipe: fuse, then the optimizer model's own fp16 conversion."""
    from onnxruntime.transformers.optimizer import optimize_model

    m = optimize_model(src, model_type="bert", num_heads=HEADS, hidden_size=HIDDEN)
    m.convert_float_to_float16(keep_io_types=True)
    m.save_model_to_file(dst)


def _fp16_occ(keep_io_types: bool) -> Callable[[str, str], None]:
    def run(src: str, dst: str) -> None:
        from onnxconverter_common import float16

        onnx.save(float16.convert_float_to_float16(onnx.load(src), keep_io_types=keep_io_types), dst)
    return run


class _Reader:
    """Calibration batches: random inputs at the declared shapes (batch 1), as engines.py feeds them."""

    def __init__(self, path: str, n: int = 4) -> None:
        from graphlint.fix.verify import _index_bounds, _onnx_inputs, make_feeds
        from testmodels.corpus.engines import shapes

        model = onnx.load(path)
        specs, bounds = _onnx_inputs(model), _index_bounds(model)
        self.batches = iter([make_feeds(specs, shapes(specs, None, False), bounds, seed=i) for i in range(n)])

    def get_next(self):
        return next(self.batches, None)


def _quant_static(fmt: str, per_channel: bool = False, activation: str = "QInt8",
                  symbolic: bool = True) -> Callable[[str, str], None]:
    def run(src: str, dst: str) -> None:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
        from onnxruntime.quantization.shape_inference import quant_pre_process

        pre = dst + ".pre.onnx"
        quant_pre_process(src, pre, skip_symbolic_shape=not symbolic)
        try:
            quantize_static(pre, dst, _Reader(pre), quant_format=getattr(QuantFormat, fmt), per_channel=per_channel,
                            activation_type=getattr(QuantType, activation), weight_type=QuantType.QInt8)
        finally:
            os.remove(pre)
    return run


def _quant_dynamic(per_channel: bool = False) -> Callable[[str, str], None]:
    def run(src: str, dst: str) -> None:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # DefaultTensorType: what ORT's error message asks for when a fused (com.microsoft) node's
        # output type is unknown to onnx shape inference
        quantize_dynamic(src, dst, per_channel=per_channel, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return run


def _fused_then(second: Callable[[str, str], None], model_type: str = "bert") -> Callable[[str, str], None]:
    def run(src: str, dst: str) -> None:
        mid = dst + ".fused.onnx"
        _fuse(model_type)(src, mid)
        try:
            second(mid, dst)
        finally:
            os.remove(mid)
    return run


def _upgrade(opset: int) -> Callable[[str, str], None]:
    def run(src: str, dst: str) -> None:
        from onnx import version_converter

        onnx.save(version_converter.convert_version(onnx.load(src), opset), dst)
    return run


def _onnxscript_optimize(src: str, dst: str) -> None:
    import onnxscript.optimizer

    onnx.save(onnxscript.optimizer.optimize(onnx.load(src)), dst)


# (variant id, source export id, builder(src, dst))
VARIANTS: list[tuple[str, str, Callable[[str, str], None]]] = [
    ("bert_legacy_op13_fused_ort", "bert_legacy_op13", _fuse("bert")),
    ("bert_legacy_op11_fused_ort", "bert_legacy_op11", _fuse("bert")),
    ("bert_legacy_op14_fused_ort_o2", "bert_legacy_op14", _fuse("bert", 2)),
    ("gpt2_legacy_op13_fused_ort", "gpt2_legacy_op13", _fuse("gpt2")),
    ("vit_legacy_op17_fused_ort", "vit_legacy_op17", _fuse("vit")),
    ("cliptext_legacy_op14_fused_ort", "cliptext_legacy_op14", _fuse("clip")),
    ("bartenc_legacy_op13_fused_ort", "bartenc_legacy_op13", _fuse("bart")),
    ("t5enc_legacy_op17_fused_ort", "t5enc_legacy_op17", _fuse("t5")),
    ("swin_legacy_op15_fused_ort", "swin_legacy_op15", _fuse("swin")),
    ("bert_legacy_op14_ortsaved_extended", "bert_legacy_op14", _ort_saved("ORT_ENABLE_EXTENDED")),
    ("resnet_legacy_op16_ortsaved_all", "resnet_legacy_op16", _ort_saved("ORT_ENABLE_ALL")),
    ("bert_legacy_op14_fp16", "bert_legacy_op14", _fp16_ort()),
    ("vit_legacy_op17_fp16", "vit_legacy_op17", _fp16_ort()),
    ("resnet_legacy_op16_fp16", "resnet_legacy_op16", _fp16_ort()),
    ("llama_legacy_op17_fp16", "llama_legacy_op17", _fp16_ort()),
    ("whisperenc_legacy_op17_fp16", "whisperenc_legacy_op17", _fp16_ort()),
    ("bert_legacy_op13_fused_ort_fp16", "bert_legacy_op13", _fp16_fused),
    ("convnext_dynamo_op18_fp16_occ", "convnext_dynamo_op18", _fp16_occ(True)),
    ("qwen2_dynamo_op18_fp16_occ", "qwen2_dynamo_op18", _fp16_occ(True)),
    ("swin_legacy_op15_fp16_occ_fp16io", "swin_legacy_op15", _fp16_occ(False)),
    ("bert_dynamo_op18_fp16_occ", "bert_dynamo_op18", _fp16_occ(True)),
    ("llama_dynamo_op18_fp16_occ", "llama_dynamo_op18", _fp16_occ(True)),
    ("detr_legacy_op17_fp16_occ", "detr_legacy_op17", _fp16_occ(True)),
    ("t5enc_legacy_op17_fp16_occ", "t5enc_legacy_op17", _fp16_occ(True)),
    ("wav2vec2_legacy_op17_fp16_occ", "wav2vec2_legacy_op17", _fp16_occ(True)),
    ("resnet_legacy_op16_qdq", "resnet_legacy_op16", _quant_static("QDQ")),
    ("resnet_legacy_op16_qdq_perchannel", "resnet_legacy_op16", _quant_static("QDQ", per_channel=True)),
    ("resnet_legacy_op16_qdq_u8", "resnet_legacy_op16", _quant_static("QDQ", activation="QUInt8")),
    ("convnext_legacy_op17_qdq_perchannel", "convnext_legacy_op17", _quant_static("QDQ", per_channel=True)),
    ("bert_legacy_op14_qdq", "bert_legacy_op14", _quant_static("QDQ", symbolic=False)),
    ("resnet_legacy_op16_qoperator", "resnet_legacy_op16", _quant_static("QOperator", activation="QUInt8")),
    ("vit_legacy_op17_qoperator", "vit_legacy_op17", _quant_static("QOperator", activation="QUInt8")),
    ("bert_legacy_op14_dynquant", "bert_legacy_op14", _quant_dynamic()),
    ("llama_legacy_op17_dynquant", "llama_legacy_op17", _quant_dynamic()),
    ("whisperenc_legacy_op17_dynquant_perchannel", "whisperenc_legacy_op17", _quant_dynamic(per_channel=True)),
    ("bert_legacy_op13_fused_ort_dynquant", "bert_legacy_op13", _fused_then(_quant_dynamic())),
    ("bert_legacy_op11_upgraded_op17", "bert_legacy_op11", _upgrade(17)),
    ("convnext_legacy_op13_upgraded_op17", "convnext_legacy_op13", _upgrade(17)),
    ("gpt2_legacy_op13_upgraded_op18", "gpt2_legacy_op13", _upgrade(18)),
    ("resnet_legacy_op11_upgraded_op21", "resnet_legacy_op11", _upgrade(21)),
    ("resnet_legacy_op16_upgraded_op25", "resnet_legacy_op16", _upgrade(25)),
    ("llama_legacy_op17_onnxscript_optimized", "llama_legacy_op17", _onnxscript_optimize),
]


def build(folder: str, exports: str) -> None:
    """Every row of VARIANTS; a tool that fails is recorded in variants.json, not fatal."""
    report: dict[str, dict] = {}
    folder, exports = os.path.abspath(folder), os.path.abspath(exports)
    cwd = os.getcwd()
    os.chdir(folder)  # the tools' scratch files (external-data temporaries) land here, not in the checkout
    try:
        _build(folder, exports, report)
    finally:
        os.chdir(cwd)
    with open(os.path.join(folder, "variants.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)


def _build(folder: str, exports: str, report: dict[str, dict]) -> None:
    rows = [(vid, src, fn) for vid, src, fn in VARIANTS] + [("onnxscript_gated_mlp", "", None)]
    for vid, src, fn in rows:
        t0 = time.time()
        dst = os.path.join(folder, f"{vid}.onnx")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if fn is None:
                    from testmodels.corpus import onnxscript_model

                    onnxscript_model.save(dst)
                else:
                    fn(os.path.join(exports, f"{src}.onnx"), dst)
            report[vid] = {"from": src, "seconds": round(time.time() - t0, 1)}
        except Exception as e:
            report[vid] = {"from": src, "error": " ".join(str(e).split())[:300]}
            for f in os.listdir(folder):
                if f.startswith(vid + ".onnx"):
                    os.remove(os.path.join(folder, f))
        print(vid, report[vid], flush=True)


def variants(exports_dir: str) -> str:
    """The cached variants folder built from this exports folder (its name carries its key)."""
    from testmodels.common import cached

    return cached(f"corpus-variants-{os.path.basename(exports_dir).rsplit('-', 1)[-1]}",
                  lambda folder: build(folder, exports_dir))


if __name__ == "__main__":
    os.makedirs(sys.argv[2], exist_ok=True)
    build(sys.argv[2], sys.argv[1])
