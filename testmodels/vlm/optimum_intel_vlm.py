"""Build the optimum-intel VLM deployment folders: ``python -m testmodels.vlm.optimum_intel_vlm OUTDIR``.

For every arch of ``archs_a.ARCHS`` and ``archs_b.ARCHS`` (when that module exists) the tiny HF source is
built in a scratch folder and exported offline by the real CLI,
``optimum-cli export openvino --task image-text-to-text --weight-format fp32``; the complete folder the
user gets (graphs, configs, tokenizer, chat template) is kept as OUTDIR/<arch>/. Graph variants that
seeds swap in (``testmodels/vlm/seeds.toml``) go to OUTDIR/_variants/<arch>/<variant>/:
- ``f16_vision``: the healthy vision graph with a Convert to f16 before its output (OpenVINO's API);
- ``VARIANTS`` of the arch module: a second export of a source built differently (e.g. a wider projector).
OUTDIR/build.json records, per arch, the prompt and image sizes the truth runs use, the export command
and time, the kept files, and the exports that failed (command + first error line) or were skipped.

Runs in .venvs/optimum_intel; must not import graphlint.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testmodels.vlm import Arch, Builder

TOOLS = ("optimum-intel", "optimum", "openvino", "openvino-tokenizers", "transformers", "torch", "torchvision",
         "tokenizers", "numpy", "pillow")
# What the user's folder holds: everything the export wrote except nothing (the CLI writes no weights copy).
KEEP_SUFFIXES = (".xml", ".bin", ".json", ".jinja", ".model", ".txt")
# optimum-intel 2.2.0 registers these VLM exporters but caps them below the pinned transformers 5.5.4
# (MAX_TRANSFORMERS_VERSION in optimum/exporters/openvino/model_configs.py), and three are remote code.
SKIPPED = {
    "phi3_v": "remote-code model (trust_remote_code, needs the hub's modeling_phi3_v.py); optimum-intel 2.2.0 "
              "Phi3VisionOpenVINOConfig MAX_TRANSFORMERS_VERSION 4.53.3 < transformers 5.5.4",
    "phi4mm": "remote-code model (hub modeling_phi4mm.py); Phi4MMOpenVINOConfig MAX_TRANSFORMERS_VERSION 4.53.3 "
              "< transformers 5.5.4 (also for the native phi4_multimodal type)",
    "internvl_chat": "remote-code model (hub modeling_internvl_chat.py); InternVLChatOpenVINOConfig "
                     "MAX_TRANSFORMERS_VERSION 4.57.6 < transformers 5.5.4",
}
JOBS = int(os.environ.get("VLM_JOBS", "3"))


def arch_modules() -> list:
    mods = [importlib.import_module("testmodels.vlm.archs_a")]
    try:
        mods.append(importlib.import_module("testmodels.vlm.archs_b"))
    except ModuleNotFoundError as e:
        if e.name != "testmodels.vlm.archs_b":
            raise
    return mods


def all_archs() -> tuple[dict[str, Builder], dict[str, dict[str, Builder]]]:
    archs: dict[str, Builder] = {}
    variants: dict[str, dict[str, Builder]] = {}
    for m in arch_modules():
        archs.update(m.ARCHS)
        variants.update(getattr(m, "VARIANTS", {}))
    return archs, variants


def elsewhere() -> dict[str, str]:
    """Archs whose module exports them in another venv (its VENV): here only the pinned venv's refusal is recorded."""
    return {a: f"{m.__name__}.build in {m.VENV}" for m in arch_modules() if getattr(m, "VENV", None) for a in m.ARCHS}


def export_cmd(src: Path, out: Path, extra: list[str] | None = None) -> list[str]:
    cli = str(Path(sys.executable).with_name("optimum-cli"))
    return [cli, "export", "openvino", "--task", "image-text-to-text", "--weight-format", "fp32", *(extra or []),
            "--model", str(src), str(out)]


def first_error(text: str) -> str:
    """The exception line of a traceback (the last line naming an Error), else the last non-empty line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln.split(":")[0] or "Exception" in ln.split(":")[0]:
            return ln[:400]
    return lines[-1][:400] if lines else ""


_BUILD_LOCK = threading.Lock()


def export(key: str, builder: Builder, work: Path) -> tuple[Arch | None, Path, dict]:
    """Source building seeds global RNGs, so it holds a lock; the export subprocesses run in parallel."""
    src, out = work / f"src_{key}", work / f"out_{key}"
    t0 = time.time()
    try:
        with _BUILD_LOCK:
            arch = builder(src)
    except Exception as e:  # a source that cannot be built is recorded like an export failure
        return None, out, {"command": f"{key} source builder", "seconds": round(time.time() - t0, 1),
                           "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:400]}
    cmd = export_cmd(src, out, arch.export_args)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0"}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    rec = {"command": "optimum-cli " + " ".join(cmd[1:-3]) + " --model SRC OUT", "seconds": round(time.time() - t0, 1)}
    if p.returncode != 0 or not (out / "openvino_language_model.xml").exists():
        rec["error"] = first_error(p.stderr + p.stdout)
        return None, out, rec
    return arch, out, rec


def keep(exp: Path, dest: Path) -> dict[str, int]:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    sizes = {}
    for f in sorted(exp.iterdir()):
        if f.is_file() and f.suffix in KEEP_SUFFIXES:
            shutil.copyfile(f, dest / f.name)
            sizes[f.name] = f.stat().st_size
    return sizes


def f16_vision(healthy: Path, dest: Path) -> None:
    """The healthy vision graph with its output converted to f16 (what a half-precision vision export emits)."""
    import openvino as ov
    import openvino.opset13 as ops

    m = ov.Core().read_model(str(healthy / "openvino_vision_embeddings_model.xml"))
    res = m.get_results()[0]
    src = res.input_value(0)
    names = set(src.get_names())
    cvt = ops.convert(src, "f16")
    cvt.set_friendly_name("last_hidden_state_to_f16")  # a fixed name: rebuilds stay byte-identical
    src.get_tensor().set_names(set())
    cvt.output(0).get_tensor().set_names(names)
    res.input(0).replace_source_output(cvt.output(0))
    m.validate_nodes_and_infer_types()
    dest.mkdir(parents=True, exist_ok=True)
    ov.save_model(m, str(dest / "openvino_vision_embeddings_model.xml"), compress_to_fp16=False)


def main(argv: list[str]) -> None:
    outdir = Path(argv[0]).resolve()
    only = set(argv[1:])
    archs, variants = all_archs()
    if only:
        archs = {k: v for k, v in archs.items() if k in only}
    outdir.mkdir(parents=True, exist_ok=True)
    rec_path = outdir / "build.json"
    record = json.loads(rec_path.read_text()) if rec_path.exists() else {}
    record.setdefault("archs", {})
    record.setdefault("export_failures", {})
    record["skipped"] = SKIPPED
    record["tools"] = {t: md.version(t) for t in TOOLS}
    other = elsewhere()
    jobs = [(name, name, b) for name, b in archs.items()]
    jobs += [(name, f"{name}.{v}", b) for name in archs if name not in other for v, b in variants.get(name, {}).items()]
    with tempfile.TemporaryDirectory(prefix="vlm_oi_") as tmp, ThreadPoolExecutor(JOBS) as pool:
        work = Path(tmp)
        futs = {key: pool.submit(export, key, b, work) for _, key, b in jobs}
        for key, fut in futs.items():
            arch, exp, rec = fut.result()
            arch_name, _, variant = key.partition(".")
            print(key, rec, file=sys.stderr, flush=True)
            if arch is None:
                if key in other:
                    rec["venv"], rec["built_by"] = ".venvs/optimum_intel", other[key]
                record["export_failures"][key] = rec
                continue
            if key in other:  # this venv exported it after all: its own builder still owns the folder
                record["export_failures"].pop(key, None)
                continue
            record["export_failures"].pop(key, None)
            if variant:
                dest = outdir / "_variants" / arch_name / variant
                # only the graphs a seed swaps in; the variant's configs describe its own wider/narrower model
                keep(exp, dest)
                for f in dest.iterdir():
                    if not f.name.startswith("openvino_vision_embeddings_model."):
                        f.unlink()
                continue
            sizes = keep(exp, outdir / arch_name)
            f16_vision(outdir / arch_name, outdir / "_variants" / arch_name / "f16_vision")
            record["archs"][arch_name] = {"prompt": arch.prompt, "image_sizes": [list(s) for s in arch.image_sizes],
                                          "notes": arch.notes, **rec, "files": sizes,
                                          "folder_bytes": sum(sizes.values())}
    rec_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
