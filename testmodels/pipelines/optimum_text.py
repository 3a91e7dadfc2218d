"""optimum 1.27 text/audio exports: decoder-only LLMs, T5, Whisper, DeBERTa-v3, plus ORT passes on them.

What LLM users get from ``optimum-cli export onnx`` (optimum 1.27.0, the last 1.x release that
has the ONNX exporter inside optimum), built from tiny random-weight configs (seeded, no hub):

- text-generation-with-past for llama, qwen3, gpt2 and the MoE qwen3_moe, in both layouts 1.27
  writes: ``--legacy`` (decoder_model.onnx, decoder_with_past_model.onnx and the merged
  decoder_model_merged.onnx: an ``If`` on ``use_cache_branch`` whose branches read outer-scope
  values; the default of optimum <= 1.13) and the default since 1.14 (one model.onnx with past).
- text2text-generation-with-past (T5) and automatic-speech-recognition-with-past (Whisper):
  encoder, decoder, decoder with past and the merged decoder (written by default).
- text-classification for DeBERTa-v3 (model_type deberta-v2).
- ``optimum-cli onnxruntime optimize -O2/-O3`` and ``quantize --avx2`` on some of them.

torch 2.13 defaults ``torch.onnx.export`` to ``dynamo=True`` (since 2.9); optimum 1.27 calls it
without the argument (optimum/exporters/onnx/convert.py:567), so the CLI runs here with the
default set back to ``dynamo=False``, which is exactly what optimum-onnx 0.1.0 does for torch >=
2.9 (optimum/exporters/onnx/convert.py:561-562): the TorchScript exporter users of 1.27 ran. And
optimum 1.27 imports private helpers that torch 2.13 moved to
torch/onnx/_internal/torchscript_exporter/symbolic_opset14.py: ``_cli`` puts them back under
their old module name before optimum is imported (nothing else of either package is changed).

Run in its own venv: ``bash testmodels/pipelines/build.sh optimum_text``. Must not import graphlint.
"""

from __future__ import annotations

import functools
import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from testmodels.pipelines import manifest

NAME = "optimum_text"
SEED = 0
# Inputs optimum's ORTModel feeds: prompt length on the first step, past length on a later one.
PROMPT, PAST = 8, 8
ALT_PROMPT, ALT_PAST = 16, 16
HELDOUT = ("qwen3_moe", "whisper")  # whole architectures nobody lints before the lead measures

DECODERS: dict[str, dict[str, Any]] = {
    "llama": dict(
        model_type="llama", vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
    ),
    "qwen3": dict(
        model_type="qwen3", vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
    ),
    "gpt2": dict(model_type="gpt2", vocab_size=512, n_embd=32, n_layer=2, n_head=4, n_positions=128),
    "qwen3_moe": dict(
        model_type="qwen3_moe", vocab_size=512, hidden_size=32, intermediate_size=64,
        moe_intermediate_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
        max_position_embeddings=128,
    ),
}
T5 = dict(
    model_type="t5", vocab_size=512, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
    num_heads=4, relative_attention_num_buckets=8, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
)
WHISPER = dict(
    model_type="whisper", vocab_size=512, d_model=32, encoder_layers=2, decoder_layers=2,
    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
    num_mel_bins=80, max_source_positions=1500, max_target_positions=64, pad_token_id=511,
    bos_token_id=510, eos_token_id=510, decoder_start_token_id=509, suppress_tokens=None,
    begin_suppress_tokens=None,
)
DEBERTA = dict(  # DeBERTa-v3's config shape (relative attention, shared keys, p2c+c2p), tiny
    model_type="deberta-v2", vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, max_position_embeddings=128, relative_attention=True, position_buckets=32,
    max_relative_positions=-1, pos_att_type=["p2c", "c2p"], position_biased_input=False,
    norm_rel_ebd="layer_norm", share_att_key=True, type_vocab_size=0, num_labels=2,
)


# ---------------------------------------------------------------- running the real CLI


def _cli(argv: list[str]) -> None:
    """Run optimum-cli in this process with torch.onnx.export's pre-2.9 default (see module doc)."""
    import torch.onnx
    import torch.onnx.symbolic_opset14 as public
    from torch.onnx._internal.torchscript_exporter import symbolic_opset14 as moved

    torch.onnx.export = _dynamo_off(torch.onnx.export)
    # optimum 1.27 imports private helpers from torch.onnx.symbolic_opset14 (model_patcher.py:346-353);
    # torch 2.13 keeps them in the TorchScript exporter's own module, whose public names it re-exports
    for name in ("_attention_scale", "_causal_attention_mask", "_onnx_symbolic", "_type_utils", "jit_utils",
                 "symbolic_helper"):
        if not hasattr(public, name):
            setattr(public, name, getattr(moved, name))
    from optimum.commands.optimum_cli import main

    sys.argv = ["optimum-cli", *argv]
    main()


def _dynamo_off(export: Any) -> Any:
    """torch.onnx.export with dynamo=False unless the caller says otherwise."""

    @functools.wraps(export)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("dynamo", False)
        return export(*args, **kwargs)

    return wrapped


FAILED: list[str] = []  # tool runs that refused a model: reported in the manifest's header and printed


def optimum_cli(module: str, *argv: str, may_fail: bool = False) -> str | None:
    """``optimum-cli ARGV`` in a fresh interpreter (one model's memory at a time); the command text.

    ``module`` is the pipeline (testmodels.pipelines.MODULE) whose ``--cli`` entry runs it. With
    ``may_fail`` a failing run is recorded in FAILED with its last error line and gives None.
    """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0"}
    cmd = "optimum-cli " + " ".join(a if not a.startswith("/") else Path(a).name for a in argv)
    r = subprocess.run([sys.executable, "-m", f"testmodels.pipelines.{module}", "--cli", *argv], env=env,
                       stderr=subprocess.PIPE if may_fail else None, text=True)
    if r.returncode and may_fail:
        errors = [x for x in r.stderr.splitlines() if "Error" in x and not x.startswith(" ")]
        FAILED.append(f"{cmd}: exit {r.returncode}: {(errors or ['?'])[-1].strip()}")
        print(FAILED[-1], flush=True)
        return None
    if r.returncode:
        raise subprocess.CalledProcessError(r.returncode, cmd)
    return cmd


def checkpoint(root: Path, name: str, cfg: dict[str, Any], auto: str) -> Path:
    """A seeded random-weight checkpoint of ``cfg`` saved where the CLI reads it (no hub)."""
    import torch
    import transformers

    cfg = dict(cfg)
    config = transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    torch.manual_seed(SEED)
    model = getattr(transformers, auto).from_config(config).eval()
    path = root / f"ckpt_{name}"
    model.save_pretrained(path)
    return path


# ---------------------------------------------------------------- feeds ORTModel gives


def _declared(path: Path) -> dict[str, list[int | None]]:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    return {
        i.name: [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
        for i in m.graph.input
    }


def feed_shapes(
    path: Path, batch: int, seq: int, past: int, enc_seq: int, enc_past: int | None = None
) -> tuple[dict[str, list[int]], dict[str, list]]:
    """Every input's shape for one ORTModel call (batch, new tokens, past length) and fixed values.

    Static declared dims (heads, head size, mel bins) are kept; the roles fill the symbolic ones
    the way optimum/onnxruntime/modeling_decoder.py:299-358 and modeling_seq2seq.py:655-692 do.
    """
    shapes: dict[str, list[int]] = {}
    values: dict[str, list] = {}
    enc_past = enc_seq if enc_past is None else enc_past
    for name, dims in _declared(path).items():
        if name in ("input_ids", "decoder_input_ids"):
            s = [batch, seq]
        elif name == "attention_mask":
            s = [batch, past + seq] if "encoder_hidden_states" not in _declared(path) else [batch, enc_seq]
        elif name == "encoder_attention_mask":
            s = [batch, enc_seq]
        elif name == "position_ids":
            s = [batch, seq]
            values[name] = [p for _ in range(batch) for p in range(past, past + seq)]
        elif name == "cache_position":
            s = [seq]
            values[name] = list(range(past, past + seq))
        elif name == "encoder_hidden_states":
            s = [batch, enc_seq, dims[2]]
        elif name == "input_features":
            s = [batch, dims[1], dims[2]]
        elif name == "use_cache_branch":
            s = [1]
        elif name.startswith("past_key_values."):
            length = enc_past if ".encoder." in name else past
            s = [batch, dims[1], length, dims[3]]
        else:
            raise ValueError(f"{path.name}: no rule for input {name} {dims}")
        if any(d is None for d in s):
            raise ValueError(f"{path.name}: {name} has an unknown static dim {dims}")
        shapes[name] = s
    return shapes, values


# ---------------------------------------------------------------- manifest


def write_manifest(path: Path, name: str, tools: dict[str, str], models: list[dict[str, Any]]) -> None:
    manifest.write_manifest(path, f"testmodels/pipelines/{name}.py", tools, models,
                            comments=[f"refused by the tool, no model kept: {f}" for f in FAILED])


# ---------------------------------------------------------------- the corpus


class Corpus:
    """Copies chosen exported files into OUTDIR and collects their manifest entries."""

    def __init__(self, outdir: Path, name: str = NAME, heldout: tuple[str, ...] = HELDOUT) -> None:
        self.outdir, self.name, self.heldout = outdir, name, heldout
        self.models: list[dict[str, Any]] = []

    def add(self, src: Path, sub: str, mid: str, pipeline: str, kind: str, arch: str,
            base: tuple, alt: tuple, flag: bool | None = None) -> None:
        dst = self.outdir / sub / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists():
            shutil.copyfile(src, dst)
            if Path(str(src) + "_data").exists() or any(src.parent.glob(src.name + ".data")):
                raise RuntimeError(f"{src} has external data")
        shapes, values = feed_shapes(dst, *base)
        alt_shapes, alt_values = feed_shapes(dst, *alt)
        # values apply to both runs: a fixed position_ids/cache_position must agree with both shapes
        for k in list(values):
            if k in ("position_ids", "cache_position") and values[k] != alt_values.get(k):
                del values[k]
        if flag is not None:
            values["use_cache_branch"] = [flag]
        self.models.append(dict(
            id=f"pl_{self.name}_{mid}", file=f"{sub}/{src.name}", pipeline=pipeline, kind=kind,
            heldout=arch in self.heldout, shapes=shapes, alt_shapes=alt_shapes, values=values,
        ))

    def merged(self, src: Path, sub: str, mid: str, pipeline: str, kind: str, arch: str,
               step0: tuple, step0_alt: tuple, step1: tuple, step1_alt: tuple) -> None:
        """Two entries for one merged decoder: the no-cache branch (first step) and the cache branch."""
        self.add(src, sub, mid + "_step0", pipeline,
                 kind + "; use_cache_branch=false: the first generation step (entry _step1 runs the other branch)",
                 arch, step0, step0_alt, flag=False)
        self.add(src, sub, mid + "_step1", pipeline,
                 kind + "; use_cache_branch=true: a later step with past > 0 (entry _step0 runs the other branch)",
                 arch, step1, step1_alt, flag=True)


def decoder_only(c: Corpus, tmp: Path, arch: str, cfg: dict[str, Any], legacy: bool = True) -> dict[str, Path]:
    """text-generation-with-past: the --legacy layout (three files, merged) if asked, and the default."""
    ckpt = checkpoint(tmp, arch, cfg, "AutoModelForCausalLM")
    task = "text-generation-with-past"
    out: dict[str, Path] = {}
    first, first_alt = (1, PROMPT, 0, 0), (2, ALT_PROMPT, 0, 0)
    later, later_alt = (1, 1, PAST, 0), (2, 1, ALT_PAST, 0)
    if legacy:
        legacy_layout(c, tmp, arch, ckpt, out, first, first_alt, later, later_alt)
    default = tmp / f"{arch}_default"
    cmd = optimum_cli(c.name, "export", "onnx", "--model", str(ckpt), "--task", task, str(default))
    out["default"] = default
    # ORTModelForCausalLM feeds the single model.onnx an empty past on the first step
    # (modeling_decoder.py:336-346), a real one later
    c.add(default / "model.onnx", f"{arch}/default", f"{arch}_model", cmd,
          f"{arch} (tiny) text-generation-with-past, default layout since optimum 1.14: one model.onnx "
          "with past inputs; first run the first step (past length 0), alt a later step (past > 0)",
          arch, first, later_alt)
    return out


def legacy_layout(c: Corpus, tmp: Path, arch: str, ckpt: Path, out: dict[str, Path],
                  first: tuple, first_alt: tuple, later: tuple, later_alt: tuple) -> None:
    """optimum 1.27 writes the merged decoder-only model only with --legacy (exporters/utils.py:195-197)."""
    legacy = tmp / f"{arch}_legacy"
    cmd = optimum_cli(c.name, "export", "onnx", "--model", str(ckpt), "--task", "text-generation-with-past",
                      "--legacy", str(legacy))
    out["legacy"] = legacy
    what = f"{arch} (tiny, 2 layers) text-generation-with-past, --legacy layout"
    c.merged(legacy / "decoder_model_merged.onnx", f"{arch}/legacy", f"{arch}_merged", cmd,
             f"{what}: merged decoder (If on use_cache_branch, branches read outer-scope values)", arch,
             first, first_alt, later, later_alt)
    c.add(legacy / "decoder_model.onnx", f"{arch}/legacy", f"{arch}_decoder", cmd,
          f"{what}: decoder without past (first step)", arch, first, first_alt)
    c.add(legacy / "decoder_with_past_model.onnx", f"{arch}/legacy", f"{arch}_decoder_with_past", cmd,
          f"{what}: decoder with past (later steps)", arch, later, later_alt)


def seq2seq(c: Corpus, tmp: Path, arch: str, cfg: dict[str, Any], auto: str, task: str,
            prompt: int, enc_seq: int, alt_enc_seq: int) -> Path:
    ckpt = checkpoint(tmp, arch, cfg, auto)
    out = tmp / arch
    cmd = optimum_cli(c.name, "export", "onnx", "--model", str(ckpt), "--task", task, str(out))
    what = f"{arch} (tiny, 2+2 layers) {task}"
    c.add(out / "encoder_model.onnx", arch, f"{arch}_encoder", cmd, f"{what}: encoder", arch,
          (1, enc_seq, 0, enc_seq), (2, alt_enc_seq, 0, alt_enc_seq))
    add_seq2seq_decoders(c, out, arch, arch, cmd, what, arch, prompt, enc_seq, alt_enc_seq)
    return out


def add_seq2seq_decoders(c: Corpus, out: Path, sub: str, mid: str, cmd: str, what: str, arch: str,
                         prompt: int, enc_seq: int, alt_enc_seq: int, plain: bool = True, suffix: str = "") -> None:
    # ORTModelForSeq2SeqLM's first merged call: dummy past of length 1 for every key/value
    # (modeling_seq2seq.py:673-683); later calls: decoder past grows, encoder past = encoder length
    c.merged(out / f"decoder_model_merged{suffix}.onnx", sub, f"{mid}_merged", cmd,
             f"{what}: merged decoder (If on use_cache_branch)", arch,
             (1, prompt, 1, enc_seq, 1), (2, prompt, 1, alt_enc_seq, 1),
             (1, 1, PAST, enc_seq), (2, 1, ALT_PAST, alt_enc_seq))
    if plain:
        c.add(out / "decoder_model.onnx", sub, f"{mid}_decoder", cmd, f"{what}: decoder without past", arch,
              (1, prompt, 0, enc_seq), (2, ALT_PROMPT, 0, alt_enc_seq))
        c.add(out / "decoder_with_past_model.onnx", sub, f"{mid}_decoder_with_past", cmd,
              f"{what}: decoder with past", arch, (1, 1, PAST, enc_seq), (2, 1, ALT_PAST, alt_enc_seq))


def main(outdir: Path) -> None:
    import numpy as np
    import torch

    np.random.seed(SEED)
    torch.manual_seed(SEED)
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    c = Corpus(outdir)
    with tempfile.TemporaryDirectory(prefix=NAME) as t:
        tmp = Path(t)
        dirs = {arch: decoder_only(c, tmp, arch, cfg) for arch, cfg in DECODERS.items()}
        t5 = seq2seq(c, tmp, "t5", T5, "AutoModelForSeq2SeqLM", "text2text-generation-with-past", 1, 8, 16)
        # Whisper's encoder takes exactly 2 * max_source_positions = 3000 frames (optimum's dummy
        # length): no other length is legal, so the encoder's alt run differs in batch only
        seq2seq(c, tmp, "whisper", WHISPER, "AutoModelForSpeechSeq2Seq",
                "automatic-speech-recognition-with-past", 4, 1500, 1500)
        ckpt = checkpoint(tmp, "deberta_v3", DEBERTA, "AutoModelForSequenceClassification")
        deb = tmp / "deberta_v3"
        cmd = optimum_cli(c.name, "export", "onnx", "--model", str(ckpt), "--task", "text-classification", str(deb))
        c.add(deb / "model.onnx", "deberta_v3", "deberta_v3", cmd,
              "DeBERTa-v3 (deberta-v2 model type, tiny) text-classification", "deberta_v3",
              (1, 16, 0, 0), (2, 32, 0, 0))
        passes(c, tmp, dirs, t5, deb)
        fp16_on_cpu(tmp)
    tools = {p: md.version(p) for p in ("optimum", "transformers", "torch", "onnx", "onnxruntime", "numpy")}
    write_manifest(outdir.parent / f"{NAME}.toml", NAME, tools, c.models)
    total = sum(f.stat().st_size for f in outdir.rglob("*") if f.is_file())
    print(f"{len(c.models)} entries, {total / 1e6:.1f} MB in {outdir}")


def passes(c: Corpus, tmp: Path, dirs: dict[str, dict[str, Path]], t5: Path, deb: Path) -> None:
    """ORT transformers optimizer at -O2/-O3 and the dynamic quantizer, through optimum-cli.

    The optimizer is tried on folders with a merged decoder first (its refusal is recorded); T5 is
    also exported with --no-post-process (no merge), the way optimum's docs have users optimize.
    """
    t5_plain = tmp / "t5_no_post_process"
    optimum_cli(c.name, "export", "onnx", "--model", str(tmp / "ckpt_t5"), "--task",
                "text2text-generation-with-past", "--no-post-process", str(t5_plain))
    first, later = (1, PROMPT, 0, 0), (2, 1, ALT_PAST, 0)
    for level in ("O2", "O3"):
        what = f"after optimum-cli onnxruntime optimize -{level}"
        out = tmp / f"gpt2_merged_{level}"
        cmd = optimum_cli(c.name, "onnxruntime", "optimize", "--onnx_model", str(dirs["gpt2"]["legacy"]),
                          f"-{level}", "-o", str(out), may_fail=True)
        if cmd:
            c.merged(sorted(out.glob("decoder_model_merged*.onnx"))[0], f"gpt2/legacy_{level}",
                     f"gpt2_merged_{level}", cmd, f"gpt2 --legacy {what}: merged decoder", "gpt2",
                     first, (2, ALT_PROMPT, 0, 0), (1, 1, PAST, 0), (2, 1, ALT_PAST, 0))
        out = tmp / f"gpt2_{level}"
        cmd = optimum_cli(c.name, "onnxruntime", "optimize", "--onnx_model", str(dirs["gpt2"]["default"]),
                          f"-{level}", "-o", str(out))
        c.add(sorted(out.glob("model*.onnx"))[0], f"gpt2/default_{level}", f"gpt2_model_{level}", cmd,
              f"gpt2 model.onnx (one file with past) {what}; first run the first step (past length 0), "
              "alt a later step", "gpt2", first, later)
        out = tmp / f"t5_merged_{level}"
        cmd = optimum_cli(c.name, "onnxruntime", "optimize", "--onnx_model", str(t5), f"-{level}", "-o", str(out),
                          may_fail=True)
        merged = out / "decoder_model_merged_optimized.onnx"
        if cmd and node_count(merged):
            add_seq2seq_decoders(c, out, f"t5/merged_{level}", f"t5_{level}", cmd, f"t5 {what}", "t5",
                                 1, 8, 16, plain=False, suffix="_optimized")
        elif cmd:  # onnxruntime 1.32's optimizer (model type bert for t5) pruned every node of the merged decoder
            c.add(merged, f"t5/merged_{level}", f"t5_merged_{level}_emptied", cmd,
                  f"t5 merged decoder {what}: the optimizer wrote a graph with no node, input or initializer "
                  "whose outputs (logits, present.*) are produced by nothing", "t5", (1, 1, 1, 8, 1), (2, 1, 1, 16, 1))
        out = tmp / f"t5_{level}"
        cmd = optimum_cli(c.name, "onnxruntime", "optimize", "--onnx_model", str(t5_plain), f"-{level}",
                          "-o", str(out))
        c.add(sorted(out.glob("decoder_with_past_model*.onnx"))[0], f"t5/no_post_process_{level}",
              f"t5_decoder_with_past_{level}", cmd, f"t5 exported with --no-post-process, {what}: decoder "
              "with past", "t5", (1, 1, PAST, 8), (2, 1, ALT_PAST, 16))
        out = tmp / f"deberta_v3_{level}"
        cmd = optimum_cli(c.name, "onnxruntime", "optimize", "--onnx_model", str(deb), f"-{level}", "-o", str(out))
        c.add(sorted(out.glob("model*.onnx"))[0], f"deberta_v3/{level}", f"deberta_v3_{level}", cmd,
              f"DeBERTa-v3 text-classification {what}", "deberta_v3", (1, 16, 0, 0), (2, 32, 0, 0))
    what = "after optimum-cli onnxruntime quantize --avx2 (dynamic int8)"
    out = tmp / "llama_quant"  # quantizes every .onnx in the folder; only the merged decoder is kept
    cmd = optimum_cli(c.name, "onnxruntime", "quantize", "--onnx_model", str(dirs["llama"]["legacy"]), "--avx2",
                      "-o", str(out), may_fail=True)
    if cmd:
        c.merged(sorted(out.glob("decoder_model_merged*.onnx"))[0], "llama/legacy_quant_avx2",
                 "llama_merged_quant", cmd, f"llama --legacy {what}: merged decoder", "llama",
                 first, (2, ALT_PROMPT, 0, 0), (1, 1, PAST, 0), (2, 1, ALT_PAST, 0))
    out = tmp / "deberta_v3_quant"
    cmd = optimum_cli(c.name, "onnxruntime", "quantize", "--onnx_model", str(deb), "--avx2", "-o", str(out),
                      may_fail=True)
    if cmd:
        c.add(sorted(out.glob("model*.onnx"))[0], "deberta_v3/quant_avx2", "deberta_v3_quant", cmd,
              f"DeBERTa-v3 text-classification {what}", "deberta_v3", (1, 16, 0, 0), (2, 32, 0, 0))


def node_count(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


def fp16_on_cpu(tmp: Path) -> None:
    """optimum 1.27 refuses --dtype fp16 with --device cpu (exporters/onnx/__main__.py:211-214): recorded."""
    optimum_cli(NAME, "export", "onnx", "--model", str(tmp / "ckpt_llama"), "--task", "text-generation-with-past",
                "--dtype", "fp16", str(tmp / "llama_fp16"), may_fail=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--cli"]:
        _cli(sys.argv[2:])
    else:
        main(Path(sys.argv[1]))
