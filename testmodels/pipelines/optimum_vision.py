"""Vision, multimodal, audio and embedding models exported by the real ``optimum-cli export onnx``.

Run in its own venv (``bash testmodels/pipelines/build.sh optimum_vision``, pins in
requirements/optimum_vision.txt) as ``python -m testmodels.pipelines.optimum_vision OUTDIR``.
Every model is built here from a tiny config with seeded random weights and saved to a scratch
folder; optimum-cli (optimum-onnx) exports it offline, then ONNX Runtime's own tools post-process
some of the files (``quantize_dynamic``, ``optimum-cli onnxruntime optimize -O2``), the way users
ship them. Only the .onnx files are kept in OUTDIR; the manifest optimum_vision.toml beside it
gives each file's input shapes as optimum's ORT runtime feeds them.

Must not import graphlint (it runs in the export venv, not the dev one).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testmodels.pipelines.manifest import Model, Shapes, models_text

NAME = "optimum_vision"
SEED = 0
IMG = 32  # ViT-family image_size: position tables are fixed at IMG x IMG (see Model.kind texts)
TOOLS = ("optimum-onnx", "optimum", "transformers", "torch", "onnx", "onnxruntime", "sentence-transformers",
         "tokenizers", "huggingface-hub", "accelerate", "numpy")
HELDOUT = {"siglip", "sam", "wav2vec2"}  # whole architectures kept away from rule tuning



# ---------------------------------------------------------------- source models (random weights)

def _seed() -> None:
    import torch
    import transformers

    torch.manual_seed(SEED)
    transformers.set_seed(SEED)


def _vit_cfg(**kw: Any) -> Any:
    import transformers as T

    return T.ViTConfig(image_size=IMG, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, **kw)


def _image_processor(d: Path, size: int = IMG) -> None:
    import transformers as T

    T.ViTImageProcessor(size={"height": size, "width": size}).save_pretrained(d)


def _bert_tokenizer(d: Path, words: int = 120) -> int:
    """A WordPiece tokenizer over a made-up vocabulary; returns the vocabulary size."""
    import transformers as T

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(words)]
    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    T.BertTokenizerFast(vocab_file=str(d / "vocab.txt")).save_pretrained(d)
    return len(vocab)


def src_vit(d: Path) -> None:
    import transformers as T

    _seed()
    T.ViTForImageClassification(_vit_cfg(num_labels=3)).eval().save_pretrained(d)
    _image_processor(d)


def src_ved(d: Path) -> None:
    """ViT encoder + GPT2 decoder with cross-attention (the TrOCR / ViT-GPT2 captioning layout)."""
    import transformers as T

    _seed()
    dec = T.GPT2Config(vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=2, add_cross_attention=True,
                       bos_token_id=0, eos_token_id=0, pad_token_id=1)
    cfg = T.VisionEncoderDecoderConfig.from_encoder_decoder_configs(_vit_cfg(), dec)
    cfg.decoder_start_token_id, cfg.pad_token_id, cfg.eos_token_id = 0, 1, 0
    T.VisionEncoderDecoderModel(config=cfg).eval().save_pretrained(d)
    _image_processor(d)


_TEXT = dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
             max_position_embeddings=16)
_VISION = dict(image_size=IMG, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=2)


def src_clip(d: Path) -> None:
    import transformers as T

    _seed()
    cfg = T.CLIPConfig(text_config={**_TEXT, "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1},
                       vision_config=_VISION, projection_dim=16)
    T.CLIPModel(cfg).eval().save_pretrained(d)


def src_siglip(d: Path) -> None:
    import transformers as T

    _seed()
    T.SiglipModel(T.SiglipConfig(text_config=_TEXT, vision_config=_VISION)).eval().save_pretrained(d)


def src_detr(d: Path) -> None:
    """DETR on a transformers ResNet backbone (use_timm_backbone=False: no timm, no pretrained download)."""
    import transformers as T

    _seed()
    backbone = T.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic",
                              out_features=["stage2"])
    cfg = T.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone=None,
                       backbone_config=backbone, d_model=32, encoder_layers=1, decoder_layers=1,
                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                       decoder_ffn_dim=64, num_queries=10, num_labels=3)
    T.DetrForObjectDetection(cfg).eval().save_pretrained(d)


def src_sam(d: Path) -> None:
    import transformers as T

    _seed()
    vision = T.SamVisionConfig(hidden_size=32, output_channels=16, num_hidden_layers=2, num_attention_heads=2,
                               image_size=64, patch_size=16, mlp_dim=64, window_size=2, global_attn_indexes=[1],
                               num_pos_feats=8)
    prompt = T.SamPromptEncoderConfig(hidden_size=16, image_size=64, patch_size=16, mask_input_channels=4)
    decoder = T.SamMaskDecoderConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, mlp_dim=32,
                                     iou_head_hidden_dim=16)
    cfg = T.SamConfig(vision_config=vision.to_dict(), prompt_encoder_config=prompt.to_dict(),
                      mask_decoder_config=decoder.to_dict())
    T.SamModel(cfg).eval().save_pretrained(d)


def src_wav2vec2(d: Path) -> None:
    import transformers as T

    _seed()
    cfg = T.Wav2Vec2Config(vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                           num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, num_labels=3,
                           classifier_proj_size=16)
    T.Wav2Vec2ForSequenceClassification(cfg).eval().save_pretrained(d)
    T.Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000).save_pretrained(d)


def src_ast(d: Path) -> None:
    import transformers as T

    _seed()
    cfg = T.ASTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                      patch_size=16, frequency_stride=10, time_stride=10, max_length=64, num_mel_bins=16,
                      num_labels=3)
    T.ASTForAudioClassification(cfg).eval().save_pretrained(d)
    T.ASTFeatureExtractor(num_mel_bins=16, max_length=64).save_pretrained(d)


def src_sbert(d: Path) -> None:
    """A sentence-transformers model (BERT + mean pooling + normalize), saved locally."""
    import transformers as T
    from sentence_transformers import SentenceTransformer, models

    _seed()
    raw = d.parent / (d.name + "_hf")
    vocab = _bert_tokenizer(raw)
    cfg = T.BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=64)
    T.BertModel(cfg).eval().save_pretrained(raw)
    word = models.Transformer(str(raw), max_seq_length=32)
    st = SentenceTransformer(modules=[word, models.Pooling(32, "mean"), models.Normalize()], device="cpu")
    st.save(str(d))


def src_mpnet(d: Path) -> None:
    import transformers as T

    _seed()
    cfg = T.MPNetConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=66)  # 32 buckets: compute_position_bias hard-codes 32
    T.MPNetModel(cfg).eval().save_pretrained(d)


# ---------------------------------------------------------------- tools

def run(cmd: list[str]) -> None:
    """Run a real tool offline; its output goes to our stderr, a failure stops the build."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0"}
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, env=env)


def cli() -> str:
    return str(Path(sys.executable).with_name("optimum-cli"))


def export(src: Path, out: Path, task: str, *extra: str) -> str:
    """optimum-cli export onnx; returns the command as the manifest records it (folders elided)."""
    args = ["export", "onnx", "--task", task, *extra]
    run([cli(), *args, "--model", str(src), str(out)])
    return "optimum-cli " + " ".join(args)


def quantize(src: Path, dst: Path) -> str:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)
    return "onnxruntime.quantization.quantize_dynamic(weight_type=QuantType.QInt8)"


def optimize_o2(export_dir: Path, out: Path) -> str:
    args = ["onnxruntime", "optimize", "-O2"]
    run([cli(), *args, "--onnx_model", str(export_dir), "-o", str(out)])
    return "optimum-cli " + " ".join(args)


def onnx_inputs(path: Path) -> list[str]:
    import onnx

    return [i.name for i in onnx.load(str(path), load_external_data=False).graph.input]


# ---------------------------------------------------------------- the corpus

def img(b: int, s: int = IMG) -> list[int]:
    return [b, 3, s, s]


def build(outdir: Path, work: Path, only: set[str] | None) -> list[Model]:
    models: list[Model] = []

    def keep(exp: Path, name: str, sub: str) -> str:
        (outdir / sub).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(exp / name, outdir / sub / name)
        return f"{sub}/{name}"

    def step(key: str, fn: Callable[[], None]) -> None:
        if only is None or key in only:
            fn()

    def vit() -> None:
        src, exp = work / "src_vit", work / "vit"
        src_vit(src)
        cmd = export(src, exp, "image-classification")
        kind = (f"ViT image classifier (image_size {IMG}, patch 8): optimum declares height/width dynamic but the "
                f"position table fixes them at {IMG}x{IMG}; alt run is batch 2 at {IMG}x{IMG}")
        m = Model("pl_optimum_vision_vit_cls", keep(exp, "model.onnx", "vit"), cmd, kind, "vit",
                  {"pixel_values": img(1)}, {"pixel_values": img(2)})
        models.append(m)
        qdir = outdir / "vit_int8"
        qdir.mkdir(parents=True, exist_ok=True)
        qcmd = quantize(exp / "model.onnx", qdir / "model_quantized.onnx")
        models.append(Model("pl_optimum_vision_vit_cls_int8", "vit_int8/model_quantized.onnx", f"{cmd}; {qcmd}",
                            "ViT image classifier, ORT dynamic int8 quantization (DynamicQuantizeLinear + "
                            "MatMulInteger) of the optimum export", "vit", m.shapes, m.alt_shapes))
        opt = work / "vit_o2"
        ocmd = optimize_o2(exp, opt)
        models.append(Model("pl_optimum_vision_vit_cls_o2", keep(opt, "model_optimized.onnx", "vit_o2"),
                            f"{cmd}; {ocmd}", "ViT image classifier after ORT's transformer optimizer at -O2 "
                            "(fused com.microsoft Attention / SkipLayerNormalization / FastGelu)", "vit",
                            m.shapes, m.alt_shapes))

    def ved() -> None:
        src, exp = work / "src_ved", work / "ved"
        src_ved(src)
        cmd = export(src, exp, "image-to-text-with-past")
        enc_seq = (IMG // 8) ** 2 + 1
        models.append(Model("pl_optimum_vision_ved_encoder", keep(exp, "encoder_model.onnx", "vit_gpt2"), cmd,
                            "VisionEncoderDecoder (ViT + GPT2) image encoder", "ved",
                            {"pixel_values": img(1)}, {"pixel_values": img(2)}))
        merged = exp / "decoder_model_merged.onnx"
        name = merged.name if merged.exists() else "decoder_with_past_model.onnx"
        base: Shapes = {}
        alt: Shapes = {}
        for i in onnx_inputs(exp / name):
            if i in ("input_ids", "decoder_input_ids"):
                base[i], alt[i] = [1, 4], [2, 1]
            elif i == "encoder_hidden_states":
                base[i], alt[i] = [1, enc_seq, 32], [2, enc_seq, 32]
            elif i.endswith((".key", ".value")):
                past = enc_seq if ".encoder." in i else 4
                base[i], alt[i] = [1, 2, 0, 16], [2, 2, past, 16]
            elif i == "use_cache_branch":
                base[i] = alt[i] = [1]
            else:
                raise SystemExit(f"ved decoder: unexpected input {i}")
        m = Model("pl_optimum_vision_ved_decoder_merged", keep(exp, name, "vit_gpt2"), cmd,
                  "VisionEncoderDecoder (ViT + GPT2) merged decoder (If on use_cache_branch). First run: prefill, "
                  "use_cache_branch=false, 4 tokens, past length 0 (optimum's ORT runtime feeds zero-length "
                  "past). Alt run is the cached step: batch 2, 1 token, self-attention past 4 (GPT2's cross-attention "
                  "re-reads encoder_hidden_states each step: no encoder past inputs); the runtime feeds "
                  "use_cache_branch=TRUE there (values below hold the first run's false; both branches run either way)",
                  "ved", base, alt, {"use_cache_branch": [False]})
        models.append(m)

    def clip() -> None:
        src, exp = work / "src_clip", work / "clip"
        src_clip(src)
        cmd = export(src, exp, "zero-shot-image-classification")
        shp = {"input_ids": [3, 8], "attention_mask": [3, 8], "pixel_values": img(1)}
        alt = {"input_ids": [5, 16], "attention_mask": [5, 16], "pixel_values": img(2)}
        ins = onnx_inputs(exp / "model.onnx")
        models.append(Model("pl_optimum_vision_clip", keep(exp, "model.onnx", "clip"), cmd,
                            "CLIP text + vision dual encoder (zero-shot: 3 labels x 8 tokens, 1 image; the text and "
                            f"image batches are separate dims); vision position table fixed at {IMG}x{IMG}", "clip",
                            {k: v for k, v in shp.items() if k in ins}, {k: v for k, v in alt.items() if k in ins}))
        qdir = outdir / "clip_int8"
        qdir.mkdir(parents=True, exist_ok=True)
        qcmd = quantize(exp / "model.onnx", qdir / "model_quantized.onnx")
        models.append(Model("pl_optimum_vision_clip_int8", "clip_int8/model_quantized.onnx", f"{cmd}; {qcmd}",
                            "CLIP dual encoder, ORT dynamic int8 quantization of the optimum export", "clip",
                            models[-1].shapes, models[-1].alt_shapes))

    def siglip() -> None:
        src, exp = work / "src_siglip", work / "siglip"
        src_siglip(src)
        cmd = export(src, exp, "zero-shot-image-classification")
        ins = onnx_inputs(exp / "model.onnx")
        # SigLIP's processor pads text to max_length (16 here): the sequence is always the table size
        shp = {"input_ids": [3, 16], "attention_mask": [3, 16], "pixel_values": img(1)}
        alt = {"input_ids": [5, 16], "attention_mask": [5, 16], "pixel_values": img(2)}
        models.append(Model("pl_optimum_vision_siglip", keep(exp, "model.onnx", "siglip"), cmd,
                            "SigLIP text + vision dual encoder (text padded to max_length 16, as its processor "
                            f"does); vision position table fixed at {IMG}x{IMG}", "siglip",
                            {k: v for k, v in shp.items() if k in ins}, {k: v for k, v in alt.items() if k in ins}))

    def detr() -> None:
        src, exp = work / "src_detr", work / "detr"
        src_detr(src)
        cmd = export(src, exp, "object-detection")
        ins = onnx_inputs(exp / "model.onnx")
        shp = {"pixel_values": [1, 3, 64, 64], "pixel_mask": [1, 64, 64]}
        alt = {"pixel_values": [2, 3, 64, 96], "pixel_mask": [2, 64, 96]}
        models.append(Model("pl_optimum_vision_detr", keep(exp, "model.onnx", "detr"), cmd,
                            "DETR object detector, transformers ResNet backbone (2 basic stages), 1+1 layers, 10 "
                            "queries; sine position embedding, so any H x W is legal", "detr",
                            {k: v for k, v in shp.items() if k in ins}, {k: v for k, v in alt.items() if k in ins}))

    def sam() -> None:
        src, exp = work / "src_sam", work / "sam"
        src_sam(src)
        cmd = export(src, exp, "feature-extraction")
        models.append(Model("pl_optimum_vision_sam_vision_encoder", keep(exp, "vision_encoder.onnx", "sam"), cmd,
                            "SAM vision encoder (split variant; image 64, patch 16, windowed + global attention)",
                            "sam", {"pixel_values": [1, 3, 64, 64]}, {"pixel_values": [2, 3, 64, 64]}))
        emb = [16, 4, 4]
        models.append(Model("pl_optimum_vision_sam_prompt_mask_decoder",
                            keep(exp, "prompt_encoder_mask_decoder.onnx", "sam"), cmd,
                            "SAM prompt encoder + mask decoder (split variant): image embeddings, points, labels",
                            "sam",
                            {"image_positional_embeddings": [1, *emb], "image_embeddings": [1, *emb],
                             "input_points": [1, 1, 1, 2], "input_labels": [1, 1, 1]},
                            {"image_positional_embeddings": [2, *emb], "image_embeddings": [2, *emb],
                             "input_points": [2, 3, 2, 2], "input_labels": [2, 3, 2]},
                            {}))

    def wav2vec2() -> None:
        src, exp = work / "src_wav2vec2", work / "wav2vec2"
        src_wav2vec2(src)
        cmd = export(src, exp, "audio-classification")
        ins = onnx_inputs(exp / "model.onnx")
        shp = {"input_values": [1, 400], "attention_mask": [1, 400]}
        alt = {"input_values": [2, 800], "attention_mask": [2, 800]}
        models.append(Model("pl_optimum_vision_wav2vec2_cls", keep(exp, "model.onnx", "wav2vec2"), cmd,
                            "Wav2Vec2 audio classifier (2 conv feature layers, 2 transformer layers, mean pooling) "
                            "on raw 16 kHz samples", "wav2vec2",
                            {k: v for k, v in shp.items() if k in ins}, {k: v for k, v in alt.items() if k in ins}))

    def ast() -> None:
        src, exp = work / "src_ast", work / "ast"
        src_ast(src)
        cmd = export(src, exp, "audio-classification")
        models.append(Model("pl_optimum_vision_ast_cls", keep(exp, "model.onnx", "ast"), cmd,
                            "Audio Spectrogram Transformer classifier on a 64-frame x 16-mel fbank (its feature "
                            "extractor pads/cuts to max_length, so frames are fixed)", "ast",
                            {"input_values": [1, 64, 16]}, {"input_values": [2, 64, 16]}))

    def sbert() -> None:
        src, exp = work / "src_sbert", work / "sbert"
        src_sbert(src)
        cmd = export(src, exp, "feature-extraction", "--library", "sentence_transformers")
        ins = onnx_inputs(exp / "model.onnx")
        shp = {"input_ids": [1, 8], "attention_mask": [1, 8], "token_type_ids": [1, 8]}
        alt = {"input_ids": [2, 16], "attention_mask": [2, 16], "token_type_ids": [2, 16]}
        shp = {k: v for k, v in shp.items() if k in ins}
        alt = {k: v for k, v in alt.items() if k in ins}
        models.append(Model("pl_optimum_vision_sbert", keep(exp, "model.onnx", "sbert"), cmd,
                            "sentence-transformers BERT (2 layers) + mean pooling + normalize: token and sentence "
                            "embeddings", "sbert", shp, alt))
        qdir = outdir / "sbert_int8"
        qdir.mkdir(parents=True, exist_ok=True)
        qcmd = quantize(exp / "model.onnx", qdir / "model_quantized.onnx")
        models.append(Model("pl_optimum_vision_sbert_int8", "sbert_int8/model_quantized.onnx", f"{cmd}; {qcmd}",
                            "sentence-transformers BERT, ORT dynamic int8 quantization of the optimum export",
                            "sbert", shp, alt))

    def mpnet() -> None:
        src, exp = work / "src_mpnet", work / "mpnet"
        src_mpnet(src)
        cmd = export(src, exp, "feature-extraction")
        ins = onnx_inputs(exp / "model.onnx")
        shp = {"input_ids": [1, 8], "attention_mask": [1, 8]}
        alt = {"input_ids": [2, 16], "attention_mask": [2, 16]}
        models.append(Model("pl_optimum_vision_mpnet", keep(exp, "model.onnx", "mpnet"), cmd,
                            "MPNet encoder (relative position buckets), feature extraction", "mpnet",
                            {k: v for k, v in shp.items() if k in ins}, {k: v for k, v in alt.items() if k in ins}))

    for key, fn in (("vit", vit), ("ved", ved), ("clip", clip), ("siglip", siglip), ("detr", detr), ("sam", sam),
                    ("wav2vec2", wav2vec2), ("ast", ast), ("sbert", sbert), ("mpnet", mpnet)):
        step(key, fn)
    return models


# ---------------------------------------------------------------- manifest

def main(argv: list[str]) -> None:
    outdir = Path(argv[0]).resolve()
    only = set(argv[1].split(",")) if len(argv) > 1 else None  # partial rebuild while developing
    if only is None and outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{NAME}_") as tmp:
        models = build(outdir, Path(tmp), only)
    outdir.with_suffix(".toml").write_text(
        models_text(f"testmodels/pipelines/{NAME}.py", {t: md.version(t) for t in TOOLS}, models, HELDOUT))  # a partial run writes a partial manifest
    for m in models:
        print(m.id, m.file, (outdir / m.file).stat().st_size, file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
