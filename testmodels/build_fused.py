"""Tiny BERT-style and ViT-style transformers, exported with torch, then fused for ONNX Runtime.

    python -m testmodels.build_fused OUT_DIR

Writes, from small configs with random weights (no downloads):

* ``bert.onnx``  / ``bert_fused.onnx``: BertModel (2 layers, hidden 32, 4 heads), legacy exporter,
  opset 17; fused with ``onnxruntime.transformers.optimizer`` (model_type "bert"): Attention,
  SkipLayerNormalization, EmbedLayerNormalization, BiasGelu/FastGelu in com.microsoft.
* ``vit.onnx``   / ``vit_fused.onnx``: ViTModel (2 layers, 32x32 images, patch 8), model_type "vit".

``build(folder)`` is what tests call through ``testmodels.common.cached``.
"""

from __future__ import annotations

import os
import sys

from testmodels.common import torch_export

HIDDEN, HEADS, LAYERS = 32, 4, 2


def _bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=100, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                     intermediate_size=64, max_position_embeddings=64, attn_implementation="eager")
    return BertModel(cfg, add_pooling_layer=False)


def _vit():
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                    num_attention_heads=HEADS, intermediate_size=64, attn_implementation="eager")
    return ViTModel(cfg, add_pooling_layer=False)


class _Wrap:
    """Return only the last hidden state so the graph has one output (tuples confuse exporters)."""

    def __new__(cls, model, keys: tuple[str, ...]):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *args):
                return self.model(**dict(zip(keys, args, strict=True)), return_dict=True).last_hidden_state

        return Wrapped()


def _fuse(src: str, dst: str, model_type: str) -> None:
    from onnxruntime.transformers import optimizer

    opt = optimizer.optimize_model(src, model_type=model_type, num_heads=HEADS, hidden_size=HIDDEN,
                                   opt_level=0, use_gpu=False, only_onnxruntime=False)
    opt.save_model_to_file(dst)


def build(folder: str) -> None:
    import torch

    torch.manual_seed(0)
    ids = torch.randint(0, 100, (1, 16))
    mask = torch.ones(1, 16, dtype=torch.int64)
    bert = os.path.join(folder, "bert.onnx")
    torch_export(_Wrap(_bert(), ("input_ids", "attention_mask")), (ids, mask), bert, opset=17,
                 input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                 dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}})
    _fuse(bert, os.path.join(folder, "bert_fused.onnx"), "bert")

    pixels = torch.rand(1, 3, 32, 32)
    vit = os.path.join(folder, "vit.onnx")
    torch_export(_Wrap(_vit(), ("pixel_values",)), (pixels,), vit, opset=17, input_names=["pixel_values"],
                 output_names=["last_hidden_state"], dynamic_axes={"pixel_values": {0: "batch"}})
    _fuse(vit, os.path.join(folder, "vit_fused.onnx"), "vit")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    build(out)
