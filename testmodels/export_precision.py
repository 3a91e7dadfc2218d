"""Models for the reduced-precision family (GL6xxx): real exports whose numbers move in fp16/bf16.

Every model is a real export (torch legacy exporter, ``dynamo=False``, unless named ``_dynamo``)
from a small config with random weights and a fixed seed, plus one input set per model
(``inputs.npz``, keyed ``<model>/<input>``) so every engine run sees the same numbers.

transformers models (the activation scale the random init gives, nothing planted):

* ``vit.onnx``: ViTForImageClassification, 64x64 images, patch 8 (65 tokens), 2 layers.
* ``clip.onnx``: CLIPModel, logits_per_image / logits_per_text (logit scale exp(2.66)).
* ``bert.onnx``: BertForSequenceClassification with a padded attention mask (transformers builds
  the additive mask from ``torch.finfo(float32).min``).
* ``whisper_enc.onnx``: the WhisperModel encoder, 16 mel bins x 128 frames.
* ``llama.onnx``: LlamaForCausalLM (dynamo exporter, opset 18), 32 tokens, causal mask, RMSNorm as Pow/ReduceMean/Rsqrt.
* ``llama_massive.onnx``: the same with one residual channel carrying a "massive activation"
  (magnitude 2000 on the first token, as measured in trained Llama-2 by Sun et al. 2024,
  arXiv:2402.17762): set in the embedding table, so a constant-folded range shows it.

Third-party style modules (written the way public repositories write them, not transformers):

* ``convnext.onnx``: ConvNeXt-V2 blocks with the channels-first LayerNorm written out
  (``u = x.mean(1); s = (x - u).pow(2).mean(1)``) and GRN (``torch.norm`` over H x W).
* ``seq_mask.onnx``: a sequence classifier with ``masked_fill(mask == 0, -1e9)`` attention, a
  hand-written LayerNorm and a softmax written as ``exp / sum`` (no max subtracted), 256 steps.
* ``linear_attn.onnx``: causal linear attention (``cumsum`` of k*v over 512 steps, elu+1 feature map).

    python -m testmodels.export_precision OUT_DIR
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from testmodels.common import cached, main, torch_export

OPSET = 17
SEED = 0


def _hf_wrap(model: Any, keys: tuple[str, ...], outputs: tuple[str, ...]) -> Any:
    """A module taking positional tensors and returning the named output fields."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args):
            out = self.model(**dict(zip(keys, args, strict=True)), return_dict=True)
            got = tuple(getattr(out, k) for k in outputs)
            return got if len(got) > 1 else got[0]

    return Wrapped().eval()


def _vit() -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    import torch
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(SEED)
    cfg = ViTConfig(image_size=64, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, num_labels=10, attn_implementation="eager")
    m = _hf_wrap(ViTForImageClassification(cfg), ("pixel_values",), ("logits",))
    rng = np.random.default_rng(SEED)
    return m, {"pixel_values": rng.standard_normal((2, 3, 64, 64)).astype(np.float32)}, ("logits",)


def _clip() -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    import torch
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(SEED)
    cfg = CLIPConfig(
        text_config={"vocab_size": 200, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "max_position_embeddings": 64},
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": 64, "patch_size": 8},
        projection_dim=64)
    cfg._attn_implementation = "eager"
    m = _hf_wrap(CLIPModel(cfg), ("input_ids", "pixel_values", "attention_mask"),
                 ("logits_per_image", "logits_per_text"))
    rng = np.random.default_rng(SEED)
    mask = np.ones((3, 16), np.int64)
    mask[1, 10:] = 0
    mask[2, 5:] = 0
    return m, {"input_ids": rng.integers(0, 200, (3, 16)).astype(np.int64),
               "pixel_values": rng.standard_normal((2, 3, 64, 64)).astype(np.float32),
               "attention_mask": mask}, ("logits_per_image", "logits_per_text")


def _bert() -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(SEED)
    cfg = BertConfig(vocab_size=200, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=128, num_labels=3,
                     attn_implementation="eager")
    # token_type_ids given: the buffered default becomes a GatherElements that onnx.reference 1.23 mis-shapes
    m = _hf_wrap(BertForSequenceClassification(cfg), ("input_ids", "attention_mask", "token_type_ids"),
                 ("logits",))
    rng = np.random.default_rng(SEED)
    mask = np.ones((2, 48), np.int64)
    mask[1, 30:] = 0
    return m, {"input_ids": rng.integers(0, 200, (2, 48)).astype(np.int64), "attention_mask": mask,
               "token_type_ids": np.zeros((2, 48), np.int64)}, ("logits",)


def _whisper() -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    import torch
    from transformers import WhisperConfig, WhisperModel

    torch.manual_seed(SEED)
    cfg = WhisperConfig(vocab_size=200, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                        num_mel_bins=16, d_model=64, encoder_layers=2, encoder_attention_heads=4,
                        decoder_layers=1, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                        max_source_positions=64, max_target_positions=32, attn_implementation="eager")
    enc = WhisperModel(cfg).get_encoder()
    m = _hf_wrap(enc, ("input_features",), ("last_hidden_state",))
    rng = np.random.default_rng(SEED)
    return m, {"input_features": rng.standard_normal((1, 16, 128)).astype(np.float32)}, ("last_hidden_state",)


def _llama_model(massive: float = 0.0) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    cfg = LlamaConfig(vocab_size=200, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      attn_implementation="eager", use_cache=False)
    model = LlamaForCausalLM(cfg).eval()
    if massive:
        with torch.no_grad():  # token 1 (the BOS id) carries one huge residual channel
            model.model.embed_tokens.weight[1, 7] = massive
    return model


def _llama(massive: float = 0.0) -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    m = _hf_wrap(_llama_model(massive), ("input_ids",), ("logits",))
    rng = np.random.default_rng(SEED)
    ids = rng.integers(2, 200, (1, 32)).astype(np.int64)
    ids[0, 0] = 1
    return m, {"input_ids": ids}, ("logits",)


def _convnext() -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    import torch
    from torch import nn

    class LayerNorm2d(nn.Module):  # facebookresearch/ConvNeXt-V2 models/utils.py, channels_first branch
        def __init__(self, c: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.weight, self.bias, self.eps = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c)), eps

        def forward(self, x):
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            return self.weight[:, None, None] * x + self.bias[:, None, None]

    class GRN(nn.Module):  # ConvNeXt-V2 global response normalization, channels last
        def __init__(self, c: int) -> None:
            super().__init__()
            self.gamma, self.beta = nn.Parameter(torch.zeros(1, 1, 1, c)), nn.Parameter(torch.zeros(1, 1, 1, c))

        def forward(self, x):
            gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
            nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
            return self.gamma * (x * nx) + self.beta + x

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.norm = nn.LayerNorm(c, eps=1e-6)
            self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
            self.grn = GRN(4 * c)

        def forward(self, x):
            y = self.dw(x).permute(0, 2, 3, 1)
            y = self.pw2(self.grn(nn.functional.gelu(self.pw1(self.norm(y)))))
            return x + y.permute(0, 3, 1, 2)

    class ConvNeXt(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 32, 4, stride=4), LayerNorm2d(32))
            self.blocks = nn.Sequential(Block(32), Block(32))
            self.down = nn.Sequential(LayerNorm2d(32), nn.Conv2d(32, 64, 2, stride=2))
            self.block2 = Block(64)
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            x = self.block2(self.down(self.blocks(self.stem(x))))
            return self.head(x.mean((2, 3)))

    torch.manual_seed(SEED)
    m = ConvNeXt().eval()
    with torch.no_grad():  # trained GRN gains are not zero; zero would make GRN the identity
        for mod in m.modules():
            if isinstance(mod, GRN):
                mod.gamma.normal_(0, 0.5)
    rng = np.random.default_rng(SEED)
    return m, {"pixel_values": rng.standard_normal((2, 3, 128, 128)).astype(np.float32)}, ("logits",)


def _seq_mask() -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    import torch
    from torch import nn

    class LayerNorm(nn.Module):  # "The Annotated Transformer" style
        def __init__(self, d: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.a, self.b, self.eps = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d)), eps

        def forward(self, x):
            mean = x.mean(-1, keepdim=True)
            var = ((x - mean) ** 2).mean(-1, keepdim=True)
            return self.a * (x - mean) / torch.sqrt(var + self.eps) + self.b

    class Layer(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ff1, self.ff2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.n1, self.n2, self.d = LayerNorm(d), LayerNorm(d), d

        def forward(self, x, mask):
            q, k, v = self.qkv(self.n1(x)).chunk(3, dim=-1)
            s = q @ k.transpose(1, 2) / self.d ** 0.5
            s = s.masked_fill(mask[:, None, :] == 0, -1e9)
            e = torch.exp(s)
            p = e / e.sum(-1, keepdim=True)
            x = x + self.out(p @ v)
            return x + self.ff2(torch.relu(self.ff1(self.n2(x))))

    class Seq(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(8, 64)
            self.layers = nn.ModuleList([Layer(64), Layer(64)])
            self.head = nn.Linear(64, 5)

        def forward(self, x, mask):
            h = self.inp(x)
            for layer in self.layers:
                h = layer(h, mask)
            m = mask.unsqueeze(-1).to(h.dtype)
            return self.head((h * m).sum(1) / m.sum(1))

    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    mask = np.ones((2, 256), np.int64)
    mask[1, 200:] = 0
    return Seq().eval(), {"x": rng.standard_normal((2, 256, 8)).astype(np.float32), "mask": mask}, ("logits",)


def _linear_attn() -> tuple[Any, dict[str, np.ndarray], tuple[str, ...]]:
    import torch
    from torch import nn

    class CausalLinearAttention(nn.Module):  # Katharopoulos et al. 2020, cumsum form
        def __init__(self, d: int) -> None:
            super().__init__()
            self.qkv, self.out, self.norm = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)

        def forward(self, x):
            q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
            q, k = nn.functional.elu(q) + 1, nn.functional.elu(k) + 1
            kv = torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=1)  # [B, T, D, D]
            z = torch.cumsum(k, dim=1)  # [B, T, D]
            num = (q.unsqueeze(-1) * kv).sum(-2)
            den = (q * z).sum(-1, keepdim=True) + 1e-6
            return x + self.out(num / den)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(4, 32)
            self.blocks = nn.Sequential(CausalLinearAttention(32), CausalLinearAttention(32))
            self.head = nn.Linear(32, 6)

        def forward(self, x):
            return self.head(self.blocks(self.inp(x))[:, -1])

    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    return Model().eval(), {"x": rng.standard_normal((2, 512, 4)).astype(np.float32)}, ("logits",)


MODELS: dict[str, Callable[[], tuple[Any, dict[str, np.ndarray], tuple[str, ...]]]] = {
    "vit": _vit,
    "clip": _clip,
    "bert": _bert,
    "whisper_enc": _whisper,
    "llama": _llama,
    "llama_massive": lambda: _llama(2000.0),
    "convnext": _convnext,
    "seq_mask": _seq_mask,
    "linear_attn": _linear_attn,
}
# transformers' masking utilities use aten::diff, which the legacy exporter has no symbolic for
DYNAMO = {"llama", "llama_massive"}


def build(folder: str, names: list[str] | None = None) -> None:
    import torch

    arrays: dict[str, np.ndarray] = {}
    for name in names or list(MODELS):
        module, inputs, outputs = MODELS[name]()
        args = tuple(torch.from_numpy(v) for v in inputs.values())
        dynamo = name in DYNAMO
        torch_export(module, args, os.path.join(folder, f"{name}.onnx"), opset=18 if dynamo else OPSET,
                     dynamo=dynamo, input_names=list(inputs), output_names=list(outputs))
        arrays.update({f"{name}/{k}": v for k, v in inputs.items()})
    np.savez(os.path.join(folder, "inputs.npz"), **arrays)


def inputs(folder: str, name: str) -> dict[str, np.ndarray]:
    """The input set saved for one model."""
    with np.load(os.path.join(folder, "inputs.npz")) as data:
        return {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith(name + "/")}


def models() -> str:
    """The cached folder holding every model above."""
    return cached("precision", build)


if __name__ == "__main__":
    main(build, models)
