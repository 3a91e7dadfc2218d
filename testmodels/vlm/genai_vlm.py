"""onnxruntime-genai and a multimodal folder: what its model builder (0.18.0) makes of a tiny Qwen2.5-VL.

Run in the genai venv (testmodels/pipelines/requirements/genai.txt; ``bash testmodels/pipelines/build.sh``
makes it as .venvs/genai):

    .venvs/genai/bin/python -m testmodels.vlm.genai_vlm testmodels/vlm/genai

A seeded random Qwen2_5_VLForConditionalGeneration checkpoint (tiny config, word-level tokenizer made
here; nothing from a hub) is built with
``python -m onnxruntime_genai.models.builder -i HF -o OUT -p fp32 -e cpu --extra_options exclude_embeds=true``.
The builder writes the TEXT part only (builders/qwen.py Qwen25VLTextModel: inputs_embeds, attention_mask,
M-RoPE position_ids [3, batch, seq], GroupQueryAttention with MRotaryEmbedding) and a genai_config.json
whose "model" has a "decoder" section and no "vision" / "embedding" sections; onnxruntime-genai's runtime
has a Qwen2_5_VL pipeline model, but the builder does not export the vision encoder or the embedding.

Then the issue-36 claims about this text model are checked against PyTorch (the same checkpoint's
language model + lm_head, eager attention):
* OpenVINO: ``ov.convert_model(model.onnx)`` and compile on CPU (f32 hint), result recorded;
* ORT on a padded batch of two (left padding, as a batched prompt is fed) and on each row alone: max
  |logits - PyTorch| at the attended positions.
The folder is then completed by hand (vision.onnx and embedding.onnx, TorchScript, eager attention;
"vision" and "embedding" sections in genai_config.json), loaded by onnxruntime-genai and run on a one-image
prompt at the vision graph's export size and at twice its width.
Writes OUT/qwen2_5_vl/ (model.onnx, model.onnx.data, vision.onnx, embedding.onnx, genai_config.json) and
OUT/truth.json (which parts the builder made, the engine outcomes).
Must not import graphlint (not installed in that venv).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from typing import Any

import numpy as np
import torch

VOCAB = 256
ATOL = 1e-3
KEEP = ("model.onnx", "model.onnx.data", "genai_config.json")


def checkpoint(out: str) -> Any:
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(0)
    cfg = tf.Qwen2_5_VLConfig(
        text_config=dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}, pad_token_id=0,
                         bos_token_id=1, eos_token_id=254, tie_word_embeddings=False),
        vision_config=dict(depth=2, hidden_size=32, out_hidden_size=64, intermediate_size=64, num_heads=4,
                           patch_size=4, spatial_merge_size=2, temporal_patch_size=2, in_channels=3, window_size=16,
                           fullatt_block_indexes=[1]),
        image_token_id=250, video_token_id=251, vision_start_token_id=248, vision_end_token_id=249)
    cfg.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    for c in (cfg, cfg.text_config, cfg.vision_config):
        c._attn_implementation = "eager"
    model = tf.Qwen2_5_VLForConditionalGeneration(cfg).eval()
    model.save_pretrained(out, safe_serialization=True)
    special = {"<|vision_start|>": 248, "<|vision_end|>": 249, "<|image_pad|>": 250, "<|video_pad|>": 251,
               "<|im_start|>": 252, "<|im_end|>": 253, "<|endoftext|>": 254}
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3} | special
    vocab |= {f"t{i}": i for i in range(VOCAB) if i not in vocab.values()}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tf.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                               unk_token="<unk>").save_pretrained(out)
    return model


def build(hf: str, out: str, cache: str) -> list[str]:
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf, "-o", out, "-p", "fp32", "-e", "cpu",
           "-c", cache, "--extra_options", "exclude_embeds=true"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for name in os.listdir(out):
        if name not in KEEP:
            os.remove(os.path.join(out, name))
    return ["python", "-m", "onnxruntime_genai.models.builder", "-i", "HF", "-o", "OUT", *cmd[7:-4],
            "--extra_options", "exclude_embeds=true"]


def batch(model: Any, side: str = "left") -> dict[str, np.ndarray]:
    """Two text rows, the second padded by 3 on ``side``: inputs_embeds from the checkpoint's own table."""
    torch.manual_seed(5)
    ids = torch.randint(4, 240, (2, 10))
    mask = torch.ones(2, 10, dtype=torch.int64)
    pad = slice(0, 3) if side == "left" else slice(7, 10)
    ids[1, pad] = 0
    mask[1, pad] = 0
    pos = (mask.cumsum(-1) - 1).clamp(min=0)  # text-only M-RoPE: the same index on all three axes
    with torch.no_grad():
        emb = model.get_input_embeddings()(ids)
    return {"input_ids": ids.numpy(), "inputs_embeds": emb.numpy(), "attention_mask": mask.numpy(),
            "position_ids": pos.expand(3, 2, 10).contiguous().numpy()}


def torch_logits(model: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
    with torch.no_grad():
        out = model.model.language_model(inputs_embeds=torch.from_numpy(feeds["inputs_embeds"]),
                                         attention_mask=torch.from_numpy(feeds["attention_mask"]),
                                         position_ids=torch.from_numpy(feeds["position_ids"]), use_cache=False)
        return model.lm_head(out.last_hidden_state).numpy()


def ort_feeds(path: str, feeds: dict[str, np.ndarray], cfg: dict) -> dict[str, np.ndarray]:
    dec = cfg["model"]["decoder"]
    b = feeds["inputs_embeds"].shape[0]
    past = np.zeros((b, dec["num_key_value_heads"], 0, dec["head_size"]), np.float32)
    out = {k: feeds[k] for k in ("inputs_embeds", "attention_mask", "position_ids")}
    for i in range(dec["num_hidden_layers"]):
        out[dec["inputs"]["past_key_names"] % i] = past
        out[dec["inputs"]["past_value_names"] % i] = past
    return out


GRID = 8  # export-time patch grid of the hand-exported vision graph (a 32x32 image)


class Vision(torch.nn.Module):
    def __init__(self, model: Any):
        super().__init__()
        self.visual = model.model.visual

    def forward(self, pixel_values: torch.Tensor, image_grid_thw: torch.Tensor) -> torch.Tensor:
        return self.visual(pixel_values, grid_thw=image_grid_thw).pooler_output


class Embedding(torch.nn.Module):
    """genai's embedding stage: token table + the image rows scattered in at the image-token positions."""

    def __init__(self, model: Any):
        super().__init__()
        self.table = model.get_input_embeddings()
        self.image_token_id = model.config.image_token_id

    def forward(self, input_ids: torch.Tensor, image_features: torch.Tensor) -> torch.Tensor:
        embeds = self.table(input_ids)
        mask = (input_ids == self.image_token_id).unsqueeze(-1).expand_as(embeds)
        return embeds.masked_scatter(mask, image_features.to(embeds.dtype))


def complete(model: Any, folder: str, cfg: dict) -> dict[str, Any]:
    """The parts the builder does not make, exported by hand (TorchScript; eager attention) and named in
    genai_config.json's "vision" and "embedding" sections (the section keys onnxruntime-genai 0.18 reads:
    it loads vision.filename once they are present)."""
    torch.manual_seed(3)
    pv, grid = torch.randn(GRID * GRID, 3 * 2 * 4 * 4), torch.tensor([[1, GRID, GRID]])
    made = {}
    with torch.no_grad():
        feats = Vision(model)(pv, grid)
        ids = torch.tensor([[252, 5, 248] + [250] * feats.shape[0] + [249, 6, 253]])  # one image's placeholders
        for name, module, args, inputs, outputs, axes in (
            ("vision.onnx", Vision(model), (pv, grid), ["pixel_values", "image_grid_thw"], ["image_features"],
             {"pixel_values": {0: "patches"}, "image_grid_thw": {0: "images"}, "image_features": {0: "rows"}}),
            ("embedding.onnx", Embedding(model), (ids, feats), ["input_ids", "image_features"],
             ["inputs_embeds"], {"input_ids": {0: "batch", 1: "seq"}, "image_features": {0: "rows"},
                                 "inputs_embeds": {0: "batch", 1: "seq"}})):
            try:
                torch.onnx.export(module.eval(), args, os.path.join(folder, name), dynamo=False, opset_version=17,
                                  input_names=inputs, output_names=outputs, dynamic_axes=axes)
                made[name] = "torch.onnx.export(dynamo=False, opset 17)"
            except Exception as exc:
                made[name] = "fails: " + first_line(exc)
    cfg["model"]["vision"] = {"filename": "vision.onnx", "spatial_merge_size": 2,
                              "inputs": {"pixel_values": "pixel_values", "image_grid_thw": "image_grid_thw"},
                              "outputs": {"image_features": "image_features"}}
    cfg["model"]["embedding"] = {"filename": "embedding.onnx",
                                 "inputs": {"input_ids": "input_ids", "image_features": "image_features"},
                                 "outputs": {"inputs_embeds": "inputs_embeds"}}
    with open(os.path.join(folder, "genai_config.json"), "w") as f:
        json.dump(cfg, f, indent=4)
    return made


def genai_load(folder: str) -> str:
    """What onnxruntime-genai itself says when it loads the folder."""
    import onnxruntime_genai as og

    try:
        return "loads: model.type " + og.Model(folder).type
    except Exception as exc:
        return "fails: " + first_line(exc)


def genai_e2e(model: Any, folder: str) -> dict[str, str]:
    """onnxruntime-genai running the completed folder on a one-image prompt (pixel_values and image_grid_thw
    set as named inputs, the prompt with its placeholders appended), last-position logits against PyTorch."""
    import onnxruntime_genai as og

    out = {}
    og_model = og.Model(folder)
    torch.manual_seed(3)
    for w in (GRID, 2 * GRID):  # the export size, and an image twice as wide
        pv, grid = torch.randn(GRID * w, 96).numpy(), np.array([[1, GRID, w]], np.int64)
        ids = np.array([[252, 5, 248] + [250] * (GRID * w // 4) + [249, 6, 253]], np.int64)
        try:
            params = og.GeneratorParams(og_model)
            params.set_search_options(max_length=64)
            gen = og.Generator(og_model, params)
            named = og.NamedTensors()
            named["pixel_values"], named["image_grid_thw"] = pv, grid
            gen.set_inputs(named)
            gen.append_tokens(ids)
            logits = np.asarray(gen.get_output("logits")).reshape(-1, VOCAB)[-1]
            with torch.no_grad():
                ref = model(input_ids=torch.from_numpy(ids), pixel_values=torch.from_numpy(pv),
                            image_grid_thw=torch.from_numpy(grid), attention_mask=torch.ones(ids.shape, dtype=torch.int64),
                            mm_token_type_ids=torch.from_numpy((ids == 250).astype(np.int64))).logits[0, -1].numpy()
            diff = float(np.abs(logits - ref).max())
            out[f"grid_1x{GRID}x{w}"] = "ok" if diff <= ATOL else f"wrong (max |diff| {diff:.3g})"
        except Exception as exc:
            out[f"grid_1x{GRID}x{w}"] = "fails: " + first_line(exc)
    return out


def first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("Exception from")] or lines
    ops = [ln for ln in lines if "No conversion rule" in ln or "com.microsoft" in ln]  # OpenVINO's unconverted ops
    return f"{type(exc).__name__}: {' '.join(lines[:1] + ops[:3])}"[:600]


def compare(got: np.ndarray, ref: np.ndarray, mask: np.ndarray) -> float:
    return float(np.abs(got - ref)[mask.astype(bool)].max())


def main(out: str) -> None:
    import importlib.metadata as md

    import onnxruntime as ort

    folder = os.path.join(out, "qwen2_5_vl")
    os.makedirs(folder, exist_ok=True)
    truth: dict[str, Any] = {"tools": {p: md.version(p) for p in ("onnxruntime-genai", "onnxruntime", "torch",
                                                                     "transformers", "openvino")}}
    with tempfile.TemporaryDirectory() as tmp:
        model = checkpoint(os.path.join(tmp, "hf"))
        truth["builder_command"] = build(os.path.join(tmp, "hf"), os.path.join(tmp, "out"), os.path.join(tmp, "c"))
        for name in KEEP:
            shutil.copy(os.path.join(tmp, "out", name), os.path.join(folder, name))
    with open(os.path.join(folder, "genai_config.json")) as f:
        cfg = json.load(f)
    truth["builder_made"] = {"model.type": cfg["model"]["type"], "sections": sorted(k for k, v in cfg["model"].items()
                                                                                    if isinstance(v, dict))}
    path = os.path.join(folder, "model.onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    runs: dict[str, Any] = {}
    for side in ("right", "left"):
        feeds = batch(model, side)
        ref = torch_logits(model, feeds)
        got = dict(zip(names, sess.run(None, ort_feeds(path, feeds, cfg)), strict=True))["logits"]
        for row in (0, 1):
            runs[f"ort_{side}_padded_batch2_row{row}"] = compare(got[row], ref[row], feeds["attention_mask"][row])
    for row in (0, 1):  # each row alone (left-padded batch), its padding dropped: the reference for "wrong only when batched"
        keep = feeds["attention_mask"][row].astype(bool)
        one = {k: (v[:, row:row + 1, keep] if k == "position_ids" else v[row:row + 1][:, keep])
               for k, v in feeds.items() if k != "input_ids"}
        alone = dict(zip(names, sess.run(None, ort_feeds(path, one, cfg)), strict=True))["logits"]
        runs[f"ort_row{row}_alone"] = float(np.abs(alone[0] - ref[row][keep]).max())
    try:
        import openvino as ov

        compiled = ov.Core().compile_model(ov.convert_model(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        res = compiled(ort_feeds(path, feeds, cfg))
        runs["openvino_padded_batch2"] = compare(np.asarray(res["logits"]), ref, feeds["attention_mask"])
    except Exception as exc:
        runs["openvino_padded_batch2"] = "fails: " + first_line(exc)
        traceback.print_exc(limit=1)
    truth["runs"] = runs
    truth["genai_load_builder_folder"] = genai_load(folder)
    truth["hand_made"] = complete(model, folder, cfg)
    truth["genai_load_completed_folder"] = genai_load(folder)
    if truth["genai_load_completed_folder"].startswith("loads"):
        truth["genai_run_completed_folder"] = genai_e2e(model, folder)
    truth["atol"] = ATOL
    truth["outcome"] = {k: (v if isinstance(v, str) else "ok" if v <= ATOL else f"wrong (max |diff| {v:.3g})")
                        for k, v in runs.items()}
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    print(json.dumps(truth, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "genai"))
