"""The arithmetic of each image processor family and of each processor's placeholder count.

Citations (transformers v5.25.0, the PIL backends; the torchvision ones compute the same sizes) are in
rules/data/processors.toml next to each class; the comments here say which function a step mirrors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Params = dict[str, Any]


@dataclass
class Layout:
    """What the image processor makes of one image (before the processor counts tokens)."""

    pixel_values: tuple[int, ...]
    extras: dict[str, tuple[int, ...]] = field(default_factory=dict)
    values: dict[str, tuple[int, ...]] = field(default_factory=dict)
    tile: tuple[int, int] = (0, 0)  # (height, width) of each image the vision tower sees
    tiles: int = 1  # images the vision tower sees for this source image
    rows: int = 0  # Idefics3 split grid (0, 0 when not split)
    cols: int = 0
    crops: int = 0  # Gemma 3 pan-and-scan crops
    grid: tuple[int, int, int] = (0, 0, 0)  # Qwen2-VL (t, h, w) patch grid


def _channels(p: Params) -> int:
    mean = p.get("image_mean")
    return len(mean) if isinstance(mean, (list, tuple)) else 3


# --- shortest-edge / fixed resize and center crop (CLIP, LLaVA, SigLIP; LLaVA-NeXT tiles) ---


def resize_size(h: int, w: int, size: dict[str, int]) -> tuple[int, int]:
    """PilBackend.resize: shortest_edge keeps the aspect (image_transforms.get_resize_output_image_size)."""
    if size.get("shortest_edge") and not size.get("longest_edge"):
        se = int(size["shortest_edge"])
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = se, int(se * long / short)
        return (new_long, new_short) if w <= h else (new_short, new_long)
    if size.get("height") and size.get("width"):
        return int(size["height"]), int(size["width"])
    raise ValueError(f"size {size} is not one graphlint's arithmetic follows")


def crop_size_of(h: int, w: int, p: Params) -> tuple[int, int]:
    if p.get("do_pad") and p.get("_pad_square"):  # LlavaImageProcessor pads to a square first
        h = w = max(h, w)
    if p.get("do_resize", True):
        h, w = resize_size(h, w, p["size"])
    crop = p.get("crop_size")
    if p.get("do_center_crop") and crop:  # center_crop pads when smaller: always the crop size
        h, w = int(crop["height"]), int(crop["width"])
    return h, w


def crop(h: int, w: int, p: Params) -> Layout:
    th, tw = crop_size_of(h, w, p)
    return Layout((1, _channels(p), th, tw), tile=(th, tw))


# --- LLaVA-NeXT anyres ---


def select_best_resolution(size: tuple[int, int], pinpoints: list[list[int]]) -> tuple[int, int]:
    """image_processing_utils.select_best_resolution, same float arithmetic."""
    oh, ow = size
    best, best_eff, best_waste = (0, 0), 0, float("inf")
    for ph, pw in pinpoints:
        scale = min(pw / ow, ph / oh)
        dw, dh = int(ow * scale), int(oh * scale)
        eff = min(dw * dh, ow * oh)
        waste = pw * ph - eff
        if eff > best_eff or (eff == best_eff and waste < best_waste):
            best, best_eff, best_waste = (ph, pw), eff, waste
    return best


def anyres(h: int, w: int, p: Params) -> Layout:
    size, crop_d = p["size"], p.get("crop_size") or {}
    bh, bw = select_best_resolution((h, w), p["image_grid_pinpoints"])
    # _preprocess: tiles are cut at the crop height (else size height, else shortest_edge)
    patch = int(crop_d.get("height") or size.get("height") or size["shortest_edge"])
    tiles = math.ceil(bh / patch) * math.ceil(bw / patch)  # divide_to_patches steps by `patch`
    th, tw = crop_size_of(patch, patch, p)
    c = _channels(p)
    return Layout((1, 1 + tiles, c, th, tw), {"image_sizes": (1, 2)}, {"image_sizes": (h, w)},
                  tile=(th, tw), tiles=1 + tiles)


def llava_next_features(h: int, w: int, th: int, tw: int, p: Params) -> int:
    """processing_llava_next._get_number_of_features (before the 'default' strategy's -1)."""
    bh, bw = select_best_resolution((h, w), p["image_grid_pinpoints"])
    scale_h, scale_w = bh // th, bw // tw
    ph, pw = th // p["patch_size"], tw // p["patch_size"]
    cur_h, cur_w = ph * scale_h, pw * scale_w
    if w / h > cur_w / cur_h:
        new_h = int(round(h * (cur_w / w), 7))
        cur_h -= ((cur_h - new_h) // 2) * 2
    else:
        new_w = int(round(w * (cur_h / h), 7))
        cur_w -= ((cur_w - new_w) // 2) * 2
    # unpadded features + one newline per row + the base image
    return cur_h * cur_w + cur_h + ph * pw + p.get("num_additional_image_tokens", 0)


# --- Qwen2-VL / Qwen2.5-VL ---


def smart_resize(h: int, w: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """image_processing_pil_qwen2_vl.smart_resize."""
    if max(h, w) / min(h, w) > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {max(h, w) / min(h, w)}")
    hb, wb = round(h / factor) * factor, round(w / factor) * factor
    if hb * wb > max_pixels:
        beta = math.sqrt((h * w) / max_pixels)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return hb, wb


def qwen2vl(h: int, w: int, p: Params) -> Layout:
    ps, ms, tps = p["patch_size"], p["merge_size"], p["temporal_patch_size"]
    if p.get("do_resize", True):
        h, w = smart_resize(h, w, ps * ms, p["min_pixels"], p["max_pixels"])
    gh, gw = h // ps, w // ps
    c = _channels(p)
    return Layout((gh * gw, c * tps * ps * ps), {"image_grid_thw": (1, 3)}, {"image_grid_thw": (1, gh, gw)},
                  tile=(h, w), grid=(1, gh, gw))


# --- Idefics3 / SmolVLM image splitting ---


def _rescale_to_max_len(h: int, w: int, max_len: int) -> tuple[int, int]:
    ar = w / h
    if w >= h:
        w = max_len
        h = int(w / ar)
        h += h % 2
    else:
        h = max_len
        w = int(h * ar)
        w += w % 2
    return max(h, 1), max(w, 1)


def _scale_below(h: int, w: int, max_len: int) -> tuple[int, int]:
    ar = w / h
    if w >= h and w > max_len:
        w = max_len
        h = int(w / ar)
    elif h > w and h > max_len:
        h = max_len
        w = int(h * ar)
    return max(h, 1), max(w, 1)


def split(h: int, w: int, p: Params) -> Layout:
    size, mx = p["size"], int(p["max_image_size"]["longest_edge"])
    if p.get("do_resize", True):
        if size.get("longest_edge"):  # resize -> get_resize_output_image_size
            h, w = _scale_below(*_rescale_to_max_len(h, w, int(size["longest_edge"])), p["_max_side"])
        else:
            h, w = int(size["height"]), int(size["width"])
    rows = cols = 0
    if p.get("do_image_splitting"):
        ar = w / h  # resize_for_vision_encoder: up to multiples of max_image_size
        if w >= h:
            w = math.ceil(w / mx) * mx
            h = math.ceil(int(w / ar) / mx) * mx
        else:
            h = math.ceil(h / mx) * mx
            w = math.ceil(int(h * ar) / mx) * mx
        if h > mx or w > mx:  # split_images: a grid of mx x mx crops plus the global image
            rows, cols = (h - mx) // mx + 1, (w - mx) // mx + 1
            frames, th, tw = rows * cols + 1, mx, mx
        else:
            frames, th, tw = 1, h, w
    else:
        frames, th, tw = 1, mx, mx
    extras = {"pixel_attention_mask": (1, frames, th, tw)} if p.get("do_pad", True) else {}
    return Layout((1, frames, _channels(p), th, tw), extras, tile=(th, tw), tiles=frames, rows=rows, cols=cols)


# --- Gemma 3 (fixed size, optional pan-and-scan) ---


def pan_and_scan_crops(h: int, w: int, p: Params) -> int:
    """image_processing_pil_gemma3.pan_and_scan: how many crops it cuts (0 when it does not)."""
    lo, most, ratio = p["pan_and_scan_min_crop_size"], p["pan_and_scan_max_num_crops"], \
        p["pan_and_scan_min_ratio_to_activate"]
    if w >= h:
        if w / h < ratio:
            return 0
        nw = min(math.floor(w / lo), math.floor(w / h + 0.5))
        nw, nh = min(most, max(2, nw)), 1
    else:
        if h / w < ratio:
            return 0
        nh = min(math.floor(h / lo), math.floor(h / w + 0.5))
        nh, nw = min(most, max(2, nh)), 1
    if min(math.ceil(w / nw), math.ceil(h / nh)) < lo:
        return 0
    return nh * nw


def pan_and_scan(h: int, w: int, p: Params) -> Layout:
    crops = pan_and_scan_crops(h, w, p) if p.get("do_pan_and_scan") else 0
    th, tw = crop_size_of(h, w, p)
    return Layout((1 + crops, _channels(p), th, tw), tile=(th, tw), tiles=1 + crops, crops=crops)


# --- InternVL (GotOcr2ImageProcessor's crop_to_patches) ---


def tiled_canvas(h: int, w: int, size: tuple[int, int], lo: int, hi: int) -> tuple[int, int]:
    """image_processing_pil_got_ocr2.get_optimal_tiled_canvas: (columns, rows) nearest the image's aspect."""
    grids = sorted(((c, r) for c in range(1, hi + 1) for r in range(1, hi + 1) if lo <= c * r <= hi),
                   key=lambda g: g[0] * g[1])
    aspect, area = w / h, w * h
    best, best_diff = (1, 1), float("inf")
    for g in grids:
        diff = abs(aspect - g[0] / g[1])
        if diff < best_diff:
            best, best_diff = g, diff
        elif diff == best_diff and area > 0.5 * size[0] * size[1] * g[0] * g[1]:
            best = g  # a tie goes to more tiles while the image covers more than half their area
    return best


def tiles(h: int, w: int, p: Params) -> Layout:
    th, tw = int(p["size"]["height"]), int(p["size"]["width"])
    n = 1
    if p.get("crop_to_patches") and p["max_patches"] > 1:
        cols, rows = tiled_canvas(h, w, (th, tw), p["min_patches"], p["max_patches"])
        n = cols * rows + (cols * rows != 1)  # plus the thumbnail when there is more than one tile
    return Layout((n, _channels(p), th, tw), tile=(th, tw), tiles=n)


# --- Phi-4-multimodal dynamic HD ---


def phi4_layout(h: int, w: int, p: Params) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """image_processing_phi4_multimodal._get_crop_layout: ((columns, rows), resized (w, h), padding (w, h))."""
    s, most = int(p["size"]["height"]), int(p["dynamic_hd"])
    cols, rows = math.ceil(w / float(s)), math.ceil(h / float(s))
    if cols * rows > most:
        ratios = sorted({(i, j) for n in range(1, most + 1) for i in range(1, n + 1) for j in range(1, n + 1)
                         if 1 <= i * j <= most}, key=lambda x: x[0] * x[1])
        best, best_diff = (1, 1), float("inf")  # find_closest_aspect_ratio; sorted(set) order as transformers'
        for r in ratios:
            diff = abs(w / h - r[0] / r[1])
            if diff < best_diff:
                best, best_diff = r, diff
            elif diff == best_diff and w * h > 0.5 * s * s * r[0] * r[1]:
                best = r
        cols, rows = best
    tw, th = s * cols, s * rows
    if tw / w < th / h:
        new, pad = (tw, int(h * (tw / w))), (0, th - int(h * (tw / w)))
    else:
        new, pad = (int(w * (th / h)), th), (tw - int(w * (th / h)), 0)
    if min(new[1], th) < 10 or min(new[0], tw) < 10:
        raise ValueError(f"the aspect ratio is very extreme {new}")
    return (cols, rows), new, pad


def phi4_tokens(h: int, w: int, p: Params) -> int:
    """_get_crop_attention_mask + _get_num_image_tokens without the tensors: the mask's unpadded part sampled
    at every other row and column of each crop, one newline per sampled row, and the fixed global-image
    count (256 + 1 + 16: transformers writes them as constants, whatever the size)."""
    (cols, rows), _, (pw, ph) = phi4_layout(h, w, p)
    ps = int(p["patch_size"])
    ms = int(p["size"]["height"]) // ps
    valid_h = ms * rows - (ph // ps if ph >= ps else 0)
    valid_w = ms * cols - (pw // ps if pw >= ps else 0)
    sampled_rows = sum(1 for r in range(valid_h) if (r % ms) % 2 == 0)
    sampled_cols = sum(1 for c in range(valid_w) if (c % ms) % 2 == 0)
    return 256 + 1 + sampled_rows * sampled_cols + (sampled_rows if valid_w > 0 else 0) + 16


def dynamic_hd(h: int, w: int, p: Params) -> Layout:
    (cols, rows), _, _ = phi4_layout(h, w, p)
    s = int(p["size"]["height"])
    ms, n = s // int(p["patch_size"]), 1 + cols * rows  # the global image first, then the crops
    return Layout((1, n, _channels(p), s, s), {"image_sizes": (1, 2), "image_attention_mask": (1, n, ms, ms)},
                  {"image_sizes": (s * rows, s * cols)}, tile=(s, s), tiles=n)


ARITH: dict[str, Callable[[int, int, Params], Layout]] = {
    "crop": crop, "anyres": anyres, "smart_resize": qwen2vl, "split": split, "pan_and_scan": pan_and_scan,
    "tiles": tiles, "dynamic_hd": dynamic_hd,
}

# --- placeholder tokens per processor ---


def _llava(h: int, w: int, lay: Layout, p: Params) -> int:
    th, tw = lay.tile
    n = (th // p["patch_size"]) * (tw // p["patch_size"]) + p.get("num_additional_image_tokens", 0)
    return n - (p.get("vision_feature_select_strategy") == "default")


def _llava_next(h: int, w: int, lay: Layout, p: Params) -> int:
    n = llava_next_features(h, w, lay.tile[0], lay.tile[1], p)
    return n - (p.get("vision_feature_select_strategy") == "default")


def _grid(h: int, w: int, lay: Layout, p: Params) -> int:
    t, gh, gw = lay.grid
    return t * gh * gw // p["merge_size"] ** 2


def _tiles(h: int, w: int, lay: Layout, p: Params) -> int:
    n = p["image_seq_len"]
    return n if lay.rows == 0 and lay.cols == 0 else n * (lay.rows * lay.cols + 1)


def _crops(h: int, w: int, lay: Layout, p: Params) -> int:
    return p["image_seq_length"] * (1 + lay.crops)


def _per_tile(h: int, w: int, lay: Layout, p: Params) -> int:
    return p["image_seq_length"] * lay.tiles


def _phi4(h: int, w: int, lay: Layout, p: Params) -> int:
    return phi4_tokens(h, w, p)


def _fixed(h: int, w: int, lay: Layout, p: Params) -> int:
    return p["image_seq_length"]


TOKENS: dict[str, Callable[[int, int, Layout, Params], int]] = {
    "llava": _llava, "llava_next": _llava_next, "grid": _grid, "tiles": _tiles, "crops": _crops, "fixed": _fixed,
    "per_tile": _per_tile, "phi4": _phi4,
}
