"""Engine truth for the optimum-intel VLM folders: run every healthy folder and every seed as users do.

``python -m testmodels.vlm.truth_optimum_intel [ARCH ...]`` (in .venvs/optimum_intel; no ARCH: every arch
with a built folder). Per folder: ``AutoProcessor.from_pretrained(folder)`` and
``OVModelForVisualCausalLM.from_pretrained(folder)``; per image size of the arch (a seeded random uint8
image): a forward pass on the processor's outputs and ``generate(max_new_tokens=2)``.

Outcome: ``fails`` (an exception: type + first line), ``wrong`` (the next-token logits, i.e. the prompt's last
position, differ from the reference by more than TOL_ABS + TOL_REL * max|reference|), else ``ok``.
Reference: the transformers PyTorch model of the source (rebuilt from the arch's seeded builder; the healthy
folder's agreement with it checks that the rebuild is the exported model) fed by the HEALTHY folder's
processor for the same image and prompt, so a seed is compared with what the user meant.
Per run it records what each stage was fed (input shapes and dtypes, from the compiled models' calls), the
rows the vision stage emitted (and, for LLaVA-NeXT, the rows optimum-intel packs from them: packed_rows), the
image tokens in input_ids, the language model's sequence length, the
pixel value range, and outputs whose shape the graph's declared shape does not admit.
Results merge by folder id into testmodels/vlm/truth.json. A seed also gets ``seed_verdict``: its worst outcome
over the image sizes where the healthy folder ran ok (what the seed itself broke), null if there are none.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
LAYOUT = "optimum-intel"
ROOT = HERE / "optimum_intel"
TRUTH = HERE / "truth.json"
TOL_ABS, TOL_REL = 1e-4, 1e-3
RANK = {"ok": 0, "wrong": 1, "fails": 2}
# f32 inference: OpenVINO's CPU plugin defaults to bf16 on AMX / AVX512-BF16 machines (this one), which moves
# the healthy folders' logits by ~0.5 % of their scale; truth must not depend on the machine's ISA.
OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


def image(h: int, w: int):
    import numpy as np
    from PIL import Image

    return Image.fromarray(np.random.RandomState(h * 1000 + w).randint(0, 256, (h, w, 3), dtype=np.uint8))


def _shape(x: Any) -> list[int]:
    return [int(d) for d in getattr(x, "shape", ())]


def _dtype(x: Any) -> str:
    return str(getattr(x, "dtype", type(x).__name__)).replace("torch.", "")


class Recorder:
    """Wraps a compiled model (called) or an infer request (start_async) and records its calls."""

    def __init__(self, inner: Any, stage: str, log: list[dict], model: Any):
        self._inner, self._stage, self._log = inner, stage, log
        self._declared = {o.get_any_name(): o.get_partial_shape() for o in model.outputs}
        self._in_names = [i.get_any_name() for i in model.inputs]

    def _rec_inputs(self, inputs: Any) -> dict:
        if isinstance(inputs, dict):
            items = {str(k if isinstance(k, str) else k.get_any_name()): v for k, v in inputs.items()}
        elif isinstance(inputs, (list, tuple)):
            items = {self._in_names[i]: v for i, v in enumerate(inputs)}
        else:
            items = {self._in_names[0]: inputs}
        entry = {"stage": self._stage, "inputs": {k: _shape(v) for k, v in items.items()},
                 "dtypes": {k: _dtype(v) for k, v in items.items()}}
        self._log.append(entry)
        return entry

    def _rec_outputs(self, entry: dict, outs: dict[str, Any]) -> None:
        entry["outputs"] = {k: _shape(v) for k, v in outs.items()}
        entry["out_dtypes"] = {k: str(v.dtype) for k, v in outs.items()}
        bad = []
        for k, v in outs.items():
            ps = self._declared.get(k)
            if ps is not None and not ps.compatible(__import__("openvino").PartialShape(list(v.shape))):
                bad.append(f"{self._stage}.{k}: ran {list(v.shape)}, declared {ps}")
        entry["shape_violations"] = bad

    def __call__(self, inputs: Any, *a: Any, **kw: Any) -> Any:
        entry = self._rec_inputs(inputs)
        res = self._inner(inputs, *a, **kw)
        self._rec_outputs(entry, {o.get_any_name(): res[o] for o in res})
        return res

    def start_async(self, inputs: Any, *a: Any, **kw: Any) -> Any:
        entry = self._rec_inputs(inputs)
        out = self._inner.start_async(inputs, *a, **kw)
        self._inner.wait()
        self._rec_outputs(entry, {"logits": self._inner.get_tensor("logits").data})
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def instrument(model: Any, log: list[dict]) -> None:
    model.compile()
    if hasattr(model, "pack_image_features"):  # LLaVA-NeXT: rows after unpadding + newline, what is merged
        pack = model.pack_image_features

        def packed(*a: Any, **kw: Any) -> Any:
            feats, lens = pack(*a, **kw)
            log.append({"stage": "pack_image_features", "feature_lens": [int(x) for x in lens]})
            return feats, lens

        model.pack_image_features = packed
    for name, comp in model.components.items():
        if name == "language_model":
            comp.request = Recorder(comp.request, "language_model", log, comp.model)
            comp.text_emb_request = Recorder(comp.text_emb_request, "text_embeddings", log, comp.text_emb_model)
        elif getattr(comp, "request", None) is not None:
            comp.request = Recorder(comp.request, name, log, comp.model)


def err(e: BaseException) -> str:
    """Type + first line; OpenVINO's leading "Exception from <file>" lines are skipped."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("Exception from")] or lines
    first = lines[0] if lines else ""
    if "failed at" in first and len(lines) > 1:  # an OpenVINO check: the next line says what did not hold
        first = f"{first} {lines[1]}"
    return f"{type(e).__name__}: {first}"[:500]


def compare(got: Any, ref: Any) -> tuple[float, float]:
    """Max abs difference of the last-position logits and the reference scale."""
    g, r = got[0, -1].float(), ref[0, -1].float()
    if g.shape != r.shape:
        return float("inf"), float(r.abs().max())
    return float((g - r).abs().max()), float(r.abs().max())


def run_folder(folder: Path, arch: dict, ref: dict, image_token_id: int) -> list[dict]:
    import torch
    from optimum.intel import OVModelForVisualCausalLM
    from transformers import AutoProcessor

    runs = []
    try:
        proc = AutoProcessor.from_pretrained(str(folder))
        model = OVModelForVisualCausalLM.from_pretrained(str(folder), device="CPU", ov_config=OV_CONFIG)
        log: list[dict] = []
        instrument(model, log)
    except Exception as e:  # the folder does not even load: every run fails the same way
        msg = err(e)
        return [{"image": s, "outcome": "fails", "message": "load: " + msg, "fed": {}, "vision_rows": None,
                 "image_tokens": None} for s in arch["image_sizes"]]
    for h, w in arch["image_sizes"]:
        if runs and runs[-1]["outcome"] == "fails":
            # OpenVINO 2026.4's CPU plugin: after an inference that raised, the next one at the shape that last
            # ran fine raises too (a stale shape cache); reload so each image size is an independent fact
            model = OVModelForVisualCausalLM.from_pretrained(str(folder), device="CPU", ov_config=OV_CONFIG)
            instrument(model, log)
        run: dict[str, Any] = {"image": [h, w], "outcome": "ok", "message": "", "image_tokens": None}
        log.clear()
        stage, calls = "processor", []
        try:
            inputs = proc(images=image(h, w), text=arch["prompt"], return_tensors="pt")
            run["image_tokens"] = int((inputs["input_ids"] == image_token_id).sum())
            run["input_ids_len"] = int(inputs["input_ids"].shape[1])
            pv = inputs.get("pixel_values")
            if pv is not None:
                run["pixel_range"] = [round(float(pv.min()), 4), round(float(pv.max()), 4)]
            stage = "forward"
            with torch.no_grad():
                out = model(**inputs)
                calls = list(log)
                stage = "generate"
                gen = model.generate(**inputs, max_new_tokens=2, do_sample=False)
            run["generated"] = [int(t) for t in gen[0, -2:]]
            d, scale = compare(out.logits, ref[(h, w)]["logits"])
            run["max_abs_diff"], run["ref_scale"] = d, scale
            run["ref_generated"] = ref[(h, w)]["generated"]
            if not d <= TOL_ABS + TOL_REL * scale:
                run["outcome"] = "wrong"
                run["message"] = f"next-token logits differ from the reference: max abs diff {d:.3g} (scale {scale:.3g})"
        except Exception as e:
            calls = list(log) if stage == "forward" else calls
            run["outcome"], run["message"] = "fails", f"{stage}: {err(e)}"
            run["traceback_tail"] = traceback.format_exc().strip().splitlines()[-3:-1]
        fed: dict[str, dict] = {}
        fed_dtypes: dict[str, dict] = {}
        vision_rows = 0
        seen_vision = False
        violations: list[str] = []
        outputs: dict[str, dict] = {}
        packs = [c for c in calls if c["stage"] == "pack_image_features"]
        run["packed_rows"] = sum(sum(c["feature_lens"]) for c in packs) if packs else None
        calls = [c for c in calls if c["stage"] != "pack_image_features"]
        for c in calls:
            if "outputs" in c:
                outputs.setdefault(c["stage"], c["outputs"])
            fed.setdefault(c["stage"], c["inputs"])
            fed_dtypes.setdefault(c["stage"], c["dtypes"])
            violations += c.get("shape_violations", [])
            if c["stage"] == "vision_embeddings" and "outputs" in c:
                seen_vision = True
                first = next(iter(c["outputs"].values()))
                vision_rows += first[0] * first[1] if len(first) == 3 else first[0]
                run.setdefault("vision_out", []).append({"shape": first, "dtype": next(iter(c["out_dtypes"].values()))})
        # a stage that was fed but has no outputs is the stage that raised
        run["fed"], run["fed_dtypes"], run["outputs"] = fed, fed_dtypes, outputs
        run["stage_calls"] = {s: sum(1 for c in calls if c["stage"] == s) for s in fed}
        run["vision_rows"] = vision_rows if seen_vision else None
        lm = [c for c in calls if c["stage"] == "language_model"]
        run["lm_seq"] = lm[0]["inputs"].get("inputs_embeds", [None, None])[1] if lm else None
        run["shape_violations"] = sorted(set(violations))
        runs.append(run)
    return runs


def reference(builder: Any, healthy: Path, arch: dict, image_token_id: int) -> dict:
    """The PyTorch model of the rebuilt source on the healthy processor's outputs, per image size."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    out = {}
    with tempfile.TemporaryDirectory(prefix="vlm_ref_") as tmp:
        builder(Path(tmp) / "src")
        model = AutoModelForImageTextToText.from_pretrained(Path(tmp) / "src").eval()
    proc = AutoProcessor.from_pretrained(healthy)
    for h, w in arch["image_sizes"]:
        inputs = proc(images=image(h, w), text=arch["prompt"], return_tensors="pt")
        with torch.no_grad():
            logits = model(**inputs).logits
            gen = model.generate(**inputs, max_new_tokens=2, do_sample=False)
        out[(h, w)] = {"logits": logits, "generated": [int(t) for t in gen[0, -2:]],
                       "image_tokens": int((inputs["input_ids"] == image_token_id).sum())}
    return out


def files_sha256(folder: Path) -> dict[str, str]:
    """What the truth ran: tests/test_vlm_corpus.py fails when a folder's files no longer match."""
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.iterdir()) if f.is_file()}


def verdict(runs: list[dict]) -> str:
    return max((r["outcome"] for r in runs), key=RANK.__getitem__, default="ok")


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(HERE.parent.parent))
    from testmodels.vlm import seeds as S
    from testmodels.vlm.optimum_intel_vlm import all_archs

    build = json.loads((ROOT / "build.json").read_text())
    builders, _ = all_archs()
    names = [a for a in (argv or sorted(build["archs"])) if a in build["archs"]]
    truth: dict[str, Any] = {}
    tools = {t: md.version(t) for t in ("optimum-intel", "optimum", "openvino", "transformers", "torch",
                                        "tokenizers", "pillow")}
    truth.update({"layouts": sorted(set(truth.get("layouts", [])) | {LAYOUT}),
                  "tolerance": f"wrong if max |logits[-1] - ref[-1]| > {TOL_ABS} + {TOL_REL} * max |ref[-1]|",
                  "ov_config": OV_CONFIG})
    folders: dict[str, dict] = {}
    all_seeds = S.load()
    t_all = time.time()
    for name in names:
        arch = build["archs"][name]
        arch["image_sizes"] = [tuple(s) for s in arch["image_sizes"]]
        healthy = ROOT / name
        cfg = json.loads((healthy / "config.json").read_text())
        tok_id = cfg.get("image_token_id", cfg.get("image_token_index"))
        t0 = time.time()
        ref = reference(builders[name], healthy, arch, tok_id)
        cases = [(f"optimum_intel/{name}", healthy, None)]
        with tempfile.TemporaryDirectory(prefix="vlm_seed_") as tmp:
            for s in (s for s in all_seeds if s["base"] == f"optimum_intel/{name}"):
                cases.append((s["id"], S.materialize(s, Path(tmp) / s["id"]), s))
            for fid, folder, seed in cases:
                t1 = time.time()
                runs = run_folder(folder, arch, ref, tok_id)
                for r in runs:
                    r["ref_image_tokens"] = ref[tuple(r["image"])]["image_tokens"]
                folders[fid] = {"arch": name, "layout": LAYOUT, "folder": seed["base"] if seed else fid,
                                "seed": seed["id"] if seed else None, "class": seed["class"] if seed else None,
                                "heldout": bool(seed["heldout"]) if seed else False, "runs": runs,
                                "verdict": verdict(runs), "tools": tools, "seconds": round(time.time() - t1, 1),
                                "files_sha256": files_sha256(folder)}
                print(f"{fid:45s} {folders[fid]['verdict']:6s} "
                      + " ".join(f"{r['image'][0]}x{r['image'][1]}:{r['outcome']}" for r in runs), flush=True)
        # what a seed changed: its outcome where the healthy folder's run at the same image size was ok
        base = {tuple(r["image"]): r["outcome"] for r in folders[f"optimum_intel/{name}"]["runs"]}
        for fid, _, _seed in cases[1:]:
            entry = folders[fid]
            for r in entry["runs"]:
                r["healthy_outcome"] = base[tuple(r["image"])]
            on_ok = [r for r in entry["runs"] if r["healthy_outcome"] == "ok"]
            entry["seed_verdict"] = verdict(on_ok) if on_ok else None
        print(f"{name}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    # re-read just before writing: other arch modules' truth runs merge into the same file
    old = json.loads(TRUTH.read_text()) if TRUTH.exists() else {}
    truth["layouts"] = sorted(set(old.get("layouts", [])) | set(truth["layouts"]))
    for key in ("export_failures", "skipped"):
        truth[key] = {**old.get(key, {}), **build.get(key, {})}
    truth["folders"] = {**old.get("folders", {}), **folders}
    TRUTH.write_text(json.dumps({**old, **truth}, indent=1, sort_keys=True) + "\n")
    print(f"truth: {time.time() - t_all:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
