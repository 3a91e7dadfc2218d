"""onnxruntime-genai model-builder decoders: tiny random HF checkpoints, built fp32 and int4 for CPU.

Run in its own venv (``bash testmodels/pipelines/build.sh genai``):

    python -m testmodels.pipelines.genai testmodels/pipelines/genai

For each family (Llama, Qwen3, Phi-3 mini, Gemma) a seeded random checkpoint (config + safetensors +
a word-level tokenizer made here; nothing comes from a hub) is saved to a temporary folder and
built with ``python -m onnxruntime_genai.models.builder -i HF -o OUT -p {fp32,int4} -e cpu``.
The builder emits com.microsoft GroupQueryAttention (rotary fused in, so no position_ids on CPU),
SkipSimplifiedLayerNormalization / SimplifiedLayerNormalization and, at int4, MatMulNBits.
model.onnx, model.onnx.data and genai_config.json are kept; the tokenizer files the builder
copies are not.

Shapes are the ones onnxruntime-genai's own runtime feeds (seen with
``og.set_log_options(model_input_values=True)`` on these builds, onnxruntime-genai 0.18.0):
genai_config.json sets ``search.past_present_share_buffer = true`` and ``num_beams = 1``, so
the KV cache is one buffer of ``max_length`` positions fed as both past and present from the
first step on (src/models/kv_cache.cpp, DefaultKeyValueCache ctor, ``shape_[2] = max_length``;
src/generators.cpp ``IsPastPresentShareBufferEnabled``). The first step feeds the prompt
(input_ids [1, 8], attention_mask [1, 8]); the next feeds one token (input_ids [1, 1],
attention_mask [1, 9]); past_key_values.N.* are [1, kv_heads, max_length, head_size] at both.
Each build is also run two generation steps by onnxruntime-genai itself before it is kept.

The Llama and Gemma fp32 builds are also converted to OpenVINO IR the way a user would
(``ov.save_model(ov.convert_model("model.onnx"), "model.xml")``, openvino 2026.4.1): conversion
and compilation work, but the saved IR writes GroupQueryAttention (the one com.microsoft op kept
whole; the layer norms and MatMuls become opset1-8 layers) as ``version="extension"`` layers
that ``Core().read_model`` cannot create.

Must not import graphlint (it is not installed in this venv).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import torch

from testmodels.pipelines.manifest import write_manifest

PROMPT = 8  # prompt tokens at the first step
VOCAB = 256
KEEP = ("model.onnx", "model.onnx.data", "genai_config.json")
IR_FAMILIES = {"llama", "gemma"}  # fp32 builds also saved as OpenVINO IR
HELDOUT = {"gemma"}  # whole family held out (both precisions), chosen before any linting
TOOLS = ("onnxruntime-genai", "onnxruntime", "onnx", "onnx-ir", "torch", "transformers", "safetensors",
         "tokenizers", "numpy", "openvino")
MAX_FILE = 3 * 1024 * 1024


def _configs() -> dict[str, tuple[str, Any]]:
    """Family -> (HF architecture, config): hidden 64, 2 layers, 4 query / 2 KV heads (GQA)."""
    import transformers as tf

    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False)
    return {
        "llama": ("LlamaForCausalLM", tf.LlamaConfig(**common)),
        # Qwen3 adds per-head q_norm/k_norm (builders/qwen.py Qwen3Model: q_norm = k_norm = True)
        "qwen3": ("Qwen3ForCausalLM", tf.Qwen3Config(head_dim=16, **common)),
        # max == original_max_position_embeddings selects Phi3MiniModel (builder.py, Phi3ForCausalLM)
        "phi3": ("Phi3ForCausalLM", tf.Phi3Config(original_max_position_embeddings=128, **common)),
        # GemmaModel: RMSNorm weight + 1 (layernorm_attrs add_offset), scaled embeddings, tanh GELU MLP
        "gemma": ("GemmaForCausalLM", tf.GemmaConfig(head_dim=16, hidden_activation="gelu_pytorch_tanh", **common)),
    }


def _tokenizer(out: str) -> None:
    """A word-level tokenizer over the model's vocabulary; the builder loads and copies one."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3} | {f"t{i}": i for i in range(4, VOCAB)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", unk_token="<unk>")
    fast.save_pretrained(out)


def _checkpoint(arch: str, config: Any, out: str, seed: int) -> None:
    import transformers as tf

    torch.manual_seed(seed)
    config.architectures = [arch]
    getattr(tf, arch)(config).save_pretrained(out, safe_serialization=True)
    _tokenizer(out)


def _build(hf: str, out: str, precision: str, cache: str) -> list[str]:
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf, "-o", out,
           "-p", precision, "-e", "cpu", "-c", cache]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    for name in os.listdir(out):
        if name not in KEEP:
            os.remove(os.path.join(out, name))
    return cmd


def _save_ir(folder: str) -> str:
    """ONNX build -> OpenVINO IR with the defaults a user gets (fp16-compressed weights)."""
    import openvino as ov

    ov.save_model(ov.convert_model(os.path.join(folder, "model.onnx")), os.path.join(folder + "_ir", "model.xml"))
    return "ov.save_model(ov.convert_model(model.onnx), model.xml)"


def _genai_steps(folder: str) -> list[int]:
    """Two generation steps in onnxruntime-genai itself: the shapes below are the ones it feeds."""
    import onnxruntime_genai as og

    model = og.Model(folder)
    params = og.GeneratorParams(model)
    gen = og.Generator(model, params)
    gen.append_tokens([list(range(4, 4 + PROMPT))])
    for _ in range(2):
        gen.generate_next_token()
    return [int(t) for t in gen.get_sequence(0)]


def _shapes(cfg: dict) -> tuple[dict, dict]:
    dec = cfg["model"]["decoder"]
    kv = [1, dec["num_key_value_heads"], cfg["search"]["max_length"], dec["head_size"]]
    past = {}
    for i in range(dec["num_hidden_layers"]):
        for part in ("key", "value"):
            past[dec["inputs"][f"past_{part}_names"] % i] = kv
    first = {"input_ids": [1, PROMPT], "attention_mask": [1, PROMPT], **past}
    later = {"input_ids": [1, 1], "attention_mask": [1, PROMPT + 1], **past}
    return first, later


def main(outdir: str) -> None:
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    models = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed, (family, (arch, config)) in enumerate(_configs().items()):
            hf = os.path.join(tmp, family)
            _checkpoint(arch, config, hf, seed)
            for precision in ("fp32", "int4"):
                sub = f"{family}_{precision}"
                out = os.path.join(outdir, sub)
                cmd = _build(hf, out, precision, os.path.join(tmp, "cache"))
                tokens = _genai_steps(out)
                print(f"{sub}: onnxruntime-genai generated {tokens[PROMPT:]}", flush=True)
                with open(os.path.join(out, "genai_config.json")) as f:
                    first, later = _shapes(json.load(f))
                ops = "MatMulNBits int4 weights, " if precision == "int4" else ""
                models.append({
                    "id": f"pl_genai_{family}_{precision}",
                    "file": f"{sub}/model.onnx",
                    "pipeline": " ".join(["python", *cmd[1:3], "-i", f"<{arch} checkpoint>", "-o", sub,
                                          *cmd[7:11]]),
                    "kind": (f"{arch} (2 layers, hidden 64, GQA 4/2 heads) decoder with KV cache, "
                             f"{precision} CPU build: GroupQueryAttention with fused rotary, {ops}"
                             "Skip/SimplifiedLayerNormalization; past = present share one max_length buffer; "
                             "alt_shapes is the second generation step"),
                    "heldout": family in HELDOUT,
                    "shapes": first,
                    "alt_shapes": later,
                })
                if family in IR_FAMILIES and precision == "fp32":
                    call = _save_ir(out)
                    models.append({**models[-1], "id": f"pl_genai_{family}_{precision}_ir",
                                   "file": f"{sub}_ir/model.xml",
                                   "pipeline": f"{models[-1]['pipeline']}; then openvino {call}",
                                   "kind": (f"OpenVINO IR (fp16-compressed weights) of the {sub} build, "
                                            'GroupQueryAttention saved as version="extension" layers; '
                                            "same inputs, alt_shapes is the second generation step")})
    for root, _, files in os.walk(outdir):
        for name in files:
            size = os.path.getsize(os.path.join(root, name))
            if size > MAX_FILE:
                raise SystemExit(f"{os.path.join(root, name)}: {size} bytes is above {MAX_FILE}")
    tools = {t: md.version(t) for t in TOOLS}
    write_manifest(outdir.rstrip("/") + ".toml", "testmodels/pipelines/genai.py", tools, models)


if __name__ == "__main__":
    main(sys.argv[1])
