"""The prompts a deployment folder is run end to end at (``--confirm``): one per feed the folder's
processor makes, with the image tokens it inserts and the rows and features they need; where the
processor class is unknown, the size and token count the configs state; a two-image prompt where the
vision graph's batch is fixed (a sample). graphlint.confirm.pipeline runs them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphlint.confirm.plan import EXPORT, GIVEN, SAMPLE

MAX_PAIRS = 8  # two-image prompts run per folder (each single-image feed runs)
# the image token counts configs state, in the order a processor reads them (its own config first)
TOKEN_KEYS = ("image_seq_length", "num_image_tokens", "mm_tokens_per_image", "image_seq_len")
TOKEN_FILES = ("processor_config.json", "preprocessor_config.json", "config.json")
SIZE_KEYS = (("config.json", "vision_config.image_size"), ("processor_config.json", "image_processor.crop_size.height"),
             ("processor_config.json", "image_processor.size.height"), ("preprocessor_config.json", "crop_size.height"),
             ("preprocessor_config.json", "size.height"), ("preprocessor_config.json", "size.shortest_edge"),
             ("preprocessor_config.json", "image_size"))


@dataclass
class Case:
    """One prompt run end to end."""

    label: str  # "processor feed 3 (a 32x16 image)"
    kind: str  # GIVEN (the processor's feed) | EXPORT (a size the folder states) | SAMPLE (graphlint's)
    feeds: dict[str, np.ndarray]  # the vision stage's inputs
    images: int = 1
    image: tuple[int, int] | None = None  # source (height, width)
    tokens: int | None = None  # image tokens inserted into the prompt
    expected_rows: int | None = None  # rows the vision side must return for them
    features: int | None = None  # features the runtime's packing makes of those rows (None: the rows)
    packing: str = ""
    legacy: str = ""  # the runtime's own code refuses this prompt (and why)
    grids: list[list[int]] | None = None  # image_grid_thw rows (M-RoPE positions)
    token_key: tuple[str, str] | None = None  # (file, key) the token count comes from
    question: str = "rows"  # the unknown a run of it answers: rows | images per prompt | processor

    def shapes(self) -> dict[str, list[int]]:
        return {k: list(v.shape) for k, v in self.feeds.items()}

    def text(self) -> str:
        dims = ", ".join(f"'{k}' {'x'.join(map(str, v.shape))}" for k, v in self.feeds.items())
        return f"{self.label} ({dims})"

    def doc(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "kind": self.kind, "images": self.images, "shapes": self.shapes()}
        if self.image is not None:
            out["image"] = list(self.image)
        for k in ("tokens", "expected_rows", "features"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out



def _dims(v: Any) -> list[int | None]:
    return [d if isinstance(d, int) and d >= 0 else None for d in (v.shape or ())]


def _np_dtype(dtype: str | None) -> str:
    return "float32" if not dtype or dtype == "bfloat16" else dtype


def _stated(configs: Any, pairs: tuple[tuple[str, str], ...]) -> tuple[Any, str, str] | None:
    for file, key in pairs:
        v = configs.value(file, key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v, file, key
    return None


def _token_count(configs: Any) -> tuple[int, str, str] | None:
    """The image tokens per image the configs state (a custom processor's), and where."""
    pairs = []
    for file in TOKEN_FILES:
        for key in TOKEN_KEYS:
            pairs.append((file, key))
            if file == "processor_config.json":
                pairs.append((file, f"image_processor.{key}"))
    return _stated(configs, tuple(pairs))


def _pixel_array(shape: tuple[int, ...], dtype: str, rng: np.random.Generator, lo: float, hi: float) -> np.ndarray:
    dt = np.dtype(_np_dtype(dtype))
    if dt.kind in "iu":
        return rng.integers(max(int(lo), 0), int(hi) + 1, shape).astype(dt)
    return rng.uniform(lo, hi, shape).astype(dt)


def _vision_feeds(model: Any, pixel: Any, shapes: dict[str, tuple[int, ...]], values: dict[str, tuple[int, ...]],
                  images: int, rng: np.random.Generator, rng_range: tuple[float, float], patch: int | None
                  ) -> tuple[dict[str, np.ndarray], str]:
    """The vision stage's inputs for one case: the pixels, the processor's other tensors (their values where
    the processor's are known: image_grid_thw), and what the runtime makes itself from them (Idefics3's patch
    mask and positions, from config.json's vision patch size as optimum-intel does); or why not."""
    out: dict[str, np.ndarray] = {}
    for v in model.graph.inputs:
        if v.const is not None:
            continue
        dt = _np_dtype(v.dtype)
        if v is pixel:
            out[v.name] = _pixel_array(shapes[v.name], dt, rng, *rng_range)
        elif v.name in shapes:
            shape = shapes[v.name]
            if v.name in values:
                row = np.asarray(values[v.name], dtype=dt).reshape(1, -1)
                out[v.name] = np.resize(np.tile(row, (max(1, shape[0] // max(1, row.shape[0])), 1)), shape).astype(dt)
            elif "mask" in v.name:
                out[v.name] = np.ones(shape, dt)
            else:
                out[v.name] = np.zeros(shape, dt)
        elif pixel is not None and v.name in ("patch_attention_mask", "patch_position_ids") and patch:
            ps = shapes[pixel.name]
            b, h, w = ps[0], ps[-2] // patch, ps[-1] // patch
            if v.name == "patch_attention_mask":
                out[v.name] = np.ones((b, h, w), dt)
            else:
                out[v.name] = np.broadcast_to(np.arange(h * w, dtype=dt), (b, h * w)).copy()
        elif v.shape is not None and all(isinstance(d, int) for d in v.shape):
            out[v.name] = np.zeros(tuple(v.shape), dt)
        else:
            return {}, f"the vision stage's input '{v.name}' is made by the runtime in a way graphlint does not know"
    return out, ""


def plan_cases(c: Any, seed: int = 0) -> tuple[list[Case], str]:
    """The prompts to run for a pipeline's contracts (graphlint.pipeline.contracts.Contracts), or why none."""
    from graphlint.pipeline import runtimes
    from graphlint.pipeline.contracts import batched, expected_rows, pixel_input

    if not c.chain or c.merge_edge() is None or any(s not in c.stages for s in c.chain):
        return [], "the folder has no vision chain merged into a language model"
    first = c.stages[c.chain[0]].model
    pixel = pixel_input(first)
    configs = c.pipeline.configs
    patch = _stated(configs, (("config.json", "vision_config.patch_size"),))
    patch_size = patch[0] if patch else None
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    proc = c.processor
    if proc is not None:
        lo, hi = proc.pixel.range
        legacy = runtimes.new_processing_from(c.pipeline)
        pairs = 0
        for i, f in enumerate(c.feeds):
            shapes = f.fed.get(c.chain[0]) or {}
            if not shapes or (f.images > 1 and pairs >= MAX_PAIRS):
                continue
            pairs += f.images > 1
            feeds, why = _vision_feeds(first, pixel, shapes, dict(f.feed.values), f.images, rng, (lo, hi), patch_size)
            if why:
                return [], why
            want = expected_rows(proc, f.feed)
            packed = runtimes.features(c.pipeline, f.feed.image)
            features = packed[0] * f.images if packed else (f.feed.tokens if want != f.feed.tokens else None)
            grid = f.feed.values.get("image_grid_thw")
            said = f"a {f.feed.image[1]}x{f.feed.image[0]} image" + (f", {f.images} in one prompt" if f.images > 1 else "")
            case = Case(f"processor feed {i + 1} ({said})", GIVEN, feeds, f.images, f.feed.image, f.feed.tokens, want,
                        features, packed[1] if packed else "", grids=[list(grid)] * f.images if grid else None,
                        token_key=_first_key(proc))
            if legacy is not None and f.images == 1 and f.feed.tokens < legacy[0]:
                file, key = legacy[1].split(":", 1)
                case.legacy = (f"{file} says {key} = {legacy[0]} and {c.pipeline.layout} expands a prompt with fewer "
                               f"image tokens ({f.feed.tokens}) itself as a legacy prompt")
            cases.append(case)
        singles = [x for x in cases if x.images == 1]
        if singles and not batched(first) and pixel is not None and pixel.shape and isinstance(pixel.shape[0], int):
            one = singles[0]  # a prompt of two images where the graph fixes its batch: whether it happens is unknown
            two = {k: np.concatenate([v, v]) if v.ndim else v for k, v in one.feeds.items()}
            cases.append(Case(f"two images in one prompt ({one.label.split('(', 1)[1].rstrip(')')} twice)", SAMPLE,
                              two, 2, one.image, 2 * (one.tokens or 0), 2 * (one.expected_rows or 0),
                              None if one.features is None else 2 * one.features, one.packing,
                              grids=(one.grids or [])*2 or None, token_key=one.token_key, question="images per prompt"))
        return cases, ("" if cases else "the processor's feeds do not reach the vision stage's inputs")
    # a processor graphlint has no arithmetic for: the size and the token count the folder states
    if pixel is None or not pixel.shape or len(pixel.shape) != 4:
        return [], "no processor arithmetic, and the vision stage's image input is not [batch, channels, height, width]"
    dims = _dims(pixel)
    size = _stated(configs, SIZE_KEYS)
    h = dims[2] if dims[2] is not None else (size[0] if size else None)
    w = dims[3] if dims[3] is not None else (size[0] if size else None)
    if h is None or w is None:
        return [], "no processor arithmetic, and neither the configs nor the vision graph state an image size"
    said = f"{size[1]} {size[2]} = {size[0]}" if size and (dims[2] is None or dims[3] is None) else "the export's size"
    shape = (dims[0] or 1, dims[1] or 3, h, w)
    feeds, why = _vision_feeds(first, pixel, {pixel.name: shape}, {}, 1, rng, (-1.0, 1.0), patch_size)
    if why:
        return [], why
    count = _token_count(configs)
    tokens = count[0] * shape[0] if count else None
    return [Case(f"the size the folder states ({said})", EXPORT, feeds, shape[0], (h, w), tokens, tokens,
                 token_key=(count[1], count[2]) if count else None, question="processor")], ""


def _first_key(proc: Any) -> tuple[str, str] | None:
    from graphlint_rules.gl8001_image_tokens_vs_features import TOKEN_KEYS as KEYS

    ref = next((proc.keys[k] for k in KEYS if k in proc.keys), None)
    return (ref.file, ref.key) if ref is not None else None
