"""timm image classifiers exported with both torch exporters, through timm's own ONNX helper.

Run in its own venv (``bash testmodels/pipelines/build.sh timm``):

    python -m testmodels.pipelines.timm testmodels/pipelines/timm

Four architectures at tiny widths (ResNet, MobileNetV3-small 0.50, ViT, ConvNeXt; random seeded
weights, ``pretrained=False``, 10 classes, 64x64 input) are each exported by
``timm.utils.onnx.onnx_export`` (the function behind timm's onnx_export.py script), twice:
``use_dynamo=False, opset=17`` (TorchScript exporter, ``dynamic_axes`` batch) and
``use_dynamo=True`` (torch.export exporter at its default opset, ``dynamic_shapes`` batch, traced
at batch 2 so batch stays dynamic). That default is 20, not 18: torch/onnx/_constants.py:9
``ONNX_DEFAULT_OPSET = 20`` in torch 2.13.0 and 2.14.1; 18 is only torchlib's floor
(torch/onnx/_internal/exporter/_constants.py ``TORCHLIB_OPSET = 18``). onnx_export runs onnx.checker (full check) on each.
Input ``input0`` [batch, 3, 64, 64]: the run feeds batch 1, the alt run batch 2.

timm 1.0.31 imports torchvision unconditionally (timm/layers/create_norm.py:29,
``from torchvision.ops.misc import FrozenBatchNorm2d``), so this venv pins torch 2.14.1 with
torchvision 0.29.1 rather than the project's torch 2.13.0.

Must not import graphlint (it is not installed in this venv).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import sys
from typing import Any

import torch

from testmodels.pipelines.manifest import write_manifest

SIZE = 64
HELDOUT = {"convnext"}  # whole architecture held out (both exporters), chosen before any linting
TOOLS = ("timm", "torch", "torchvision", "onnx", "onnxscript", "onnx-ir", "numpy")
MAX_FILE = 3 * 1024 * 1024

# name -> (timm model name, overrides that shrink it, description)
ARCHS: dict[str, tuple[str, dict[str, Any], str]] = {
    "resnet": ("resnet18", dict(layers=(1, 1, 1, 1), channels=(8, 16, 32, 64), stem_width=8),
               "ResNet (BasicBlock, 1 block per stage, widths 8-64)"),
    "mobilenetv3": ("mobilenetv3_small_050", {}, "MobileNetV3-small 0.50 (hard-swish, squeeze-excite)"),
    "vit": ("vit_tiny_patch16_224", dict(img_size=SIZE, embed_dim=64, depth=2, num_heads=2),
            "ViT (patch 16, 2 blocks, embed 64, 2 heads)"),
    "convnext": ("convnext_atto", dict(depths=(1, 1, 1, 1), dims=(16, 32, 64, 128)),
                 "ConvNeXt-atto layout (1 block per stage, widths 16-128, LayerNorm2d)"),
}
EXPORTERS = {  # tag -> onnx_export keyword arguments
    "ts17": dict(use_dynamo=False, opset=17),
    "dynamo": dict(use_dynamo=True),
}


def main(outdir: str) -> None:
    import timm
    from timm.utils.onnx import onnx_export

    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    models = []
    for seed, (arch, (name, overrides, desc)) in enumerate(ARCHS.items()):
        torch.manual_seed(seed)
        model = timm.create_model(name, pretrained=False, num_classes=10, **overrides).eval()
        example = torch.randn(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(seed))
        for tag, kwargs in EXPORTERS.items():
            sub = f"{arch}_{tag}"
            os.makedirs(os.path.join(outdir, sub))
            path = os.path.join(outdir, sub, "model.onnx")
            onnx_export(model, path, example_input=example, check=True, **kwargs)
            args = ", ".join(f"{k}={v!r}" for k, v in {"pretrained": False, "num_classes": 10, **overrides}.items())
            call = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            exporter = ("TorchScript exporter, opset 17, dynamic_axes batch" if tag == "ts17"
                        else "torch.export (dynamo) exporter, default opset 20, dynamic_shapes batch")
            models.append({
                "id": f"pl_timm_{arch}_{tag}",
                "file": f"{sub}/model.onnx",
                "pipeline": (f"timm.utils.onnx.onnx_export(timm.create_model({name!r}, {args}), "
                             f"example_input=randn(1, 3, {SIZE}, {SIZE}), {call})"),
                "kind": f"{desc} image classifier at {SIZE}x{SIZE}, {exporter}",
                "heldout": arch in HELDOUT,
                "shapes": {"input0": [1, 3, SIZE, SIZE]},
                "alt_shapes": {"input0": [2, 3, SIZE, SIZE]},
            })
            print(f"{sub}: {os.path.getsize(path)} bytes", flush=True)
    for root, _, files in os.walk(outdir):
        for fname in files:
            size = os.path.getsize(os.path.join(root, fname))
            if size > MAX_FILE:
                raise SystemExit(f"{os.path.join(root, fname)}: {size} bytes is above {MAX_FILE}")
    tools = {t: md.version(t) for t in TOOLS}
    write_manifest(outdir.rstrip("/") + ".toml", "testmodels/pipelines/timm.py", tools, models)


if __name__ == "__main__":
    main(sys.argv[1])
