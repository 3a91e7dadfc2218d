"""Float models the quantization tests start from: real torch exports of transformers architectures.

Small configs, random weights, fixed seeds (no downloads):

* ``bert.onnx``: BertModel (2 layers, hidden 32), legacy exporter opset 17, dynamic batch and
  sequence -- ONNX Runtime's ``quant_pre_process`` gives up on its symbolic shapes, the case where
  users quantize the raw export and constants stay ``Constant`` nodes;
* ``vit.onnx``: ViTModel (patch 8 on 32x32 images), legacy opset 17, static shapes;
* ``resnet.onnx``: ResNetModel (basic blocks, Conv/Relu/MaxPool/Add), legacy opset 17;
* ``resnet_dynamo.onnx``: the same module through the dynamo exporter at opset 18;
* ``whisper_enc.onnx``: WhisperEncoder (Conv1d stem, 2 layers), legacy opset 17.

``feeds(name, seed)`` makes inputs for each; ``preprocessed(folder, name)`` is the model after
``onnxruntime.quantization.quant_pre_process`` (or the raw export where pre-processing fails, as
it does for BERT). Run ``python -m testmodels.quant_export OUT_DIR`` or use :func:`exports`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

import numpy as np

from testmodels.common import cached, torch_export

OPSET = 17
HIDDEN = 32
NAMES = ("bert", "vit", "resnet", "resnet_dynamo", "whisper_enc")


def _modules() -> dict[str, tuple]:
    """name -> (module, example args, input names, output name, dynamic axes)."""
    import torch
    from transformers import (
        BertConfig,
        BertModel,
        ResNetConfig,
        ResNetModel,
        ViTConfig,
        ViTModel,
        WhisperConfig,
    )
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    torch.manual_seed(0)
    small = {"num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "attn_implementation": "eager"}
    bert = BertModel(BertConfig(vocab_size=99, hidden_size=HIDDEN, max_position_embeddings=64, **small)).eval()
    vit = ViTModel(ViTConfig(hidden_size=HIDDEN, image_size=32, patch_size=8, **small), add_pooling_layer=False).eval()
    resnet = ResNetModel(ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic")).eval()
    whisper = WhisperEncoder(WhisperConfig(d_model=HIDDEN, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=64,
                                           decoder_layers=1, decoder_attention_heads=4, decoder_ffn_dim=64,
                                           num_mel_bins=16, max_source_positions=20,
                                           attn_implementation="eager")).eval()

    class Bert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = bert

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    class Pixels(torch.nn.Module):
        def __init__(self, m, pooled: bool) -> None:
            super().__init__()
            self.m, self.pooled = m, pooled

        def forward(self, pixel_values):
            out = self.m(pixel_values=pixel_values)
            return out.pooler_output if self.pooled else out.last_hidden_state

    class Whisper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = whisper

        def forward(self, input_features):
            return self.m(input_features=input_features).last_hidden_state

    ids, mask = torch.randint(0, 99, (2, 8)), torch.ones(2, 8, dtype=torch.int64)
    img = torch.randn(1, 3, 32, 32)
    text_axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                 "hidden": {0: "batch", 1: "seq"}}
    return {
        "bert": (Bert(), (ids, mask), ["input_ids", "attention_mask"], "hidden", text_axes),
        "vit": (Pixels(vit, False), (img,), ["pixel_values"], "hidden", None),
        "resnet": (Pixels(resnet, True), (img,), ["pixel_values"], "pooled", None),
        "whisper_enc": (Whisper(), (torch.randn(1, 16, 40),), ["input_features"], "hidden", None),
    }


def feeds(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for a model of NAMES (also for its quantized variants); one seed, one batch."""
    rng = np.random.default_rng(seed)
    if name == "bert":
        return {"input_ids": rng.integers(0, 99, (2, 8)).astype(np.int64),
                "attention_mask": np.ones((2, 8), np.int64)}
    if name == "whisper_enc":
        return {"input_features": rng.standard_normal((1, 16, 40)).astype(np.float32)}
    return {"pixel_values": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}


def base_of(variant: str) -> str:
    """The float model a variant file name starts with (longest match: resnet_dynamo before resnet)."""
    return max((n for n in NAMES if variant == n or variant.startswith(n + "_")), key=len)


def build(folder: str) -> None:
    """Build into ``folder``; runs there because ORT's quantization tools write temporary
    ``<uuid>.data`` files into the working directory."""
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        _build(folder)
    finally:
        os.chdir(cwd)


def _build(folder: str) -> None:
    from onnxruntime.quantization.shape_inference import quant_pre_process

    mods = _modules()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (module, args, inputs, output, axes) in mods.items():
            torch_export(module, args, os.path.join(folder, f"{name}.onnx"), opset=OPSET, input_names=inputs,
                         output_names=[output], dynamic_axes=axes)
        module, args, inputs, output, _ = mods["resnet"]
        torch_export(module, args, os.path.join(folder, "resnet_dynamo.onnx"), opset=18, dynamo=True,
                     input_names=inputs, output_names=[output])
    for name in NAMES:
        # symbolic shape inference, ORT's optimizer (folds constants), ONNX shape inference; BERT's
        # dynamic axes fail it ("Incomplete symbolic shape inference")
        with contextlib.suppress(Exception):
            quant_pre_process(os.path.join(folder, f"{name}.onnx"), os.path.join(folder, f"{name}.pre.onnx"))


def preprocessed(folder: str, name: str) -> str:
    """The pre-processed float model, or the raw export where pre-processing failed."""
    pre = os.path.join(folder, f"{name}.pre.onnx")
    return pre if os.path.isfile(pre) else os.path.join(folder, f"{name}.onnx")


def exports() -> str:
    """The cached folder of float exports."""
    return cached("quant-float", build)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else exports()
    os.makedirs(out, exist_ok=True)
    build(out)
    print(out)
