"""Hand-exported VLM pipelines: what users make with ``torch.onnx.export`` (TorchScript and dynamo).

``python -m testmodels.vlm.hand_export OUTDIR`` (dev venv; OUTDIR is normally testmodels/vlm/hand) writes
one folder per pipeline, each with a ``graphlint.toml`` ``[pipeline]`` table, the HF configs the runtime
reads and an offline tokenizer, plus the graphs seeds swap in (``seed_files/``) and ``exports.json`` (every export tried; failures with
their first error line and root cause):

* ``llava_ts`` / ``llava_dynamo``: tiny LLaVA (CLIP vision + Llama text). vision = vision tower +
  feature select + projector (pixel_values [batch,3,32,32] -> [batch,16,64]), embed = the token table,
  lm = Llama taking inputs_embeds, attention_mask, position_ids -> logits. Batch really dynamic.
* ``llava_ts_pooled`` / ``llava_dynamo_pooled``: the vision graph exported the way transformers 5 hands
  it out (``get_image_features(...).pooler_output``, a per-image split) from a batch-1 example with the
  batch declared dynamic: TorchScript keeps the input dynamic but freezes the split at one image (output
  declared [16, 64]; ORT fails at batch 2, OpenVINO with 1 thread returns the batch-1 rows); dynamo
  specializes the batch to 1 and declares the input static.
* ``llava_ts_kv``: llava_ts with an LM that takes and returns the KV cache
  (past_key_values.{i}.key/value [batch, kv_heads, past, head_dim]; the runner feeds an empty past sized
  from config.json, as a user's generate loop does at the prompt step).
* ``qwen2vl_ts``: Qwen2-VL vision encoder (eager attention; with torch 2.13 / transformers 5.25 the dynamo
  exporter fails on it with SDPA and with eager (data-dependent guard), TorchScript exports both; see exports.json)
  exported by TorchScript at one image size (8x8 patches), the embedding table, and the text model
  taking inputs_embeds and M-RoPE position ids [3, batch, seq].

Models come from tiny random configs, seeded (:func:`llava_model`, :func:`qwen_model` rebuild the same
weights for the truth runner's PyTorch reference). Nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
HAND = os.path.join(HERE, "hand")
OPSET_TS = 17
OPSET_DYNAMO = 18
VOCAB = 256
LLAVA_IMAGE = 32  # crop size; patch 8 -> 16 rows after dropping CLS
QWEN_GRID = 8  # export-time patch grid (8x8 patches of 4 px = a 32x32 image) -> 16 rows after 2x2 merge
SPECIALS = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
LLAVA_TOKENS = {"<image>": 255}
QWEN_TOKENS = {"<|vision_start|>": 248, "<|vision_end|>": 249, "<|image_pad|>": 250, "<|video_pad|>": 251,
               "<|im_start|>": 252, "<|im_end|>": 253, "<|endoftext|>": 254}
WORDS = ["USER", "ASSISTANT", ":", "what", "is", "in", "the", "picture", "?", "describe", "this", "image", "please",
         "a", "short", "caption", "system", "user", "assistant", "you", "are", "helpful", ".", ","]
PROMPTS = {"llava": ["USER: <image>\nwhat is in the picture ? ASSISTANT:",
                     "USER: <image>\ndescribe this . ASSISTANT:"],
           "qwen2vl": ["<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>what is in the picture ?"
                       "<|im_end|>\n<|im_start|>assistant\n",
                       "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>describe this image please ."
                       "<|im_end|>\n<|im_start|>assistant\n"]}


# --- tokenizer -----------------------------------------------------------------------------------

def save_tokenizer(folder: str, extra: dict[str, int], *, pad_left: bool = True) -> None:
    """A WordLevel tokenizer of exactly VOCAB ids: the arch's special tokens at their config ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = {**SPECIALS, **extra}
    vocab = dict(special)
    words = WORDS
    free = (i for i in range(VOCAB) if i not in special.values())
    for w in words:
        vocab.setdefault(w, next(free))
    for i in free:
        vocab[f"w{i}"] = i
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(list(special))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", padding_side="left" if pad_left else "right")
    fast.save_pretrained(folder)


# --- models ----------------------------------------------------------------------------------------

def llava_model(text_hidden: int = 64) -> Any:
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    cfg = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                       image_size=LLAVA_IMAGE, patch_size=8, projection_dim=32),
        text_config=LlamaConfig(vocab_size=VOCAB, hidden_size=text_hidden, intermediate_size=128, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                pad_token_id=0, bos_token_id=1, eos_token_id=2),
        image_token_index=LLAVA_TOKENS["<image>"], image_seq_length=16, vision_feature_layer=-2,
        vision_feature_select_strategy="default", pad_token_id=0)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    return LlavaForConditionalGeneration(cfg).eval()


def qwen_model(attn: str = "eager") -> Any:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    cfg = Qwen2VLConfig(
        text_config=dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                         pad_token_id=0, bos_token_id=1, eos_token_id=254),
        vision_config=dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, mlp_ratio=2, patch_size=4,
                           spatial_merge_size=2, temporal_patch_size=2, in_channels=3),
        image_token_id=QWEN_TOKENS["<|image_pad|>"], video_token_id=QWEN_TOKENS["<|video_pad|>"],
        vision_start_token_id=QWEN_TOKENS["<|vision_start|>"], vision_end_token_id=QWEN_TOKENS["<|vision_end|>"])
    for c in (cfg, cfg.vision_config, cfg.text_config):
        c._attn_implementation = attn
    torch.manual_seed(0)
    return Qwen2VLForConditionalGeneration(cfg).eval()


class LlavaVision(torch.nn.Module):
    """Vision tower + feature select + projector, batch kept (what LLaVA's merge consumes)."""

    def __init__(self, model: Any, projector: torch.nn.Module | None = None, out_dtype: torch.dtype | None = None):
        super().__init__()
        self.tower = model.model.vision_tower
        self.projector = projector or model.model.multi_modal_projector
        self.out_dtype = out_dtype

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        hidden = self.tower(pixel_values, output_hidden_states=True).hidden_states[-2][:, 1:]
        out = self.projector(hidden)
        return out if self.out_dtype is None else out.to(self.out_dtype)


class LlavaPooled(torch.nn.Module):
    """What transformers 5 hands out: get_image_features(...).pooler_output, a tuple split per image."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        out = self.model.model.get_image_features(pixel_values=pixel_values, return_dict=True).pooler_output
        return torch.stack(list(out)) if isinstance(out, (tuple, list)) else out


class Embed(torch.nn.Module):
    def __init__(self, model: Any):
        super().__init__()
        self.table = model.get_input_embeddings()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.table(input_ids)


class LM(torch.nn.Module):
    """Text model on inputs_embeds (no cache) + lm_head -> logits."""

    def __init__(self, model: Any):
        super().__init__()
        self.text = model.model.language_model
        self.head = model.lm_head

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor,
                position_ids: torch.Tensor) -> torch.Tensor:
        out = self.text(inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids,
                        use_cache=False)
        return self.head(out.last_hidden_state)


class LMKV(torch.nn.Module):
    """LM with a KV cache: past_key_values.{i}.key/value [batch, kv_heads, past, head_dim] in,
    logits and present.{i}.key/value out (the prompt step is fed an empty past)."""

    def __init__(self, model: Any):
        super().__init__()
        self.text = model.model.language_model
        self.head = model.lm_head
        self.layers = model.config.text_config.num_hidden_layers

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.text.config)
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.text(inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids,
                        cache=cache, use_cache=True)
        present = [t for layer in out.past_key_values.layers[: self.layers] for t in (layer.keys, layer.values)]
        return (self.head(out.last_hidden_state), *present)


def export_lm_kv(model: Any, path: str) -> None:
    text = model.config.text_config
    n, kv, hd = text.num_hidden_layers, text.num_key_value_heads, text.hidden_size // text.num_attention_heads
    past_names = [f"past_key_values.{i}.{k}" for i in range(n) for k in ("key", "value")]
    present = [f"present.{i}.{k}" for i in range(n) for k in ("key", "value")]
    emb, _ = text_args(model, seq=5)
    mask = torch.ones(2, 8, dtype=torch.int64)
    pos = torch.arange(3, 8).expand(2, 5).contiguous()
    past = [torch.randn(2, kv, 3, hd) for _ in past_names]
    axes = {**LM_AXES, "attention_mask": {0: "batch", 1: "total"}}
    axes |= {name: {0: "batch", 2: "past"} for name in past_names} | {name: {0: "batch", 2: "total"} for name in present}
    export(LMKV(model), (emb, mask, pos, *past), path, dynamo=False,
           names=["inputs_embeds", "attention_mask", "position_ids", *past_names], outputs=["logits", *present],
           axes=axes, what="llava language model with past key values (inputs_embeds)")


class QwenVision(torch.nn.Module):
    def __init__(self, model: Any, out_dtype: torch.dtype | None = None):
        super().__init__()
        self.visual = model.model.visual
        self.out_dtype = out_dtype

    def forward(self, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        out = self.visual(pixel_values, grid_thw=grid_thw).pooler_output
        return out if self.out_dtype is None else out.to(self.out_dtype)


# --- export --------------------------------------------------------------------------------------

ATTEMPTS: list[dict[str, Any]] = []  # every export tried, failures with their first error line


def _line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:500]


def export(module: torch.nn.Module, args: tuple, path: str, *, dynamo: bool, names: list[str], outputs: list[str],
           axes: dict[str, dict[int, str]], what: str) -> bool:
    """torch.onnx.export one way; a failure is recorded (command and first error line), not raised."""
    module.eval()
    cmd = (f"torch.onnx.export({what}, dynamo={dynamo}, opset_version={OPSET_DYNAMO if dynamo else OPSET_TS}, "
           f"dynamic_{'shapes' if dynamo else 'axes'}=...)")
    try:
        with torch.no_grad():
            if dynamo:
                shapes = {n: {a: torch.export.Dim(s, min=1 if s != "seq" else 2) for a, s in axes.get(n, {}).items()}
                          or None for n in names}
                sig = list(__import__("inspect").signature(module.forward).parameters)
                prog = torch.onnx.export(module, args, dynamo=True, opset_version=OPSET_DYNAMO, input_names=names,
                                         output_names=outputs, dynamic_shapes=dict(zip(sig, shapes.values(), strict=True)),
                                         external_data=False, optimize=True, verbose=False)
                prog.save(path, external_data=False)
            else:
                torch.onnx.export(module, args, path, dynamic_axes=axes, dynamo=False, opset_version=OPSET_TS,
                                  input_names=names, output_names=outputs)
        ATTEMPTS.append({"what": what, "command": cmd, "ok": True})
        return True
    except Exception as exc:  # the exporters' own failures are data here
        root = exc
        while root.__cause__ is not None:  # the dynamo exporter wraps torch.export's own error
            root = root.__cause__
        ATTEMPTS.append({"what": what, "command": cmd, "ok": False, "error": _line(exc), "cause": _line(root)})
        traceback.print_exc(limit=1)
        return False


def write_toml(folder: str, name: str, stages: list[tuple[str, str, str]], edges: list[tuple[str, str, bool]],
               processor: str = "processor_config.json") -> None:
    lines = ["[pipeline]", f'name = "{name}"', 'config = "config.json"', f'processor = "{processor}"']
    for sname, model, role in stages:
        lines += ["", "[[pipeline.stage]]", f'name = "{sname}"', f'model = "{model}"', f'role = "{role}"']
    for src, dst, merge in edges:
        lines += ["", "[[pipeline.edge]]", f'from = "{src}"', f'to = "{dst}"']
        if merge:
            lines.append('merge = "image_tokens"')
    with open(os.path.join(folder, "graphlint.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def text_args(model: Any, seq: int = 24) -> tuple:
    hidden = model.config.text_config.hidden_size
    torch.manual_seed(1)
    emb = torch.randn(2, seq, hidden)
    mask = torch.ones(2, seq, dtype=torch.int64)
    return emb, mask


def save_llava_configs(folder: str, model: Any) -> None:
    from transformers import CLIPImageProcessor, GenerationConfig, LlavaProcessor, PreTrainedTokenizerFast

    save_tokenizer(folder, LLAVA_TOKENS)
    model.config.save_pretrained(folder)
    GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0, max_new_tokens=8).save_pretrained(folder)
    image = CLIPImageProcessor(size={"shortest_edge": LLAVA_IMAGE}, crop_size={"height": LLAVA_IMAGE, "width": LLAVA_IMAGE})
    proc = LlavaProcessor(image_processor=image, tokenizer=PreTrainedTokenizerFast.from_pretrained(folder),
                          patch_size=8, vision_feature_select_strategy="default", num_additional_image_tokens=1)
    proc.save_pretrained(folder)


LLAVA_STAGES = [("vision", "vision.onnx", "vision"), ("embed", "embed.onnx", "text_embeddings"),
                ("lm", "lm.onnx", "language_model")]
LLAVA_EDGES = [("vision:image_features", "lm:inputs_embeds", True), ("embed:inputs_embeds", "lm:inputs_embeds", False)]
LM_AXES = {"inputs_embeds": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
           "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}


def build_llava(out: str, dynamo: bool) -> None:
    model = llava_model()
    tag = "dynamo" if dynamo else "ts"
    folder = os.path.join(out, f"llava_{tag}")
    os.makedirs(folder, exist_ok=True)
    save_llava_configs(folder, model)
    pv = torch.randn(2, 3, LLAVA_IMAGE, LLAVA_IMAGE)
    export(LlavaVision(model), (pv,), os.path.join(folder, "vision.onnx"), dynamo=dynamo, names=["pixel_values"],
           outputs=["image_features"], axes={"pixel_values": {0: "batch"}, "image_features": {0: "batch"}},
           what="llava vision tower + projector")
    ids = torch.randint(4, 200, (2, 24))
    export(Embed(model), (ids,), os.path.join(folder, "embed.onnx"), dynamo=dynamo, names=["input_ids"],
           outputs=["inputs_embeds"], axes={"input_ids": {0: "batch", 1: "seq"}, "inputs_embeds": {0: "batch", 1: "seq"}},
           what="llava embed_tokens")
    emb, mask = text_args(model)
    pos = torch.arange(24).expand(2, 24).contiguous()
    export(LM(model), (emb, mask, pos), os.path.join(folder, "lm.onnx"), dynamo=dynamo,
           names=["inputs_embeds", "attention_mask", "position_ids"], outputs=["logits"], axes=LM_AXES,
           what="llava language model (inputs_embeds)")
    write_toml(folder, f"llava-{tag}", LLAVA_STAGES, LLAVA_EDGES)
    # The pooled variant shares embed/lm with its exporter's folder; only the vision graph differs.
    pooled = os.path.join(out, f"llava_{tag}_pooled")
    os.makedirs(pooled, exist_ok=True)
    save_llava_configs(pooled, model)
    for f in ("embed.onnx", "lm.onnx"):
        shutil.copy(os.path.join(folder, f), os.path.join(pooled, f))
    export(LlavaPooled(model), (pv[:1],), os.path.join(pooled, "vision.onnx"), dynamo=dynamo,
           names=["pixel_values"], outputs=["image_features"], axes={"pixel_values": {0: "batch"}},
           what="llava get_image_features().pooler_output, batch-1 example, batch declared dynamic")
    write_toml(pooled, f"llava-{tag}-pooled", LLAVA_STAGES, LLAVA_EDGES)
    if not dynamo:
        kv = os.path.join(out, "llava_ts_kv")
        os.makedirs(kv, exist_ok=True)
        save_llava_configs(kv, model)
        for f in ("vision.onnx", "embed.onnx"):
            shutil.copy(os.path.join(folder, f), os.path.join(kv, f))
        export_lm_kv(model, os.path.join(kv, "lm.onnx"))
        write_toml(kv, "llava-ts-kv", LLAVA_STAGES, LLAVA_EDGES)
    llava_seed_graphs(out, model, dynamo)


def llava_seed_graphs(out: str, model: Any, dynamo: bool) -> None:
    """Graphs the seeds swap in: a projector for another width, an f16 vision output."""
    from transformers.models.llava.modeling_llava import LlavaMultiModalProjector

    tag = "dynamo" if dynamo else "ts"
    pv = torch.randn(2, 3, LLAVA_IMAGE, LLAVA_IMAGE)
    axes = {"pixel_values": {0: "batch"}, "image_features": {0: "batch"}}
    for width in (96, 48):
        other = llava_model(text_hidden=width)
        torch.manual_seed(2)
        proj = LlavaMultiModalProjector(other.config).eval()
        d = os.path.join(out, "seed_files", f"llava_{tag}_proj{width}")
        os.makedirs(d, exist_ok=True)
        export(LlavaVision(model, projector=proj), (pv,), os.path.join(d, "vision.onnx"), dynamo=dynamo,
               names=["pixel_values"], outputs=["image_features"], axes=axes, what=f"llava vision, projector to {width}")
    d = os.path.join(out, "seed_files", f"llava_{tag}_f16")
    os.makedirs(d, exist_ok=True)
    export(LlavaVision(model, out_dtype=torch.float16), (pv,), os.path.join(d, "vision.onnx"), dynamo=dynamo,
           names=["pixel_values"], outputs=["image_features"], axes=axes, what="llava vision, f16 output")


QWEN_PROCESSOR = {"min_pixels": 16 * 16, "max_pixels": 64 * 64, "patch_size": 4, "merge_size": 2,
                  "temporal_patch_size": 2}


def save_qwen_configs(folder: str, model: Any) -> None:
    from transformers import GenerationConfig
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    save_tokenizer(folder, QWEN_TOKENS)
    model.config.save_pretrained(folder)
    GenerationConfig(bos_token_id=1, eos_token_id=254, pad_token_id=0, max_new_tokens=8).save_pretrained(folder)
    p = QWEN_PROCESSOR
    image = Qwen2VLImageProcessorPil(size={"shortest_edge": p["min_pixels"], "longest_edge": p["max_pixels"]},
                                     patch_size=p["patch_size"], merge_size=p["merge_size"],
                                     temporal_patch_size=p["temporal_patch_size"])
    # Qwen2VLProcessor insists on a video processor, which needs torchvision (absent here): the image
    # processor is saved alone (preprocessor_config.json) and the runner expands the placeholder as
    # Qwen2VLProcessor.replace_image_token does.
    image.save_pretrained(folder)


def qwen_vision_args(grid: int = QWEN_GRID) -> tuple:
    torch.manual_seed(3)
    return torch.randn(grid * grid, 3 * 2 * 4 * 4), torch.tensor([[1, grid, grid]])


VISION_Q = {"pixel_values": {0: "patches"}, "image_grid_thw": {0: "images"}, "image_embeds": {0: "rows"}}


def build_qwen(out: str) -> None:
    folder = os.path.join(out, "qwen2vl_ts")
    os.makedirs(folder, exist_ok=True)
    args = qwen_vision_args()
    # The default attention first (SDPA): whatever each exporter makes of it is recorded.
    sdpa = qwen_model("sdpa")
    for dynamo in (False, True):
        export(QwenVision(sdpa), args, os.path.join("/tmp", f"qwen_vision_sdpa_{int(dynamo)}.onnx"), dynamo=dynamo,
               names=["pixel_values", "image_grid_thw"], outputs=["image_embeds"], axes=VISION_Q,
               what="qwen2-vl visual (attn_implementation=sdpa)")
    model = qwen_model("eager")
    save_qwen_configs(folder, model)
    export(QwenVision(model), args, os.path.join(folder, "vision.onnx"), dynamo=False,
           names=["pixel_values", "image_grid_thw"], outputs=["image_embeds"], axes=VISION_Q,
           what="qwen2-vl visual (eager)")
    export(QwenVision(model), args, os.path.join("/tmp", "qwen_vision_eager_dynamo.onnx"), dynamo=True,
           names=["pixel_values", "image_grid_thw"], outputs=["image_embeds"], axes=VISION_Q,
           what="qwen2-vl visual (eager)")
    ids = torch.randint(4, 200, (2, 24))
    export(Embed(model), (ids,), os.path.join(folder, "embed.onnx"), dynamo=False, names=["input_ids"],
           outputs=["inputs_embeds"], axes={"input_ids": {0: "batch", 1: "seq"}, "inputs_embeds": {0: "batch", 1: "seq"}},
           what="qwen2-vl embed_tokens")
    emb, mask = text_args(model)
    pos = torch.arange(24).expand(3, 2, 24).contiguous()
    axes = {**LM_AXES, "position_ids": {1: "batch", 2: "seq"}}
    export(LM(model), (emb, mask, pos), os.path.join(folder, "lm.onnx"), dynamo=False,
           names=["inputs_embeds", "attention_mask", "position_ids"], outputs=["logits"], axes=axes,
           what="qwen2-vl language model (inputs_embeds, M-RoPE position_ids [3,batch,seq])")
    export(LM(model), (emb, mask, pos), os.path.join("/tmp", "qwen_lm_dynamo.onnx"), dynamo=True,
           names=["inputs_embeds", "attention_mask", "position_ids"], outputs=["logits"], axes=axes,
           what="qwen2-vl language model (inputs_embeds, M-RoPE position_ids [3,batch,seq])")
    write_toml(folder, "qwen2vl-ts", [("vision", "vision.onnx", "vision"), ("embed", "embed.onnx", "text_embeddings"),
                                      ("lm", "lm.onnx", "language_model")],
               [("vision:image_embeds", "lm:inputs_embeds", True), ("embed:inputs_embeds", "lm:inputs_embeds", False)],
               processor="preprocessor_config.json")
    d = os.path.join(out, "seed_files", "qwen2vl_ts_f16")
    os.makedirs(d, exist_ok=True)
    export(QwenVision(model, out_dtype=torch.float16), args, os.path.join(d, "vision.onnx"), dynamo=False,
           names=["pixel_values", "image_grid_thw"], outputs=["image_embeds"], axes=VISION_Q,
           what="qwen2-vl visual (eager), f16 output")


def build(out: str, only: Callable[[str], bool] = lambda _: True) -> None:
    ATTEMPTS.clear()
    if only("llava_ts"):
        build_llava(out, dynamo=False)
    if only("llava_dynamo"):
        build_llava(out, dynamo=True)
    if only("qwen2vl_ts"):
        build_qwen(out)
    with open(os.path.join(out, "exports.json"), "w") as f:
        json.dump(ATTEMPTS, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else HAND
    names = set(sys.argv[2:])
    build(target, (lambda n: n in names) if names else (lambda _: True))
