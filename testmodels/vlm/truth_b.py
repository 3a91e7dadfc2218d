"""Engine truth for archs_b's optimum-intel folders (Qwen2-VL, Qwen2.5-VL, Idefics3, SmolVLM).

``.venvs/optimum_intel_tf457/bin/python -m testmodels.vlm.truth_b [ARCH ...]``: the same runs and rules as
truth_optimum_intel.py (its run_folder / reference / verdict: processor + OVModelForVisualCausalLM, forward
logits and generate(max_new_tokens=2) per image size, outcome fails / wrong / ok against the PyTorch model
fed by the healthy processor), in the venv these folders were exported with (archs_b.VENV: optimum-intel
2.2.0 refuses them under transformers 5.5.4) and with archs_b's build record (optimum_intel/build_b.json).
Each run also records what the processor returned (shapes, image_grid_thw) and every stage's output shape,
so the merger's rows (Qwen) are there beside the patch rows the vision stage emits. Results merge by folder
id into truth.json, re-read just before writing so a concurrent run's folders are kept.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from testmodels.vlm import truth_optimum_intel as T

BUILD = T.ROOT / "build_b.json"
_ARCHIVE: list[dict] = []  # every stage call of the current folder, with a marker per image size
_IMAGE = T.image  # the unmarked image maker (processor facts are taken outside the engine run)


def _instrumented() -> None:
    """Keep every stage call (run_folder keeps only the first per stage) and mark where each size starts."""
    rec_outputs, image = T.Recorder._rec_outputs, T.image

    def keep_outputs(self: Any, entry: dict, outs: dict) -> None:
        rec_outputs(self, entry, outs)
        _ARCHIVE.append({"stage": self._stage, "inputs": entry["inputs"], "outputs": entry["outputs"],
                         "out_dtypes": entry["out_dtypes"]})

    def marked_image(h: int, w: int) -> Any:
        _ARCHIVE.append({"size": [h, w]})
        return image(h, w)

    T.Recorder._rec_outputs = keep_outputs
    T.image = marked_image


def _fresh_prefill() -> None:
    """A direct forward with the whole prompt computes its M-RoPE index again, as generate()'s prefill does.

    optimum-intel 2.2.0's Qwen2-VL / Qwen2.5-VL runtime caches rope_deltas on the model and recomputes the
    index only when cache_position[0] == 0 or nothing is cached: a second ``model(**inputs)`` (no
    cache_position) gets 1-D text positions for its image tokens, silently (logits off by ~0.4 % of their
    scale on these folders; generate() is right). That is an API-call artifact, not a folder's contract, so
    the truth's forward starts from no cached index."""
    from optimum.intel.openvino import modeling_visual_language as M

    for cls in (M._OVQwen2VLForCausalLM, M._OVQwen2_5_VLForCausalLM):
        forward = cls.forward

        def fresh(self: Any, input_ids: Any = None, *a: Any, _forward: Any = forward, **kw: Any) -> Any:
            if kw.get("past_key_values") is None and kw.get("cache_position") is None:
                self.rope_deltas = None
            return _forward(self, input_ids, *a, **kw)

        cls.forward = fresh


def _per_size() -> dict[tuple[int, int], list[dict]]:
    out: dict[tuple[int, int], list[dict]] = {}
    cur: list[dict] | None = None
    for e in _ARCHIVE:
        if "size" in e:
            cur = out.setdefault(tuple(e["size"]), [])
        elif cur is not None:
            cur.append(e)
    return out


def _processor_facts(folder: Path, arch: dict) -> dict[tuple[int, int], dict]:
    """What the folder's processor returns per size (shapes; image_grid_thw values), outside the engine run."""
    from transformers import AutoProcessor

    facts: dict[tuple[int, int], dict] = {}
    try:
        proc = AutoProcessor.from_pretrained(str(folder))
    except Exception as e:
        return {tuple(s): {"error": T.err(e)} for s in arch["image_sizes"]}
    for h, w in arch["image_sizes"]:
        try:
            inp = proc(images=_IMAGE(h, w), text=arch["prompt"], return_tensors="pt")
        except Exception as e:
            facts[(h, w)] = {"error": T.err(e)}
            continue
        f: dict[str, Any] = {"shapes": {k: list(v.shape) for k, v in inp.items()}}
        if "image_grid_thw" in inp:
            f["image_grid_thw"] = inp["image_grid_thw"].tolist()
        if "pixel_attention_mask" in inp:
            f["pixel_attention_mask_ones"] = int(inp["pixel_attention_mask"].sum())
        facts[(h, w)] = f
    return facts


def _stage_facts(calls: list[dict]) -> dict:
    """Per stage: how often it ran on the prefill and the output shapes of its first call."""
    first: dict[str, dict] = {}
    for c in calls:
        first.setdefault(c["stage"], {"inputs": c["inputs"], "outputs": c["outputs"], "out_dtypes": c["out_dtypes"]})
    return first


def run_case(folder: Path, arch: dict, ref: dict, tok_id: int) -> list[dict]:
    _ARCHIVE.clear()
    runs = T.run_folder(folder, arch, ref, tok_id)
    calls = _per_size()
    proc = _processor_facts(folder, arch)
    for r in runs:
        size = tuple(r["image"])
        stages = _stage_facts(calls.get(size, []))
        r["stages"] = stages
        r["processor"] = proc.get(size, {})
        merger = stages.get("vision_embeddings_merger")
        if merger:
            r["merger_rows"] = next(iter(merger["outputs"].values()))[0]
    return runs


def main(argv: list[str]) -> None:
    from testmodels.vlm import seeds as S
    from testmodels.vlm.archs_b import ARCHS

    _instrumented()
    _fresh_prefill()
    build = json.loads(BUILD.read_text())
    names = [a for a in (argv or sorted(build["archs"])) if a in build["archs"]]
    tools = {t: md.version(t) for t in ("optimum-intel", "optimum", "openvino", "transformers", "torch",
                                        "tokenizers", "pillow")}
    results: dict[str, dict] = {}
    seeds = S.load()
    t_all = time.time()
    for name in names:
        arch = dict(build["archs"][name])
        arch["image_sizes"] = [tuple(s) for s in arch["image_sizes"]]
        healthy = T.ROOT / name
        tok_id = json.loads((healthy / "config.json").read_text())["image_token_id"]
        ref = T.reference(ARCHS[name], healthy, arch, tok_id)
        cases: list[tuple[str, Path, dict | None]] = [(f"optimum_intel/{name}", healthy, None)]
        with tempfile.TemporaryDirectory(prefix="vlm_seed_b_") as tmp:
            for s in (s for s in seeds if s["base"] == f"optimum_intel/{name}"):
                cases.append((s["id"], S.materialize(s, Path(tmp) / s["id"]), s))
            for fid, folder, seed in cases:
                t1 = time.time()
                runs = run_case(folder, arch, ref, tok_id)
                for r in runs:
                    r["ref_image_tokens"] = ref[tuple(r["image"])]["image_tokens"]
                results[fid] = {"arch": name, "layout": T.LAYOUT, "folder": seed["base"] if seed else fid,
                                "seed": seed["id"] if seed else None, "class": seed["class"] if seed else None,
                                "heldout": bool(seed["heldout"]) if seed else False, "runs": runs,
                                "verdict": T.verdict(runs), "tools": tools, "venv": build["venv"],
                                "seconds": round(time.time() - t1, 1), "files_sha256": T.files_sha256(folder)}
                print(f"{fid:45s} {results[fid]['verdict']:6s} "
                      + " ".join(f"{r['image'][0]}x{r['image'][1]}:{r['outcome']}" for r in runs), flush=True)
        # as truth_optimum_intel: what a seed changed is its outcome where the healthy run was ok
        base = {tuple(r["image"]): r["outcome"] for r in results[f"optimum_intel/{name}"]["runs"]}
        for fid, _, _seed in cases[1:]:
            for r in results[fid]["runs"]:
                r["healthy_outcome"] = base[tuple(r["image"])]
            on_ok = [r for r in results[fid]["runs"] if r["healthy_outcome"] == "ok"]
            results[fid]["seed_verdict"] = T.verdict(on_ok) if on_ok else None
    truth = json.loads(T.TRUTH.read_text()) if T.TRUTH.exists() else {}
    truth["layouts"] = sorted(set(truth.get("layouts", [])) | {T.LAYOUT})
    truth.setdefault("tolerance", f"wrong if max |logits[-1] - ref[-1]| > {T.TOL_ABS} + {T.TOL_REL} * max |ref[-1]|")
    truth.setdefault("ov_config", T.OV_CONFIG)
    truth.setdefault("export_failures", {}).update(build.get("export_failures", {}))
    truth.setdefault("folders", {}).update(results)
    T.TRUTH.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    print(f"truth_b: {time.time() - t_all:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
