"""Truth for hand-exported VLM folders: run each pipeline end to end, the way a user's code does.

For each folder (healthy ones under testmodels/vlm/hand/, seeds from hand/seeds.toml materialized into a
temp folder by :mod:`testmodels.vlm.hand_seeds`): the transformers processor loaded from the folder makes
pixel_values / input_ids / attention_mask from seeded synthetic images and a prompt with the image
placeholder; the vision graph runs on pixel_values, the embedding graph on input_ids; the merge copies
transformers' (LlavaModel / Qwen2VLModel.get_placeholder_mask + masked_scatter: features cast to the
embeddings' dtype, ``tokens * hidden == features.numel()`` or "Image features and image tokens do not
match", rows scattered in order); the LM runs on the result. Position ids are what transformers makes:
LLaVA ``cumsum(mask) - 1``, Qwen2-VL ``get_rope_index`` ([3, batch, seq]) from the folder's config.json.

Engines: ONNX Runtime (CPU), OpenVINO compiling the .onnx on CPU, and OpenVINO with
INFERENCE_NUM_THREADS=1. Outcome per run:
* fails: the processor, an engine or the merge raised (its message is kept);
* wrong: it ran, but a stage output's shape contradicts the graph's declared static dims, or the logits
  differ from the PyTorch model's on the healthy processor's inputs by more than ATOL (at the
  attended positions);
* ok otherwise.

``python -m testmodels.vlm.hand_runner [--out testmodels/vlm/truth_hand.json]``
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from functools import cache
from typing import Any

import numpy as np
import tomllib

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
HAND = os.path.join(HERE, "hand")
TRUTH = os.path.join(HERE, "truth_hand.json")
ATOL = 1e-3  # logits of these tiny models are O(0.1-1); an f32 export matches PyTorch to ~1e-6
ENGINES = ("ort", "openvino", "openvino_1thread")
# (width, height) of the seeded synthetic images; "pair" is a padded batch of two (square + wide).
IMAGES = {"square": (32, 32), "wide": (64, 32), "tall": (32, 64), "small": (16, 16), "large": (128, 128)}
RUNS = (*IMAGES, "pair")


class MergeError(RuntimeError):
    pass


def kind_of(folder: str) -> str:
    with open(os.path.join(folder, "config.json")) as f:
        return "qwen2vl" if json.load(f)["model_type"] == "qwen2_vl" else "llava"


def pipeline(folder: str) -> dict[str, Any]:
    with open(os.path.join(folder, "graphlint.toml"), "rb") as f:
        return tomllib.load(f)["pipeline"]


def image(name: str) -> Any:
    from PIL import Image

    w, h = IMAGES[name]
    rng = np.random.default_rng(sorted(IMAGES).index(name))
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


@cache
def prepared(folder: str, run: str) -> dict[str, np.ndarray] | str:
    """The processor's outputs for a run, or its error (made once, in the parent, before forking)."""
    try:
        return processor_inputs(folder, run)
    except Exception as exc:
        return "processor: " + first_line(exc)


@cache
def loaded(auto: Any, folder: str) -> Any:
    return auto.from_pretrained(folder)


def processor_inputs(folder: str, run: str) -> dict[str, np.ndarray]:
    from transformers import AutoProcessor

    from testmodels.vlm.hand_export import PROMPTS

    names = ["square", "wide"] if run == "pair" else [run]
    kind = kind_of(folder)
    prompts = PROMPTS[kind][: len(names)]
    images = [image(n) for n in names]
    if kind == "llava":
        out = loaded(AutoProcessor, folder)(text=prompts, images=images, return_tensors="np", padding=True)
        return {k: np.asarray(v) for k, v in out.items()}
    return qwen_inputs(folder, prompts, images)


def qwen_inputs(folder: str, prompts: list[str], images: list[Any]) -> dict[str, np.ndarray]:
    """Qwen2VLProcessor.__call__ without its video processor (it needs torchvision): the image processor,
    then each <|image_pad|> expanded to grid_thw.prod() // merge_size**2 tokens (replace_image_token)."""
    from transformers import AutoImageProcessor, AutoTokenizer

    image_proc = loaded(AutoImageProcessor, folder)
    tok = loaded(AutoTokenizer, folder)
    vis = image_proc(images=images, return_tensors="np")
    grids = iter(np.asarray(vis["image_grid_thw"]))
    texts = []
    for prompt in prompts:
        head, *rest = prompt.split("<|image_pad|>")
        for part in rest:
            head += "<|image_pad|>" * int(np.prod(next(grids)) // image_proc.merge_size**2) + part
        texts.append(head)
    text = tok(texts, return_tensors="np", padding=True)
    ids = np.asarray(text["input_ids"])
    return {"input_ids": ids, "attention_mask": np.asarray(text["attention_mask"]),
            "pixel_values": np.asarray(vis["pixel_values"]), "image_grid_thw": np.asarray(vis["image_grid_thw"]),
            "mm_token_type_ids": (ids == tok.convert_tokens_to_ids("<|image_pad|>")).astype(np.int64)}


# --- PyTorch reference -------------------------------------------------------------------------

@cache
def torch_model(kind: str) -> Any:
    from testmodels.vlm.hand_export import llava_model, qwen_model

    return llava_model() if kind == "llava" else qwen_model("eager")


_REFS: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}


def reference(base: str, run: str) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch logits and attention mask on the healthy base folder's processor outputs (cached by model
    kind and those outputs: the LLaVA bases share model and processor)."""
    import torch

    feeds = prepared(base, run)
    assert not isinstance(feeds, str), feeds  # a healthy folder's processor works
    kind = kind_of(base)
    key = (kind, hashlib.sha256(b"".join(feeds[k].tobytes() + str(feeds[k].shape).encode() for k in sorted(feeds)))
           .hexdigest())
    if key in _REFS:
        return _REFS[key]
    model = torch_model(kind)
    args = {k: torch.from_numpy(v) for k, v in feeds.items()}  # mm_token_type_ids: Qwen2-VL's rope index
    with torch.no_grad():
        _REFS[key] = model(**args).logits.numpy(), feeds["attention_mask"]
    return _REFS[key]


def position_ids(folder: str, feeds: dict[str, np.ndarray]) -> np.ndarray:
    mask = feeds["attention_mask"].astype(np.int64)
    if kind_of(folder) == "llava":
        pos = np.cumsum(mask, -1) - 1
        return np.where(mask == 0, 1, pos).astype(np.int64)
    import torch
    from transformers import AutoConfig, Qwen2VLModel

    cfg = AutoConfig.from_pretrained(folder)
    with torch.device("meta"):
        model = Qwen2VLModel(cfg)
    grid = feeds.get("image_grid_thw")
    pos, _ = model.get_rope_index(torch.from_numpy(feeds["input_ids"]), torch.from_numpy(feeds["mm_token_type_ids"]),
                                  None if grid is None else torch.from_numpy(grid), None, torch.from_numpy(mask))
    return pos.numpy().astype(np.int64)


# --- engines ---------------------------------------------------------------------------------------

class Stage:
    """One graph compiled for one engine; run() feeds by input name and returns outputs by name."""

    def __init__(self, path: str, engine: str):
        import onnx

        graph = onnx.load(path, load_external_data=False).graph
        self.declared = {o.name: [d.dim_value if d.HasField("dim_value") else None
                                  for d in o.type.tensor_type.shape.dim] for o in graph.output}
        self.engine = engine
        if engine == "ort":
            import onnxruntime as ort

            self.sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            self.inputs = [i.name for i in self.sess.get_inputs()]
        else:
            import openvino as ov

            # f32: the CPU plugin's default precision is bf16 on AMX/AVX512-BF16 machines (this one), which
            # moves these logits by ~5e-3 and would make the truth depend on the CPU.
            cfg: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32"}
            if engine == "openvino_1thread":
                cfg["INFERENCE_NUM_THREADS"] = 1
            core = ov.Core()
            if OV_CACHE:  # a recompile after a failed run imports the blob instead (3x faster, same graph)
                core.set_property({"CACHE_DIR": OV_CACHE})
            self.sess = core.compile_model(path, "CPU", cfg)
            # a port may carry several tensor names; feed and read by the ONNX names
            self.ports = {n: p for p in self.sess.inputs for n in p.get_names()}
            self.inputs = list(self.ports)
            self.outputs = {n: p for p in self.sess.outputs for n in p.get_names()}

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = {k: v for k, v in feeds.items() if k in self.inputs}
        if self.engine == "ort":
            names = [o.name for o in self.sess.get_outputs()]
            return dict(zip(names, self.sess.run(None, feeds), strict=True))
        res = self.sess.create_infer_request().infer({self.ports[k]: v for k, v in feeds.items()})
        return {name: np.asarray(res[port]) for name, port in self.outputs.items() if name in self.declared}


def first_line(exc: BaseException) -> str:
    """The first informative line (OpenVINO puts its source location first, then the check)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("Exception from")] or lines
    return f"{type(exc).__name__}: {' '.join(lines[:2]) if lines else ''}"[:400]


def shape_contradiction(stage: str, name: str, got: tuple, declared: list[int | None]) -> str | None:
    if len(got) != len(declared) or any(d is not None and d != g for d, g in zip(declared, got, strict=True)):
        return f"{stage} output {name} has shape {list(got)}, the graph declares {declared}"
    return None


def merge(feeds: dict[str, np.ndarray], embeds: np.ndarray, feats: np.ndarray, token_id: int, kind: str) -> np.ndarray:
    """transformers' get_placeholder_mask + masked_scatter, in numpy."""
    feats = feats.astype(embeds.dtype)  # image_features.to(inputs_embeds.dtype)
    mask = feeds["input_ids"] == token_id
    tokens, hidden = int(mask.sum()), embeds.shape[-1]
    rows = feats.shape[0] * feats.shape[1] if kind == "llava" and feats.ndim == 3 else feats.shape[0]
    if tokens * hidden != feats.size:
        raise MergeError(f"Image features and image tokens do not match: tokens {tokens}, features {rows}")
    out = embeds.copy()
    out[mask] = feats.reshape(-1)[: tokens * hidden].reshape(tokens, hidden)
    return out


def empty_past(cfg: dict[str, Any], lm: Stage, batch: int) -> dict[str, np.ndarray]:
    """The prompt step's past: [batch, kv_heads, 0, head_dim] sized from config.json, as a generate loop does."""
    text = cfg.get("text_config", cfg)
    heads = text.get("num_key_value_heads", text["num_attention_heads"])
    head_dim = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    return {n: np.zeros((batch, heads, 0, head_dim), np.float32) for n in lm.inputs if n.startswith("past_key_values")}


def run_one(folder: str, base: str, run: str, stages: dict[str, Stage]) -> dict[str, Any]:
    kind = kind_of(folder)
    rec: dict[str, Any] = {"image": run, "outcome": "ok", "message": "", "fed": {}, "vision_rows": None,
                           "image_tokens": None}
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    token_id = cfg.get("image_token_index", cfg.get("image_token_id"))
    feeds = prepared(folder, run)
    if isinstance(feeds, str):
        return {**rec, "outcome": "fails", "message": feeds}
    rec["image_tokens"] = int((feeds["input_ids"] == token_id).sum())
    wrong: list[str] = []

    def call(name: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        st = stages[name]
        rec["stage"] = name  # the stage running when something fails
        rec["fed"][name] = {k: list(v.shape) for k, v in inputs.items() if k in st.inputs}
        out = st.run(inputs)
        for oname, val in out.items():
            msg = shape_contradiction(name, oname, val.shape, st.declared[oname])
            if msg:
                wrong.append(msg)
        return out

    try:
        vis_in = {"pixel_values": feeds["pixel_values"]}
        if "image_grid_thw" in feeds:
            vis_in["image_grid_thw"] = feeds["image_grid_thw"]
        feats = next(iter(call("vision", vis_in).values()))
        rec["vision_rows"] = int(np.prod(feats.shape[:-1])) if feats.ndim else 0
        embeds = call("embed", {"input_ids": feeds["input_ids"]})["inputs_embeds"]
        merged = merge(feeds, embeds, feats, token_id, kind)
        lm_in = {"inputs_embeds": merged, "attention_mask": feeds["attention_mask"].astype(np.int64),
                 "position_ids": position_ids(folder, feeds), **empty_past(cfg, stages["lm"], len(merged))}
        logits = call("lm", lm_in)["logits"]  # present.* (a cache LM) are shape-checked in call()
    except MergeError as exc:
        return {**rec, "outcome": "fails", "message": str(exc)}
    except Exception as exc:
        return {**rec, "outcome": "fails", "message": first_line(exc)}
    ref, ref_mask = reference(base, run)
    if logits.shape != ref.shape:
        wrong.append(f"logits shape {list(logits.shape)} != PyTorch's {list(ref.shape)} on the healthy processor")
    else:
        keep = ref_mask.astype(bool) & feeds["attention_mask"].astype(bool)
        diff = float(np.abs(logits - ref)[keep].max())
        rec["max_abs_diff"] = diff
        if not diff <= ATOL:
            wrong.append(f"logits differ from PyTorch by {diff:.3g} (> {ATOL})")
    if wrong:
        rec.update(outcome="wrong", message="; ".join(wrong))
    return rec


_STAGES: dict[tuple[str, str], Any] = {}
OV_CACHE = ""  # OpenVINO model cache of the running child


def stage(path: str, engine: str) -> Stage:
    """Compiled once per graph content and engine (seeds that only edit JSON reuse their base's graphs)."""
    with open(path, "rb") as f:
        key = (hashlib.sha256(f.read()).hexdigest(), engine)
    if key not in _STAGES:
        try:
            _STAGES[key] = Stage(path, engine)
        except Exception as exc:
            _STAGES[key] = exc
    got = _STAGES[key]
    if isinstance(got, Exception):
        raise got
    return got


Job = tuple[str, str, str]  # folder, healthy base folder, run


def run_job(job: Job, engine: str) -> dict[str, Any]:
    folder, base, run = job
    try:
        stages = {s["name"]: stage(os.path.join(folder, s["model"]), engine) for s in pipeline(folder)["stage"]}
    except Exception as exc:
        return {"engine": engine, "image": run, "outcome": "fails", "message": "compile: " + first_line(exc),
                "fed": {}, "vision_rows": None, "image_tokens": None}
    rec = {"engine": engine, **run_one(folder, base, run, stages)}
    if rec["outcome"] == "fails" and engine != "ort":
        # OpenVINO's compiled model keeps state from a failed size: the frozen Qwen2-VL vision graph, once fed
        # another size, then fails (or returns 0 rows, 1 thread) at its export size too. The next run gets
        # the stages that ran here compiled afresh.
        for st in list(_STAGES):
            if _STAGES[st] is stages.get("vision") or _STAGES[st] is stages.get(rec.get("stage")):
                del _STAGES[st]
    return rec


def run_isolated(jobs: list[Job], engines: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """The jobs, one forked child per engine (run side by side): OpenVINO can crash (SIGSEGV) on a graph
    fed a size it was frozen against. A crash is that run's outcome ("fails"); the jobs after it go to a
    fresh child."""
    for folder, base, run in jobs:  # processor outputs and PyTorch references made here, inherited
        prepared(folder, run)
        reference(base, run)
    with tempfile.TemporaryDirectory() as tmp:
        pids = {}
        for engine in engines:
            path = os.path.join(tmp, engine)
            pid = os.fork()
            if pid == 0:  # child
                global OV_CACHE
                OV_CACHE = path + ".ovcache"
                code = 0
                try:
                    with open(path, "w") as w:
                        for job in jobs:
                            w.write(json.dumps(run_job(job, engine)) + "\n")
                            w.flush()
                except BaseException:
                    code = 1
                os._exit(code)
            pids[engine] = (pid, path)
        out = {}
        for engine, (pid, path) in pids.items():
            _, status = os.waitpid(pid, 0)
            with open(path) as f:
                recs = [json.loads(line) for line in f if line.endswith("\n")]
            if len(recs) < len(jobs):
                how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                       else f"exit {os.waitstatus_to_exitcode(status)}")
                recs.append({"engine": engine, "image": jobs[len(recs)][2], "outcome": "fails", "fed": {},
                             "vision_rows": None, "image_tokens": None, "message": f"engine process crashed ({how})"})
                recs += run_isolated(jobs[len(recs):], (engine,))[engine] if len(recs) < len(jobs) else []
            out[engine] = recs
    return out


def verdict(runs: list[dict[str, Any]]) -> str:
    outs = {r["outcome"] for r in runs}
    return "fails" if "fails" in outs else "wrong" if "wrong" in outs else "ok"


def folders() -> list[dict[str, Any]]:
    """Every healthy folder and seed: id, base, seed class (None for a base folder), heldout."""
    from testmodels.vlm.hand_seeds import load_seeds

    out = []
    for name in sorted(os.listdir(HAND)):
        if os.path.isfile(os.path.join(HAND, name, "graphlint.toml")):
            out.append({"id": name, "base": name, "seed": None, "heldout": False})
    out += [{"id": s["id"], "base": s["base"], "seed": s["class"], "heldout": s["heldout"]} for s in load_seeds()]
    return out


def exporter(base: str) -> str:
    return "dynamo" if "dynamo" in base else "torchscript"


def truth(entries: list[dict[str, Any]], tmp: str, engines: tuple[str, ...] = ENGINES,
          runs: tuple[str, ...] = RUNS) -> dict[str, Any]:
    """Run every entry on every engine; per entry its runs and a verdict per engine. For a seed also the
    verdict over the runs its base passed on that engine (what the seed itself changed)."""
    from testmodels.vlm.hand_seeds import materialize

    paths = {e["id"]: os.path.join(HAND, e["id"]) if e["seed"] is None else materialize(e["id"], tmp)
             for e in entries}
    jobs = [(paths[e["id"]], os.path.join(HAND, e["base"]), r) for e in entries for r in runs]
    t0 = time.time()
    per_engine = run_isolated(jobs, engines)
    out: dict[str, Any] = {}
    for i, e in enumerate(entries):
        recs = {eng: per_engine[eng][i * len(runs):(i + 1) * len(runs)] for eng in engines}
        out[e["id"]] = {"layout": "hand", "exporter": exporter(e["base"]), "base": e["base"], "seed": e["seed"],
                        "heldout": e["heldout"], "runs": [r for eng in engines for r in recs[eng]],
                        "verdict": {eng: verdict(recs[eng]) for eng in engines}}
    for e in entries:
        if e["seed"] is not None and e["base"] in out:
            base_runs = out[e["base"]]["runs"]
            ok = {(r["engine"], r["image"]) for r in base_runs if r["outcome"] == "ok"}
            out[e["id"]]["verdict_where_base_ok"] = {
                eng: verdict([r for r in out[e["id"]]["runs"] if r["engine"] == eng and (eng, r["image"]) in ok])
                if any(k[0] == eng for k in ok) else None for eng in engines}
    out["_meta"] = {"atol": ATOL, "engines": list(engines), "images": IMAGES, "seconds": round(time.time() - t0, 1),
                    "merge": "transformers get_placeholder_mask + masked_scatter (numel check)",
                    "openvino": "compile_model(.onnx, CPU, INFERENCE_PRECISION_HINT=f32)"}
    return out


def main(argv: list[str]) -> None:
    out = argv[1] if argv[:1] == ["--out"] else TRUTH
    entries = folders()
    with tempfile.TemporaryDirectory() as tmp:
        result = truth(entries, tmp)
    for k, v in result.items():
        if k != "_meta":
            print(k, v["verdict"], v.get("verdict_where_base_ok", ""))
    with open(out, "w") as f:
        json.dump(dict(sorted(result.items())), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
