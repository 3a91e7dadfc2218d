"""Torch exports of small transformers architectures (random weights, fixed seeds).

Each architecture is built from a tiny config (2 layers, hidden 32), wrapped to return plain
tensors, and exported with the legacy exporter (``dynamo=False``) at the opsets in its row and
with the dynamo exporter at opset 18, declaring dynamic batch / sequence axes the way users do
(``dynamic_axes`` for legacy, ``torch.export.Dim`` for dynamo). A legacy export that declares no
dynamic axes (``fixed``) is a user who forgot them: it loads everywhere and fails at another shape.

    python -m testmodels.corpus.exports OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from testmodels.common import torch_export

HIDDEN, HEADS, LAYERS, FFN = 32, 4, 2, 64
VOCAB = 100
BATCH, SEQ, IMAGE = 2, 8, 32  # batch 2: torch.export specializes a size-1 dim


@dataclass
class Arch:
    name: str
    make: Callable[[], object]  # -> torch module returning a tensor or tuple of tensors
    inputs: dict[str, tuple[tuple[int, ...], str]]  # name -> (example shape, kind: ids|mask|float|audio)
    axes: dict[str, dict[int, str]]  # legacy dynamic_axes per input
    legacy: list[int]  # opsets for the legacy exporter
    dynamo: list[int] = field(default_factory=lambda: [18])
    fixed: list[int] = field(default_factory=list)  # legacy exports with no dynamic axes
    heldout: bool = False  # added after the rules were tuned on the others (docs/conformance.md)


def _wrap(model, keys: tuple[str, ...], pick: Callable | None = None):
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model.eval()

        def forward(self, *args):
            out = self.model(**dict(zip(keys, args, strict=True)), return_dict=True)
            return pick(out) if pick else out.last_hidden_state

    return Wrapped()


def _text(cfg_cls, model_cls, keys=("input_ids", "attention_mask"), pick=None, **extra):
    def make():
        cfg = cfg_cls(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                      intermediate_size=FFN, max_position_embeddings=64, **extra)
        cfg._attn_implementation = "eager"
        return _wrap(model_cls(cfg), keys, pick)
    return make


def _bert():
    from transformers import BertConfig, BertModel
    return _text(BertConfig, BertModel)()


def _llama():
    from transformers import LlamaConfig, LlamaModel
    return _text(LlamaConfig, LlamaModel, num_key_value_heads=2, use_cache=False)()


def _qwen2():
    from transformers import Qwen2Config, Qwen2Model
    return _text(Qwen2Config, Qwen2Model, num_key_value_heads=2, use_cache=False)()


def _gpt2():
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=64, use_cache=False)
    cfg._attn_implementation = "eager"
    return _wrap(GPT2Model(cfg), ("input_ids", "attention_mask"))


def _vit():
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(image_size=IMAGE, patch_size=8, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                    num_attention_heads=HEADS, intermediate_size=FFN)
    cfg._attn_implementation = "eager"
    return _wrap(ViTModel(cfg, add_pooling_layer=False), ("pixel_values",))


def _clip_vision():
    from transformers import CLIPVisionConfig, CLIPVisionModel

    cfg = CLIPVisionConfig(hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, image_size=IMAGE, patch_size=8)
    cfg._attn_implementation = "eager"
    return _wrap(CLIPVisionModel(cfg), ("pixel_values",), lambda o: o.pooler_output)


def _clip_text():
    from transformers import CLIPTextConfig, CLIPTextModel

    cfg = CLIPTextConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                         num_attention_heads=HEADS, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    return _wrap(CLIPTextModel(cfg), ("input_ids", "attention_mask"), lambda o: o.pooler_output)


def _resnet():
    from transformers import ResNetConfig, ResNetModel

    cfg = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic")
    return _wrap(ResNetModel(cfg), ("pixel_values",), lambda o: o.pooler_output)


def _convnext():
    from transformers import ConvNextConfig, ConvNextModel

    cfg = ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)
    return _wrap(ConvNextModel(cfg), ("pixel_values",), lambda o: o.pooler_output)


def _swin():
    from transformers import SwinConfig, SwinModel

    cfg = SwinConfig(image_size=IMAGE, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4)
    return _wrap(SwinModel(cfg), ("pixel_values",))


def _whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    cfg = WhisperConfig(num_mel_bins=16, d_model=HIDDEN, encoder_layers=LAYERS, encoder_attention_heads=HEADS,
                        encoder_ffn_dim=FFN, max_source_positions=32)
    cfg._attn_implementation = "eager"
    return _wrap(WhisperEncoder(cfg), ("input_features",))


def _wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                         intermediate_size=FFN, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, do_stable_layer_norm=True)
    cfg._attn_implementation = "eager"
    return _wrap(Wav2Vec2Model(cfg), ("input_values",))


def _t5_encoder():
    from transformers import T5Config, T5EncoderModel

    cfg = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=8, d_ff=FFN, num_layers=LAYERS, num_heads=HEADS)
    cfg._attn_implementation = "eager"
    return _wrap(T5EncoderModel(cfg), ("input_ids", "attention_mask"))


def _bart_encoder():
    from transformers import BartConfig
    from transformers.models.bart.modeling_bart import BartEncoder

    cfg = BartConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, encoder_attention_heads=HEADS,
                     encoder_ffn_dim=FFN, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    return _wrap(BartEncoder(cfg), ("input_ids", "attention_mask"))


def _detr():
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

    cfg = DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False,
                     backbone_config=ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 32, 32],
                                                  depths=[1, 1, 1, 1], layer_type="basic",
                                                  out_features=["stage4"]),
                     d_model=HIDDEN, encoder_layers=1, decoder_layers=1, encoder_attention_heads=HEADS,
                     decoder_attention_heads=HEADS, encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, num_queries=8,
                     num_labels=3)
    cfg._attn_implementation = "eager"
    return _wrap(DetrForObjectDetection(cfg), ("pixel_values",), lambda o: (o.logits, o.pred_boxes))


def _distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    cfg = DistilBertConfig(vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN,
                           max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    return _wrap(DistilBertModel(cfg), ("input_ids", "attention_mask"))


def _deberta_v2():
    from transformers import DebertaV2Config, DebertaV2Model

    return _text(DebertaV2Config, DebertaV2Model, relative_attention=True, position_buckets=16,
                 pos_att_type=["p2c", "c2p"], max_relative_positions=32)()


def _bloom():
    from transformers import BloomConfig, BloomModel

    cfg = BloomConfig(vocab_size=VOCAB, hidden_size=HIDDEN, n_layer=LAYERS, n_head=HEADS, use_cache=False)
    cfg._attn_implementation = "eager"
    return _wrap(BloomModel(cfg), ("input_ids", "attention_mask"))


def _segformer():
    from transformers import SegformerConfig, SegformerModel

    cfg = SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                          patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2])
    return _wrap(SegformerModel(cfg), ("pixel_values",))


def _mobilevit():
    from transformers import MobileViTConfig, MobileViTModel

    cfg = MobileViTConfig(image_size=IMAGE, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
                          num_attention_heads=2)
    return _wrap(MobileViTModel(cfg), ("pixel_values",), lambda o: o.pooler_output)


def _dinov2():
    from transformers import Dinov2Config, Dinov2Model

    cfg = Dinov2Config(image_size=IMAGE, patch_size=8, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                       num_attention_heads=HEADS, mlp_ratio=2)
    cfg._attn_implementation = "eager"
    return _wrap(Dinov2Model(cfg), ("pixel_values",), lambda o: o.pooler_output)


IDS = ((BATCH, SEQ), "ids")
MASK = ((BATCH, SEQ), "mask")
TEXT_AXES = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
IMG = ((BATCH, 3, IMAGE, IMAGE), "float")
IMG_AXES = {"pixel_values": {0: "batch"}}
IMG_HW_AXES = {"pixel_values": {0: "batch", 2: "height", 3: "width"}}

ARCHS = [
    Arch("bert", _bert, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [11, 13, 14], fixed=[17]),
    Arch("llama", _llama, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [14, 17], dynamo=[18, 23]),
    Arch("qwen2", _qwen2, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [14, 17]),
    Arch("gpt2", _gpt2, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [13]),
    Arch("t5enc", _t5_encoder, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [12, 17]),
    Arch("bartenc", _bart_encoder, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [13]),
    Arch("cliptext", _clip_text, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [14]),
    Arch("vit", _vit, {"pixel_values": IMG}, IMG_AXES, [11, 17], fixed=[13]),
    Arch("clipvision", _clip_vision, {"pixel_values": IMG}, IMG_AXES, [14]),
    Arch("resnet", _resnet, {"pixel_values": IMG}, {"pixel_values": {0: "batch", 2: "height", 3: "width"}},
         [11, 16]),
    Arch("convnext", _convnext, {"pixel_values": IMG}, IMG_AXES, [13, 17]),
    Arch("swin", _swin, {"pixel_values": IMG}, IMG_AXES, [15]),
    Arch("detr", _detr, {"pixel_values": ((BATCH, 3, 64, 64), "float")}, IMG_AXES, [12, 17]),
    Arch("whisperenc", _whisper_encoder, {"input_features": ((BATCH, 16, 64), "float")},
         {"input_features": {0: "batch"}}, [14, 17]),
    # users who declare the image size / frame count dynamic although the model bakes it in
    Arch("vit_dynhw", _vit, {"pixel_values": IMG}, {"pixel_values": {0: "batch", 2: "height", 3: "width"}},
         [17], dynamo=[]),
    Arch("whisperenc_dynframes", _whisper_encoder, {"input_features": ((BATCH, 16, 64), "float")},
         {"input_features": {0: "batch", 2: "frames"}}, [17], dynamo=[]),
    Arch("wav2vec2", _wav2vec2, {"input_values": ((BATCH, 400), "float")},
         {"input_values": {0: "batch", 1: "samples"}}, [13, 17]),
    # held-out architectures (issue 17): measured before any rule was changed for them
    Arch("distilbert", _distilbert, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [14], heldout=True),
    Arch("debertav2", _deberta_v2, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [15], heldout=True),
    Arch("bloom", _bloom, {"input_ids": IDS, "attention_mask": MASK}, TEXT_AXES, [14], heldout=True),
    Arch("segformer", _segformer, {"pixel_values": IMG}, IMG_HW_AXES, [16], heldout=True),
    Arch("mobilevit", _mobilevit, {"pixel_values": IMG}, IMG_AXES, [13], heldout=True),
    Arch("dinov2", _dinov2, {"pixel_values": IMG}, IMG_HW_AXES, [17], heldout=True),
]


def example(arch: Arch):
    import torch

    g = torch.Generator().manual_seed(0)
    out = []
    for shape, kind in arch.inputs.values():
        if kind == "ids":
            out.append(torch.randint(0, VOCAB, shape, generator=g))
        elif kind == "mask":
            out.append(torch.ones(shape, dtype=torch.int64))
        else:
            out.append(torch.randn(shape, generator=g))
    return tuple(out)


def _dynamic_shapes(arch: Arch):
    from torch.export import Dim

    dims: dict[str, object] = {}
    spec = []
    for name in arch.inputs:
        axes = {}
        for ax, label in arch.axes.get(name, {}).items():
            if label not in dims:
                dims[label] = Dim(label, min=1, max=4096) if label == "batch" else Dim(label, min=2, max=4096)
            axes[ax] = dims[label]
        spec.append(axes or None)
    return (tuple(spec),)  # one entry: the wrapper's *args


def export_one(arch: Arch, path: str, opset: int, *, dynamo: bool, fixed: bool = False) -> None:
    import torch

    torch.manual_seed(0)
    module = arch.make()
    names = list(arch.inputs)
    if dynamo:
        torch_export(module, example(arch), path, opset=opset, dynamo=True, input_names=names,
                     dynamic_shapes=_dynamic_shapes(arch))
    else:
        torch_export(module, example(arch), path, opset=opset, input_names=names,
                     dynamic_axes=None if fixed else arch.axes)


def plan() -> list[tuple[str, Arch, int, bool, bool]]:
    """(model id, arch, opset, dynamo, fixed) for every export."""
    out = []
    for a in ARCHS:
        out += [(f"{a.name}_legacy_op{o}", a, o, False, False) for o in a.legacy]
        out += [(f"{a.name}_legacy_op{o}_fixed", a, o, False, True) for o in a.fixed]
        out += [(f"{a.name}_dynamo_op{o}", a, o, True, False) for o in a.dynamo]
    return out


def build(folder: str) -> None:
    """Export every row of ``plan()``; a row that fails to export is recorded, not fatal."""
    import warnings

    report = {}
    for mid, arch, opset, dynamo, fixed in plan():
        t0 = time.time()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                export_one(arch, os.path.join(folder, f"{mid}.onnx"), opset, dynamo=dynamo, fixed=fixed)
            report[mid] = {"seconds": round(time.time() - t0, 1)}
        except Exception as e:
            report[mid] = {"error": " ".join(str(e).split())[:300]}
            for f in os.listdir(folder):
                if f.startswith(mid + ".onnx"):
                    os.remove(os.path.join(folder, f))
        print(mid, report[mid], flush=True)
    with open(os.path.join(folder, "exports.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    build(out)
