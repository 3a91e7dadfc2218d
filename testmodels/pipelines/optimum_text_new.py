"""optimum-onnx 0.1.0 text/audio exports: the layout the newest optimum writes (no merged decoder-only).

optimum-onnx 0.1.0 (with optimum 2.1.0, the newest release) no longer has ``--legacy``: a
text-generation-with-past export is one ``model.onnx`` with past inputs, while encoder-decoders
(T5, Whisper) still get ``decoder_model_merged.onnx`` (optimum/exporters/onnx/base.py:772-789).
It also exports fp16 on CPU, which optimum 1.27 refuses. Same tiny seeded configs, feeds and
manifest writer as ``optimum_text`` (optimum 1.27.0); the tool runs unpatched (optimum-onnx passes
``dynamo=False`` to torch >= 2.9 itself, optimum/exporters/onnx/convert.py:561-562).

Run in its own venv: ``bash testmodels/pipelines/build.sh optimum_text_new``. Must not import graphlint.
"""

from __future__ import annotations

import importlib.metadata as md
import shutil
import sys
import tempfile
from pathlib import Path

from testmodels.pipelines import optimum_text as ot

NAME = "optimum_text_new"
HELDOUT = ("qwen3_moe", "whisper")  # the same architectures optimum_text holds out


def main(outdir: Path) -> None:
    import numpy as np
    import torch

    np.random.seed(ot.SEED)
    torch.manual_seed(ot.SEED)
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    c = ot.Corpus(outdir, NAME, HELDOUT)
    with tempfile.TemporaryDirectory(prefix=NAME) as t:
        tmp = Path(t)
        dirs = {arch: ot.decoder_only(c, tmp, arch, cfg, legacy=False) for arch, cfg in ot.DECODERS.items()}
        t5 = ot.seq2seq(c, tmp, "t5", ot.T5, "AutoModelForSeq2SeqLM", "text2text-generation-with-past", 1, 8, 16)
        ot.seq2seq(c, tmp, "whisper", ot.WHISPER, "AutoModelForSpeechSeq2Seq",
                   "automatic-speech-recognition-with-past", 4, 30, 30)
        fp16(c, tmp, t5)
        first, later = (1, ot.PROMPT, 0, 0), (2, 1, ot.ALT_PAST, 0)
        out = tmp / "gpt2_O3"
        cmd = ot.optimum_cli(NAME, "onnxruntime", "optimize", "--onnx_model", str(dirs["gpt2"]["default"]),
                             "-O3", "-o", str(out))
        c.add(sorted(out.glob("model*.onnx"))[0], "gpt2/O3", "gpt2_model_O3", cmd,
              "gpt2 model.onnx (one file with past) after optimum-cli onnxruntime optimize -O3; first run the "
              "first step (past length 0), alt a later step", "gpt2", first, later)
        out = tmp / "llama_quant"
        cmd = ot.optimum_cli(NAME, "onnxruntime", "quantize", "--onnx_model", str(dirs["llama"]["default"]),
                             "--avx2", "-o", str(out))
        c.add(sorted(out.glob("model*.onnx"))[0], "llama/quant_avx2", "llama_model_quant", cmd,
              "llama model.onnx after optimum-cli onnxruntime quantize --avx2 (dynamic int8); first run the "
              "first step, alt a later step", "llama", first, later)
    pkgs = ("optimum-onnx", "optimum", "transformers", "torch", "onnx", "onnxruntime", "numpy")
    ot.write_manifest(outdir.parent / f"{NAME}.toml", NAME, {p: md.version(p) for p in pkgs}, c.models)
    total = sum(f.stat().st_size for f in outdir.rglob("*") if f.is_file())
    print(f"{len(c.models)} entries, {total / 1e6:.1f} MB in {outdir}")


def fp16(c: ot.Corpus, tmp: Path, t5: Path) -> None:
    """``--dtype fp16`` on CPU: llama's model.onnx and T5's merged decoder."""
    ckpt = tmp / "ckpt_llama"
    out = tmp / "llama_fp16"
    cmd = ot.optimum_cli(NAME, "export", "onnx", "--model", str(ckpt), "--task", "text-generation-with-past",
                         "--dtype", "fp16", str(out))
    c.add(out / "model.onnx", "llama/fp16", "llama_model_fp16", cmd,
          "llama model.onnx exported with --dtype fp16 on CPU (fp16 weights and past); first run the first "
          "step (past length 0), alt a later step", "llama", (1, ot.PROMPT, 0, 0), (2, 1, ot.ALT_PAST, 0))
    out = tmp / "t5_fp16"
    cmd = ot.optimum_cli(NAME, "export", "onnx", "--model", str(tmp / "ckpt_t5"), "--task",
                         "text2text-generation-with-past", "--dtype", "fp16", str(out))
    ot.add_seq2seq_decoders(c, out, "t5/fp16", "t5_fp16", cmd, "t5 exported with --dtype fp16 on CPU", "t5",
                            1, 8, 16, plain=False)


def _cli(argv: list[str]) -> None:
    from optimum.commands.optimum_cli import main

    sys.argv = ["optimum-cli", *argv]
    main()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--cli"]:
        _cli(sys.argv[2:])
    else:
        main(Path(sys.argv[1]))
