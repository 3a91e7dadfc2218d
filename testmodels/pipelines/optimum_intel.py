"""OpenVINO IR written directly by the real ``optimum-cli export openvino`` (optimum-intel).

Run in its own venv (``bash testmodels/pipelines/build.sh optimum_intel``, pins in
requirements/optimum_intel.txt) as ``python -m testmodels.pipelines.optimum_intel OUTDIR``.
Each model is built from a tiny config with seeded random weights, saved to a scratch folder and
exported offline; only the .xml/.bin pairs are kept in OUTDIR, and optimum_intel.toml beside it
gives every IR input's shape for a first and another legal run.

Weight formats: with no ``--weight-format`` optimum-intel 2.2.0 compresses weights to int8 only
for a submodel of >= 1e9 float parameters (optimum/exporters/openvino/__main__.py:897,
_MAX_UNCOMPRESSED_SIZE in utils.py:50) and otherwise saves them uncompressed
(convert.py:145: compress_to_fp16 only for ``--weight-format fp16``), so for these tiny models the
default equals ``--weight-format fp32``. The second decoder therefore asks for nncf's int8
weight compression explicitly (``--weight-format int8``: what the default does to a large model).

Must not import graphlint (it runs in the export venv, not the dev one).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from testmodels.pipelines.manifest import Model, Shapes, models_text

NAME = "optimum_intel"
SEED = 0
IMG = 32
TOOLS = ("optimum-intel", "optimum", "openvino", "openvino-tokenizers", "nncf", "transformers", "torch",
         "torchvision", "huggingface-hub", "numpy")
HELDOUT = {"llama_int8"}  # nncf-compressed weights: a configuration kept away from rule tuning



def _seed() -> None:
    import torch
    import transformers

    torch.manual_seed(SEED)
    transformers.set_seed(SEED)


def src_llama(d: Path) -> None:
    """A llama-style decoder: RMSNorm, RoPE, SwiGLU, grouped-query attention (4 heads, 2 KV heads)."""
    import transformers as T

    _seed()
    cfg = T.LlamaConfig(vocab_size=200, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    T.LlamaForCausalLM(cfg).eval().save_pretrained(d)


def src_vit(d: Path) -> None:
    import transformers as T

    _seed()
    cfg = T.ViTConfig(image_size=IMG, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, num_labels=3)
    T.ViTForImageClassification(cfg).eval().save_pretrained(d)
    T.ViTImageProcessor(size={"height": IMG, "width": IMG}).save_pretrained(d)


def src_clip(d: Path) -> None:
    import transformers as T

    _seed()
    text = dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                max_position_embeddings=16, bos_token_id=0, eos_token_id=2, pad_token_id=1)
    vision = dict(image_size=IMG, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=2)
    T.CLIPModel(T.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).eval().save_pretrained(d)


def run(cmd: list[str]) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0"}
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, env=env)


def export(src: Path, out: Path, task: str, *extra: str) -> str:
    """optimum-cli export openvino; returns the command as the manifest records it (folders elided)."""
    args = ["export", "openvino", "--task", task, *extra]
    run([str(Path(sys.executable).with_name("optimum-cli")), *args, "--model", str(src), str(out)])
    return "optimum-cli " + " ".join(args)


def ir_inputs(xml: Path) -> list[str]:
    import openvino as ov

    return [p.get_any_name() for p in ov.Core().read_model(str(xml)).inputs]


def build(outdir: Path, work: Path) -> list[Model]:
    models: list[Model] = []

    def keep(exp: Path, sub: str, name: str = "openvino_model") -> str:
        (outdir / sub).mkdir(parents=True, exist_ok=True)
        for ext in (".xml", ".bin"):
            shutil.copyfile(exp / (name + ext), outdir / sub / (name + ext))
        return f"{sub}/{name}.xml"

    def llama_shapes(xml: Path, batch: int, seq: int) -> Shapes:
        out: Shapes = {}
        for i in ir_inputs(xml):
            out[i] = [batch] if i == "beam_idx" else [batch, seq]
        return out

    llama = work / "src_llama"
    src_llama(llama)
    stateful = ("stateful: the KV cache is internal ReadValue/Assign state, inputs are input_ids, attention_mask, "
                "position_ids, beam_idx; both runs are a prefill on a fresh request (batch 1 x 8, batch 2 x 16); a "
                "decode step feeds 1 token with attention_mask over past + 1")
    for wf, group in (("fp32", "llama_fp32"), ("int8", "llama_int8")):
        exp = work / f"llama_{wf}"
        cmd = export(llama, exp, "text-generation-with-past", "--weight-format", wf)
        xml = exp / "openvino_model.xml"
        what = "fp32 weights" if wf == "fp32" else "nncf int8_asym weight compression (u8 weights + Convert/Subtract/Multiply)"
        models.append(Model(f"pl_optimum_intel_llama_{wf}", keep(exp, f"llama_{wf}"), cmd,
                            f"llama-style decoder (2 layers, GQA 4/2 heads, RoPE), {what}; {stateful}", group,
                            llama_shapes(xml, 1, 8), llama_shapes(xml, 2, 16)))

    exp = work / "llama_stateless"
    cmd = export(llama, exp, "text-generation-with-past", "--weight-format", "fp32", "--disable-stateful")
    xml = exp / "openvino_model.xml"
    base: Shapes = {}
    alt: Shapes = {}
    for i in ir_inputs(xml):
        if i.startswith("past_key_values"):
            base[i], alt[i] = [1, 2, 0, 8], [2, 2, 4, 8]
        elif i == "beam_idx":
            base[i], alt[i] = [1], [2]
        elif i == "attention_mask":
            base[i], alt[i] = [1, 8], [2, 5]
        else:
            base[i], alt[i] = [1, 8], [2, 1]
    models.append(Model("pl_optimum_intel_llama_stateless", keep(exp, "llama_stateless"), cmd,
                        "llama-style decoder, fp32, --disable-stateful: explicit past_key_values inputs [batch, 2 kv "
                        "heads, past, 8]; first run prefill (8 tokens, past 0), alt run a decode step (batch 2, "
                        "1 token, past 4, attention_mask over past + 1)", "llama_fp32", base, alt))

    src = work / "src_vit"
    src_vit(src)
    exp = work / "vit"
    cmd = export(src, exp, "image-classification")
    models.append(Model("pl_optimum_intel_vit_cls", keep(exp, "vit"), cmd,
                        f"ViT image classifier (image_size {IMG}, patch 8), default weight format (uncompressed for a "
                        f"model this small); position table fixed at {IMG}x{IMG}, alt run batch 2 at the same size",
                        "vit", {"pixel_values": [1, 3, IMG, IMG]}, {"pixel_values": [2, 3, IMG, IMG]}))

    src = work / "src_clip"
    src_clip(src)
    exp = work / "clip"
    cmd = export(src, exp, "zero-shot-image-classification")
    xml = exp / "openvino_model.xml"
    shp = {"input_ids": [3, 8], "attention_mask": [3, 8], "pixel_values": [1, 3, IMG, IMG]}
    alt = {"input_ids": [5, 16], "attention_mask": [5, 16], "pixel_values": [2, 3, IMG, IMG]}
    ins = ir_inputs(xml)
    missing = set(ins) - set(shp)
    if missing:
        raise SystemExit(f"clip IR: unexpected inputs {missing}")
    models.append(Model("pl_optimum_intel_clip", keep(exp, "clip"), cmd,
                        "CLIP text + vision dual encoder, default weight format; 3 labels x 8 tokens and 1 image "
                        f"(text and image batches independent); vision position table fixed at {IMG}x{IMG}", "clip",
                        {k: v for k, v in shp.items() if k in ins}, {k: v for k, v in alt.items() if k in ins}))
    return models


def main(argv: list[str]) -> None:
    outdir = Path(argv[0]).resolve()
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix=f"{NAME}_") as tmp:
        models = build(outdir, Path(tmp))
    outdir.with_suffix(".toml").write_text(
        models_text(f"testmodels/pipelines/{NAME}.py", {t: md.version(t) for t in TOOLS}, models, HELDOUT))
    for m in models:
        print(m.id, m.file, (outdir / m.file).with_suffix(".bin").stat().st_size, file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
