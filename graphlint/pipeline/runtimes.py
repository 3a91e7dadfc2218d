"""What a runtime's own code makes of the vision graphs' rows, where it is not a graph.

optimum-intel packs LLaVA-NeXT's tile rows in Python (unpadding, one newline row per line), reading
the tile grid from ``config.json``, not from the processor config. The facts are in
``rules/data/pipeline.toml`` (``[runtime.<layout>.<model_type>]``, with their source); this module
evaluates them. The arithmetic is transformers' (select_best_resolution, unpad_image), as the
runtime imports it.
"""

from __future__ import annotations

from typing import Any

from graphlint.pipeline import Pipeline
from graphlint.pipeline.processor_classes.arith import select_best_resolution


def facts_file() -> dict[str, Any]:
    """rules/data/pipeline.toml, parsed once: the pipeline rules' facts and the runtimes' tables."""
    from graphlint.target import data_file

    return data_file("pipeline.toml")


def entry(pipe: Pipeline) -> dict[str, Any] | None:
    model_type = pipe.configs.value("config.json", "model_type")
    return facts_file().get("runtime", {}).get(pipe.layout, {}).get(str(model_type))


def features(pipe: Pipeline, image: tuple[int, int]) -> tuple[int, str] | None:
    """(image features the runtime makes for a source image, what decided it), or None where the
    runtime's features are the graphs' rows (or the facts it reads are missing)."""
    e = entry(pipe)
    if e is None or e.get("features") != "anyres-packed":
        return None
    cfg = pipe.configs
    got = {k: cfg.value(*e[k].split(":", 1)) for k in ("pinpoints", "tile", "patch")}
    if not isinstance(got["pinpoints"], list) or not isinstance(got["tile"], int) or not isinstance(got["patch"], int):
        return None
    h, w = image
    bh, bw = select_best_resolution((h, w), [list(p) for p in got["pinpoints"]])
    gh, gw = bh // got["tile"], bw // got["tile"]
    if e.get("grid") == "swapped":
        gh, gw = gw, gh
    side = got["tile"] // got["patch"]
    cur_h, cur_w = gh * side, gw * side
    if w / h > cur_w / cur_h:  # modeling_llava_next.unpad_image
        new_h = int(round(h * (cur_w / w), 7))
        cur_h -= ((cur_h - new_h) // 2) * 2
    else:
        new_w = int(round(w * (cur_h / h), 7))
        cur_w -= ((cur_w - new_w) // 2) * 2
    why = (f"{pipe.layout} packs a {gh}x{gw} grid of tiles (read from {e['pinpoints']}"
           + (", height and width swapped by its pack_image_features" if e.get("grid") == "swapped" else "") + ")")
    return side * side + cur_h * cur_w + cur_h, why


def new_processing_from(pipe: Pipeline) -> tuple[int, str] | None:
    """(the least image tokens a prompt needs for the runtime's current processing, the config key), or
    None where the runtime has no such switch: below it the runtime expects a legacy prompt."""
    e = entry(pipe)
    ref = (e or {}).get("new_processing_from")
    if not ref:
        return None
    file, key = ref.split(":", 1)
    value = pipe.configs.value(file, key)
    return (value, ref) if isinstance(value, int) and not isinstance(value, bool) else None
