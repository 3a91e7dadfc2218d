"""OpenVINO IR of every corpus ONNX model that OpenVINO converts.

``ov.convert_model`` + ``ov.save_model``: ``<id>.xml`` with ``compress_to_fp16=False``
(testmodels.common.to_openvino), and for the models in ``FP16_IR`` also ``<id>_irfp16.xml`` with
the default fp16 weight compression, as ``ovc`` writes it. A model OpenVINO cannot convert gets
no IR; the reason is kept in ir.json.

    python -m testmodels.corpus.ir OUT_DIR ONNX_DIR
"""

from __future__ import annotations

import json
import os
import sys

from testmodels.common import cached, to_openvino

FP16_IR = ("bert_legacy_op14", "resnet_legacy_op16", "whisperenc_legacy_op17", "llama_dynamo_op18",
           "wheel_nudenet_320n", "wheel_rapidocr_det_v4", "wheel_silero_vad_v6_openvino_16k")


def build(folder: str, onnx_dir: str) -> None:
    import openvino as ov

    report: dict[str, str | None] = {}
    for name in sorted(os.listdir(onnx_dir)):
        if not name.endswith(".onnx"):
            continue
        mid, src = name[:-5], os.path.join(onnx_dir, name)
        try:
            to_openvino(src, os.path.join(folder, f"{mid}.xml"))
            if mid in FP16_IR:
                ov.save_model(ov.convert_model(src), os.path.join(folder, f"{mid}_irfp16.xml"))
            report[mid] = None
        except Exception as e:  # OpenVINO's refusal is a fact about the model
            report[mid] = " ".join(str(e).split())[:300]
    with open(os.path.join(folder, "ir.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)


def irs(onnx_dir: str) -> str:
    """The cached IR folder of one ONNX folder (whose name carries its build's key)."""
    return cached(f"corpus-ir-{os.path.basename(onnx_dir).rsplit('-', 1)[-1]}", lambda folder: build(folder, onnx_dir))


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    build(sys.argv[1], sys.argv[2])
