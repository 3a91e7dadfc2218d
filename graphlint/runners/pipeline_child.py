"""The pipeline engine child: ``python -m graphlint.runners.pipeline_child JOB.json`` loads a deployment
folder's stages on ONE engine and runs the whole pipeline at each case of the job, the tensors passed
from stage to stage in this process, as a runtime does:

1. the vision chain (vision stage, then each merger along the edges) on the case's feeds, and the rows
   its last stage returns counted;
2. those rows against the image tokens (the parent's arithmetic: the rows the processor's tokens need,
   and the features the runtime's own packing makes of them, graphlint.pipeline.runtimes);
3. the merge: the text-embedding stage on token ids holding the image tokens, the rows scattered into
   them at those positions (transformers' ``masked_scatter``: ``tokens * hidden == features.numel()``);
4. the language model on the merged embeddings with the attention mask, position ids (M-RoPE's three
   rows where the stage takes them), ``beam_idx`` and an empty KV cache as the stage declares them, and
   its logits' shape checked.

The result file is rewritten after every step, so the parent knows where a crash happened. The job's
format is :func:`graphlint.confirm.pipeline.write_job`'s.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import numpy as np

from graphlint.runners import write_progress


class Failed(Exception):
    """A case stopped: ``kind`` says at which step (vision, rows, tokens, legacy, width, dtype, text, lm, logits)."""

    def __init__(self, kind: str, stage: str, message: str, node: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.stage, self.node = kind, stage, node


def _rows(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape[:-1])) if len(shape) >= 2 else 0


def _fill(spec: dict[str, Any], bind: dict[str | None, int], rng: np.random.Generator) -> np.ndarray:
    """An input the runtime makes itself (a merger's attention mask, rotary table; an LM's cache)."""
    shape = tuple(d if isinstance(d, int) else bind.get(spec.get("bind"), bind.get(None, 1)) for d in spec["dims"])
    dt = np.dtype(spec["dtype"])
    kind = spec["kind"]
    if kind == "zeros":
        return np.zeros(shape, dt)
    if kind == "ones":
        return np.ones(shape, dt)
    if kind == "arange":
        n = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return np.broadcast_to(np.arange(n, dtype=dt).reshape(shape[1:] or (n,)), shape).copy()
    if dt.kind in "iub":
        return np.zeros(shape, dt)
    return rng.standard_normal(shape).astype(dt)


def _call(sessions: dict[str, Any], name: str, feeds: dict[str, np.ndarray], kind: str) -> dict[str, np.ndarray]:
    from graphlint.runners import RunError

    try:
        return sessions[name].run(feeds)
    except RunError as e:
        raise Failed(kind, name, str(e), e.node) from None


def _port(outs: dict[str, np.ndarray], name: str, index: int = 0) -> np.ndarray:
    """An output by its name, else by its place (OpenVINO returns a port under any one of its names)."""
    if name in outs:
        return outs[name]
    values = list(outs.values())
    return values[index] if index < len(values) else values[0]


def _prompt(case: dict[str, Any], job: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(input_ids [1, L] with each image's tokens between text tokens, the image-token mask)."""
    tid, vocab = int(job["image_token_id"]), max(2, int(job["vocab"]))
    per = [case["tokens"] // case["images"]] * case["images"]
    per[-1] += case["tokens"] - sum(per)
    parts: list[np.ndarray] = []

    def text(n: int) -> np.ndarray:
        ids = rng.integers(0, vocab, n)
        return np.where(ids == tid, (tid + 1) % vocab, ids)

    parts.append(text(3))
    for n in per:
        parts.append(np.full(n, tid))
        parts.append(text(2))
    ids = np.concatenate(parts).astype(np.int64)[None, :]
    return ids, ids == tid


def _mrope(ids_mask: np.ndarray, grids: list[list[int]] | None, merge: int) -> np.ndarray:
    """Qwen2-VL's get_rope_index for one prompt: text tokens count on all three rows; an image's tokens
    take (t, h, w) of its merged grid after the text before it; text after an image continues from the
    image's largest position + 1."""
    mask = ids_mask[0]
    n = mask.shape[0]
    pos = np.zeros((3, n), np.int64)
    grids = list(grids or [])
    i, nxt = 0, 0
    while i < n:
        if not mask[i]:
            pos[:, i] = nxt
            nxt += 1
            i += 1
            continue
        j = i
        while j < n and mask[j]:
            j += 1
        count = j - i
        t, h, w = (grids.pop(0) if grids else (1, 1, count))
        h, w = max(1, h // merge), max(1, w // merge)
        if t * h * w != count:  # the block is not the grid: positions as text (the counts were compared before)
            t, h, w = 1, 1, count
        tt, hh, ww = np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij")
        pos[0, i:j], pos[1, i:j], pos[2, i:j] = tt.ravel() + nxt, hh.ravel() + nxt, ww.ravel() + nxt
        nxt = int(pos[:, i:j].max()) + 1
        i = j
    return pos[:, None, :]


def run_case(sessions: dict[str, Any], job: dict[str, Any], case: dict[str, Any], rec: dict[str, Any],
             rng: np.random.Generator) -> None:
    with np.load(case["feeds"], allow_pickle=False) as z:
        feeds = {k: z[k] for k in z.files}
    outs: dict[str, np.ndarray] = {}
    chain = job["chain"]
    rec["outputs"] = {}
    for i, name in enumerate(chain):
        if i:
            feeds = {}
            bind: dict[str | None, int] = {}
            for link in job["links"]:
                if link["source"] == chain[i - 1] and link["dest"] == name:
                    v = _port(outs, link["output"], link.get("index", 0))
                    feeds[link["input"]] = v
                    bind.setdefault(None, int(v.shape[0]) if v.ndim else 1)
            bind["merged"] = max(1, bind.get(None, 1) // int(job.get("merge_size") or 1) ** 2)
            for spec in job["derived"].get(name, []):
                if spec["name"] not in feeds:
                    feeds[spec["name"]] = _fill(spec, bind, rng)
        outs = _call(sessions, name, feeds, "vision")
        rec["outputs"][name] = {k: list(v.shape) for k, v in outs.items()}
    merge = job["merge"]
    feats = _port(outs, merge["output"], merge.get("index", 0))
    rows, width = _rows(feats.shape), int(feats.shape[-1]) if feats.ndim else 0
    rec.update(rows=rows, width=width, dtype=str(feats.dtype))
    tokens = case.get("tokens")
    want = case.get("expected_rows")
    if tokens is None:
        rec["kind"] = "rows only"
        return
    if want is not None and rows != want:
        need = f" the runtime needs {want} rows to pack into them" if want != tokens else ""
        raise Failed("rows", chain[-1], f"Image features and image tokens do not match: tokens {tokens}, features "
                                        f"{rows}{' (' + need.strip() + ')' if need else ''}")
    features = case.get("features")
    if features is not None and features != tokens:
        raise Failed("tokens", chain[-1], f"Image features and image tokens do not match: tokens {tokens}, features "
                                          f"{features} ({case.get('packing') or 'the runtime packs the rows'})")
    if case.get("legacy"):
        raise Failed("legacy", chain[-1], case["legacy"])
    ids, mask = _prompt(case, job, rng)
    text = job["text"]
    tfeeds = {text["ids"]: ids}
    image_rows = feats.reshape(-1, width) if width else feats.reshape(0, 0)
    if features is not None and features != rows:  # the runtime's packing: its count, not its values
        image_rows = np.resize(image_rows, (features, width))
    if text.get("image_input"):  # the embedding graph merges the image features itself (onnxruntime-genai)
        tfeeds[text["image_input"]] = image_rows
    for spec in text.get("extra", []):
        tfeeds.setdefault(spec["name"], _fill(spec, {None: ids.shape[1]}, rng))
    embeds = _port(_call(sessions, text["stage"], tfeeds, "text"), text["output"])
    rec["embeds"] = list(embeds.shape)
    if not text.get("image_input"):
        hidden = int(embeds.shape[-1])
        if tokens * hidden != image_rows.size:
            raise Failed("width", chain[-1], f"Image features and image tokens do not match: tokens {tokens} x "
                                             f"{hidden} values, features {image_rows.shape[0]} x {width} values")
        if image_rows.dtype != embeds.dtype:
            if merge.get("cast") is False:
                raise Failed("dtype", chain[-1], f"Index put requires the source and destination dtypes match, got "
                                                 f"{embeds.dtype} for the destination and {image_rows.dtype} for the "
                                                 f"source ({merge.get('cast_source')})")
            image_rows = image_rows.astype(embeds.dtype)
        embeds = embeds.copy()
        embeds[mask] = image_rows
    lm = job["lm"]
    seq = int(embeds.shape[1])
    lfeeds: dict[str, np.ndarray] = {lm["embeds"]: embeds}
    for spec in lm["inputs"]:
        kind, dt = spec["kind"], np.dtype(spec["dtype"])
        if kind == "mask":
            lfeeds[spec["name"]] = np.ones((1, seq), dt)
        elif kind == "positions":
            lfeeds[spec["name"]] = np.arange(seq, dtype=dt)[None, :]
        elif kind == "mrope":
            lfeeds[spec["name"]] = _mrope(mask, case.get("grids"), int(job.get("merge_size") or 1)).astype(dt)
        elif kind == "beam":
            lfeeds[spec["name"]] = np.zeros((1,), dt)
        elif kind == "token_type":
            lfeeds[spec["name"]] = mask.astype(dt)
        elif kind == "past":
            shape = tuple(1 if i == 0 else (d if isinstance(d, int) else 0) for i, d in enumerate(spec["dims"]))
            lfeeds[spec["name"]] = np.zeros(shape, dt)
        elif kind == "ids":
            lfeeds[spec["name"]] = ids.astype(dt)
        else:
            lfeeds[spec["name"]] = _fill(spec, {None: seq}, rng)
    session = sessions[lm["stage"]]
    try:
        louts = _call(sessions, lm["stage"], lfeeds, "lm")
    finally:
        request = getattr(session, "request", None)  # a stateful LM (optimum-intel) keeps the KV cache between calls
        if request is not None and hasattr(request, "reset_state"):
            request.reset_state()
    logits = _port(louts, lm["logits"])
    rec["logits"] = list(logits.shape)
    vocab = lm.get("vocab")
    ok_seq = logits.ndim == 3 and logits.shape[0] == 1 and logits.shape[1] in (seq, 1)
    if not ok_seq or (vocab and logits.shape[-1] != vocab) or logits.size == 0:
        raise Failed("logits", lm["stage"], f"the language model returns logits {list(logits.shape)} for a prompt of "
                                            f"{seq} tokens, not [1, {seq}, {vocab or 'vocab'}]")


def main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    from graphlint.runners import RunError, failure

    result: dict[str, Any] = {"step": "load", "load": {}, "cases": []}
    write_progress(job["result"], result)
    module = importlib.import_module(f"graphlint.runners.{job['engine']}")
    sessions: dict[str, Any] = {}
    for name, path in job["stages"].items():
        result["step"] = f"load {name}"
        write_progress(job["result"], result)
        try:
            sessions[name] = module.Session(path, job.get("config") or {}, None)
            result["load"][name] = {"ok": True}
            result["version"] = sessions[name].version
        except RunError as e:
            result["load"][name] = {"ok": False, "error": str(e), "node": e.node}
        except Exception as e:
            err = failure(e)
            result["load"][name] = {"ok": False, "error": str(err), "node": err.node}
    if not all(v["ok"] for v in result["load"].values()):
        result["step"] = None
        write_progress(job["result"], result)
        return 0
    for i, case in enumerate(job["cases"]):
        result["step"] = f"case {i}"
        write_progress(job["result"], result)
        rec: dict[str, Any] = {"kind": "ok"}
        try:
            run_case(sessions, job, case, rec, np.random.default_rng(int(job.get("seed", 0)) + i))
        except Failed as e:
            rec.update(kind=e.kind, stage=e.stage, error=str(e), node=e.node)
        result["cases"].append(rec)
    result["step"] = None
    write_progress(job["result"], result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
