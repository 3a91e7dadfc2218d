"""Multimodal test models for the dynamic-shape (GL3xx), input-contract (GL4xx) and layout (GL5xx) rules.

Every model is a real torch export (legacy ``dynamo=False`` and the dynamo exporter) or a
transformers model from a tiny config with random weights; the OpenVINO IRs are converted
from those exports with ``openvino.convert_model`` and saved with ``PrePostProcessor`` layouts.

Clean / broken pairs (the broken one has exactly the bug a rule should find):

* ``clip_legacy.onnx``: transformers CLIPModel, dynamic text batch, image batch, sequence;
  ``clip_mask_mismatch.onnx``: the same with attention_mask's sequence axis named separately
  (``mask_seq``), the classic ``dynamic_axes`` slip; ``clip_dynamo.onnx``: the dynamo exporter;
  ``clip_fused.onnx``: clip_legacy after onnxruntime's transformer optimizer (contrib ops).
* ``fusion.onnx``: image patches and text tokens concatenated on the sequence axis (clean);
  ``fusion_batch_mismatch.onnx``: the image and text batch axes named differently;
  ``fusion_fixed_reshape.onnx``: a head that reshapes to a Python-int batch (2);
  ``fusion_dynamo.onnx``: the clean model through the dynamo exporter.
* ``vision_uint8.onnx``: uint8 NHWC image, Cast, Transpose, /255, mean/std (clean contract);
  ``vision_uint8_nodiv.onnx``: Transpose on uint8 first and no /255 (normalizes [0,255] data
  with [0,1] stats);
  ``vision_float_div255.onnx``: float input divided by 255 inside the graph.
* ``vision.onnx`` (float NCHW, dynamic batch) and its IRs ``vision.xml`` (no layout),
  ``vision_layout.xml`` (NCHW via PrePostProcessor), ``vision_badlayout.xml`` (NHWC set on an NCHW shape).
* ``sandwich.onnx``: Transpose -> Relu -> Transpose that cancels.

Run ``python -m testmodels.export_multimodal OUTDIR`` or use :func:`build` via ``cached``.
"""

from __future__ import annotations

import os

from testmodels.common import cached, main, to_openvino, torch_export

OPSET = 17
IMAGE = 32  # pixels
PATCH = 8  # -> 16 patches
HIDDEN = 32
BATCH = 2
SEQ = 7


def _clip(folder: str) -> None:
    import torch
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    cfg = CLIPConfig(
        text_config={"vocab_size": 99, "hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "max_position_embeddings": 64},
        vision_config={"hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": IMAGE, "patch_size": PATCH},
        projection_dim=HIDDEN,
    )
    cfg._attn_implementation = "eager"

    class Clip(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.clip = CLIPModel(cfg).eval()

        def forward(self, input_ids, pixel_values, attention_mask):
            out = self.clip(input_ids=input_ids, pixel_values=pixel_values, attention_mask=attention_mask)
            return out.logits_per_image, out.logits_per_text

    m = Clip().eval()
    ids = torch.randint(0, 99, (BATCH, SEQ))
    pix = torch.randn(3, 3, IMAGE, IMAGE)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    names = ["input_ids", "pixel_values", "attention_mask"]
    outs = ["logits_per_image", "logits_per_text"]
    for fname, mask_axis in (("clip_legacy.onnx", "seq"), ("clip_mask_mismatch.onnx", "mask_seq")):
        axes = {"input_ids": {0: "text_batch", 1: "seq"}, "pixel_values": {0: "image_batch"},
                "attention_mask": {0: "text_batch", 1: mask_axis},
                "logits_per_image": {0: "image_batch", 1: "text_batch"},
                "logits_per_text": {0: "text_batch", 1: "image_batch"}}
        torch_export(m, (ids, pix, mask), os.path.join(folder, fname), opset=OPSET, input_names=names,
                     output_names=outs, dynamic_axes=axes)
    from onnxruntime.transformers.optimizer import optimize_model

    # ONNX Runtime's transformer fusions: com.microsoft Attention / SkipLayerNormalization / QuickGelu,
    # ops ONNX shape inference has no shape functions for
    fused = optimize_model(os.path.join(folder, "clip_legacy.onnx"), model_type="clip", num_heads=4,
                           hidden_size=HIDDEN, opt_level=1)
    fused.save_model_to_file(os.path.join(folder, "clip_fused.onnx"))
    from torch.export import Dim

    tb, ib, seq = Dim("text_batch", min=1, max=64), Dim("image_batch", min=1, max=64), Dim("seq", min=2, max=64)
    torch_export(m, (ids, pix, mask), os.path.join(folder, "clip_dynamo.onnx"), opset=18, dynamo=True,
                 input_names=names, output_names=outs,
                 dynamic_shapes=({0: tb, 1: seq}, {0: ib}, {0: tb, 1: seq}))


def _fusion_module(fixed_batch: int | None = None):
    import torch

    class Fusion(torch.nn.Module):
        """Image patches and text tokens in one sequence, a self-attention layer, pooled."""

        def __init__(self) -> None:
            super().__init__()
            self.patch = torch.nn.Conv2d(3, HIDDEN, PATCH, stride=PATCH)
            self.embed = torch.nn.Embedding(99, HIDDEN)
            self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
            self.head = torch.nn.Linear(HIDDEN, 8)

        def forward(self, pixel_values, input_ids):
            img = self.patch(pixel_values).flatten(2).transpose(1, 2)  # [B, P, D]
            txt = self.embed(input_ids)  # [B, S, D]
            seq = torch.cat([img, txt], dim=1)  # [B, P+S, D]
            q, k, v = self.qkv(seq).chunk(3, dim=-1)
            scores = torch.softmax(q @ k.transpose(1, 2) / HIDDEN ** 0.5, dim=-1)  # [B, L, L]
            fused = scores @ v
            pooled = fused.mean(dim=1)
            if fixed_batch is not None:  # the bug: a Python int where x.shape[0] belongs
                pooled = pooled.reshape(fixed_batch, HIDDEN)
            return self.head(pooled)

    torch.manual_seed(0)
    return Fusion().eval()


def _fusion(folder: str) -> None:
    import torch

    pix = torch.randn(BATCH, 3, IMAGE, IMAGE)
    ids = torch.randint(0, 99, (BATCH, SEQ))
    names, outs = ["pixel_values", "input_ids"], ["logits"]
    same = {"pixel_values": {0: "batch"}, "input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch"}}
    split = {"pixel_values": {0: "image_batch"}, "input_ids": {0: "text_batch", 1: "seq"}, "logits": {0: "batch"}}
    torch_export(_fusion_module(), (pix, ids), os.path.join(folder, "fusion.onnx"), opset=OPSET,
                 input_names=names, output_names=outs, dynamic_axes=same)
    torch_export(_fusion_module(), (pix, ids), os.path.join(folder, "fusion_batch_mismatch.onnx"), opset=OPSET,
                 input_names=names, output_names=outs, dynamic_axes=split)
    torch_export(_fusion_module(BATCH), (pix, ids), os.path.join(folder, "fusion_fixed_reshape.onnx"),
                 opset=OPSET, input_names=names, output_names=outs, dynamic_axes=same)
    from torch.export import Dim

    b, s = Dim("batch", min=1, max=64), Dim("seq", min=1, max=128)
    torch_export(_fusion_module(), (pix, ids), os.path.join(folder, "fusion_dynamo.onnx"), opset=18, dynamo=True,
                 input_names=names, output_names=outs, dynamic_shapes=({0: b}, {0: b, 1: s}))


def _vision_module(kind: str):
    import torch

    mean = torch.tensor([0.481, 0.458, 0.408]).view(1, 3, 1, 1)
    std = torch.tensor([0.269, 0.261, 0.276]).view(1, 3, 1, 1)

    class Vision(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.conv2 = torch.nn.Conv2d(16, 16, 3, stride=2, padding=1)
            self.fc = torch.nn.Linear(16, 10)
            self.register_buffer("mean", mean)
            self.register_buffer("std", std)

        def forward(self, image):
            x = image
            if kind == "uint8":  # Cast right at the input (TensorRT keeps UINT8 at the boundary)
                x = x.float().permute(0, 3, 1, 2) / 255.0  # NHWC uint8 -> NCHW float in [0,1]
                x = (x - self.mean) / self.std
            elif kind == "uint8_nodiv":  # two bugs: uint8 Transpose inside the network, no /255
                x = x.permute(0, 3, 1, 2).float()
                x = (x - self.mean) / self.std
            elif kind == "float_div255":
                x = (x / 255.0 - self.mean) / self.std
            x = torch.relu(self.conv(x))
            x = torch.relu(self.conv2(x))
            return self.fc(x.mean(dim=(2, 3)))

    torch.manual_seed(0)
    return Vision().eval()


def _vision(folder: str) -> None:
    import torch

    u8 = torch.randint(0, 256, (BATCH, IMAGE, IMAGE, 3), dtype=torch.uint8)
    f = torch.rand(BATCH, 3, IMAGE, IMAGE)
    axes = {"image": {0: "batch"}, "logits": {0: "batch"}}
    for kind, x in (("uint8", u8), ("uint8_nodiv", u8), ("float_div255", f * 255)):
        torch_export(_vision_module(kind), (x,), os.path.join(folder, f"vision_{kind}.onnx"), opset=OPSET,
                     input_names=["image"], output_names=["logits"], dynamic_axes=axes)
    onnx_path = torch_export(_vision_module("float"), (f,), os.path.join(folder, "vision.onnx"), opset=OPSET,
                             input_names=["image"], output_names=["logits"], dynamic_axes=axes)
    to_openvino(onnx_path, os.path.join(folder, "vision.xml"))
    to_openvino(onnx_path, os.path.join(folder, "vision_layout.xml"), layouts={"image": "NCHW"})
    to_openvino(onnx_path, os.path.join(folder, "vision_badlayout.xml"), layouts={"image": "NHWC"})


def _sandwich(folder: str) -> None:
    import torch

    class Sandwich(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x):
            y = self.conv(x).permute(0, 2, 3, 1)  # to NHWC for a "channels-last" activation
            y = torch.sigmoid(y) * 2.0
            return y.permute(0, 3, 1, 2)

    torch.manual_seed(0)
    torch_export(Sandwich(), (torch.randn(1, 3, 16, 16),), os.path.join(folder, "sandwich.onnx"), opset=OPSET,
                 input_names=["x"], output_names=["y"])


def build(folder: str) -> None:
    _vision(folder)
    _sandwich(folder)
    _fusion(folder)
    _clip(folder)


def models() -> str:
    """The cached folder holding every model above."""
    return cached("multimodal", build)


if __name__ == "__main__":
    main(build, models)
