"""What a VLM folder's processor feeds the vision graph, read from its configs as the runtime reads them.

transformers is not a dependency of graphlint, so the arithmetic is graphlint's own: per image
processor class (how a source image becomes ``pixel_values``) and per processor class (how many
placeholder tokens it puts into ``input_ids``), with the defaults and the transformers source each
follows tabled in rules/data/processors.toml. tests/test_processors.py runs the real transformers
processors of that release on many image sizes and compares every shape, value and token count.

Config layouts read: transformers 4 writes the image processor to ``preprocessor_config.json`` and
the processor's own keys to ``processor_config.json``; transformers 5 nests the image processor in
``processor_config.json`` under ``"image_processor"``. Both are read, the nested one first.

:meth:`Processor.feeds` raises ValueError where transformers raises too (Qwen2-VL beyond an aspect
ratio of 200, Phi-4's "very extreme" aspect ratios). ``Processor.notes`` says where the runtime's processor
lacks a key the arithmetic took from config.json instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphlint.pipeline.processor_classes import ARITH, TOKENS

PREPROCESSOR = "preprocessor_config.json"
PROCESSOR = "processor_config.json"
MODEL = "config.json"
TOKENIZER = "tokenizer_config.json"
TOKENIZER_JSON = "tokenizer.json"  # read for the image token's id when the caller passes it


@dataclass(frozen=True)
class KeyRef:
    """Where a value was read, for messages and SARIF locations."""

    file: str  # "preprocessor_config.json"
    key: str  # dotted path: "size.shortest_edge", "image_processor.image_grid_pinpoints"
    value: Any


@dataclass(frozen=True)
class ImageFeed:
    """What the processor makes of ONE source image."""

    image: tuple[int, int]  # source (height, width)
    pixel_values: tuple[int, ...]  # shape of pixel_values for this image alone, as the processor emits it
    tokens: int  # image placeholder tokens inserted into input_ids for it
    rows: int  # rows the vision side (vision + projector / merger) must emit for it
    extras: dict[str, tuple[int, ...]]  # other image tensors and their shapes
    values: dict[str, tuple[int, ...]]  # small integer tensors' values (image_grid_thw row, image_sizes)


@dataclass(frozen=True)
class PixelContract:
    dtype: str  # "float32"
    rescale: bool
    rescale_factor: float
    normalize: bool
    mean: tuple[float, ...]
    std: tuple[float, ...]
    range: tuple[float, float]  # value range of pixel_values the processor emits
    keys: dict[str, KeyRef]
    dtype_elsewhere: tuple[str, ...] = ()  # what other transformers releases / backends emit (raw pixels only)


@dataclass(frozen=True)
class Processor:
    cls: str  # the image processor class named in the configs (canonical: no Fast / Pil suffix)
    source: str  # citation: transformers files and tag the arithmetic follows
    image_token: str | None
    image_token_id: int | None  # config.json image_token_index / image_token_id, else the tokenizer's
    pixel: PixelContract
    keys: dict[str, KeyRef]  # every config fact the arithmetic read, by parameter name
    processor_cls: str = ""  # the processor class (LlavaProcessor, ...): it makes the token count
    pixel_key: str = "pixel_values"  # the processor's name for the image tensor (Phi-4: image_pixel_values)
    # what the runtime's processor would do differently from this arithmetic, said once per fact (a processor key
    # missing from processor_config.json, taken from config.json here, on which transformers' processor fails)
    notes: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)  # parameters no config states: the class default
    params: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def feeds(self, sizes: Iterable[tuple[int, int]]) -> list[ImageFeed]:
        table = _table()
        arith = ARITH[table["image_processor"][self.cls]["arith"]]
        count = TOKENS[table["processor"][self.processor_cls]["tokens"]]
        out = []
        for h, w in sizes:
            lay = arith(int(h), int(w), self.params)
            n = count(int(h), int(w), lay, self.params)
            out.append(ImageFeed((int(h), int(w)), lay.pixel_values, n, n, dict(lay.extras), dict(lay.values)))
        return out

    def sample_sizes(self) -> list[tuple[int, int]]:
        return _samples(table_arith(self.cls), self.params)


def _table() -> dict[str, Any]:
    from graphlint.target import data_file

    return data_file("processors.toml")


def table_arith(cls: str) -> str:
    return str(_table()["image_processor"][cls]["arith"])


def class_default(cls: str, key: str, default: Any = None) -> Any:
    """What image processor class ``cls`` does when no config states ``key`` (rules/data/processors.toml)."""
    return _table()["image_processor"][cls].get("defaults", {}).get(key, default)


def canonical(name: str) -> str:
    """Config class name -> table name: transformers writes Fast/Pil variants and old FeatureExtractors."""
    for suffix in ("Fast", "Pil"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.replace("FeatureExtractor", "ImageProcessor")


def _image_processor(files: Mapping[str, Mapping[str, Any]]) -> tuple[str, str, Mapping[str, Any]] | None:
    """(file, key prefix, dict) of the image processor config, or None."""
    nested = (files.get(PROCESSOR) or {}).get("image_processor")
    if isinstance(nested, Mapping) and nested.get("image_processor_type"):
        return PROCESSOR, "image_processor.", nested
    pre = files.get(PREPROCESSOR) or {}
    # old vision configs name a CLIPFeatureExtractor; an audio feature extractor (Phi-4's) has no image keys
    vision = pre.get("feature_extractor_type") and any(k in pre for k in ("image_mean", "size", "crop_size"))
    if pre.get("image_processor_type") or vision:
        return PREPROCESSOR, "", pre
    return None


def _named_classes(files: Mapping[str, Mapping[str, Any]]) -> tuple[str | None, str | None]:
    ip = _image_processor(files)
    ip_cls = None
    if ip:
        ip_cls = canonical(str(ip[2].get("image_processor_type") or ip[2].get("feature_extractor_type")))
    proc = None
    for name in (PROCESSOR, PREPROCESSOR, TOKENIZER):
        if (files.get(name) or {}).get("processor_class"):
            proc = canonical(str(files[name]["processor_class"]))
            break
    if proc is None:
        proc = _table()["model_type"].get((files.get(MODEL) or {}).get("model_type", ""))
    if proc is None and ip_cls in _table()["image_processor"]:
        proc = _table()["image_processor"][ip_cls]["processor"]
    return ip_cls, proc


def unknown_class(files: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The processor class the configs name that graphlint has no arithmetic for, else None."""
    ip_cls, proc = _named_classes(files)
    if ip_cls is None:
        return None
    if ip_cls not in _table()["image_processor"]:
        return ip_cls
    if proc not in _table()["processor"]:
        return proc
    return None


def _dig(d: Mapping[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, Mapping) or part not in d:
            return None
        d = d[part]
    return d


def read_processor(files: Mapping[str, Mapping[str, Any]]) -> Processor | None:
    """The folder's processor, or None when no (known) image processor is described: see unknown_class."""
    if unknown_class(files) is not None:
        return None
    ip = _image_processor(files)
    ip_cls, proc = _named_classes(files)
    if ip is None or ip_cls is None or proc is None:
        return None
    t_ip, t_proc = _table()["image_processor"][ip_cls], _table()["processor"][proc]
    ip_file, prefix, ipd = ip
    params: dict[str, Any] = {"_max_side": t_ip.get("max_side", 4096), "_square": t_ip.get("default_to_square", False),
                              "_pad_square": ip_cls == "LlavaImageProcessor"}
    keys: dict[str, KeyRef] = {}
    defaults: dict[str, Any] = {}
    for name, default in t_ip["defaults"].items():
        if ipd.get(name) is not None:
            params[name] = ipd[name]
            keys[name] = KeyRef(ip_file, prefix + name, ipd[name])
            if isinstance(ipd[name], Mapping):  # "size.shortest_edge": the key a message names
                for sub, v in ipd[name].items():
                    keys[f"{name}.{sub}"] = KeyRef(ip_file, f"{prefix}{name}.{sub}", v)
        else:
            params[name], defaults[name] = default, default
    _normalize_sizes(params, ipd, ip_file, prefix, keys)
    for name, value in t_proc.get("images_kwargs", {}).items():  # the processor's call kwargs win
        if name in params:
            params[name] = value
            keys.pop(name, None)
            defaults[name] = value
    notes = _processor_params(files, t_proc, ipd, ip_file, prefix, params, keys, defaults)
    token, token_id = _image_token(files, t_proc, keys)
    return Processor(
        cls=ip_cls, source=f"{t_ip['source']}; {t_proc['source']}", image_token=token, image_token_id=token_id,
        pixel=_pixel(params, keys, t_ip), keys=keys, processor_cls=proc, defaults=defaults, params=params,
        pixel_key=str(t_ip.get("pixel_key", "pixel_values")), notes=tuple(notes),
    )


def _normalize_sizes(params: dict[str, Any], ipd: Mapping[str, Any], file: str, prefix: str,
                     keys: dict[str, KeyRef]) -> None:
    """Old configs write sizes as ints and Qwen2-VL's pixel bounds under several names."""
    for name in ("size", "crop_size"):
        v = params.get(name)
        if isinstance(v, int) and not isinstance(v, bool):
            # get_size_dict: an int size is a shortest edge unless the class defaults to square; crops are square
            edge = name == "size" and not params["_square"]
            params[name] = {"shortest_edge": v} if edge else {"height": v, "width": v}
    if "merge_size" in params:  # Qwen2-VL: min_pixels / max_pixels keys win over size (its __init__)
        size = dict(params["size"] or {})
        for name, new, old in (("min_pixels", "shortest_edge", "min_pixels"), ("max_pixels", "longest_edge",
                                                                               "max_pixels")):
            sub = new if new in size else old
            cur = size.get(sub)
            if ipd.get(name) is not None:
                keys[name] = KeyRef(file, prefix + name, ipd[name])
                cur = ipd[name]
            elif f"size.{sub}" in keys:
                keys[name] = keys[f"size.{sub}"]
            params[name] = int(cur)


def _processor_params(files: Mapping[str, Mapping[str, Any]], t_proc: Mapping[str, Any], ipd: Mapping[str, Any],
                      ip_file: str, prefix: str, params: dict[str, Any], keys: dict[str, KeyRef],
                      defaults: dict[str, Any]) -> list[str]:
    """The processor's own keys: processor_config.json, else config.json where it says, else defaults.

    Returns notes on keys the processor itself would lack (it has no default for them)."""
    notes = []
    pc, model = files.get(PROCESSOR) or {}, files.get(MODEL) or {}
    names = set(t_proc.get("defaults", {})) | set(t_proc.get("from_model", {}))
    if t_proc.get("seq_key"):  # PaliGemma: read from the image processor config
        name = t_proc["seq_key"]
        if ipd.get(name) is not None:
            params[name], keys[name] = ipd[name], KeyRef(ip_file, prefix + name, ipd[name])
        elif pc.get(name) is not None:
            params[name], keys[name] = pc[name], KeyRef(PROCESSOR, name, pc[name])
    for name in sorted(names):
        model_key = t_proc.get("from_model", {}).get(name)
        if pc.get(name) is not None:
            params[name], keys[name] = pc[name], KeyRef(PROCESSOR, name, pc[name])
        elif name in t_proc.get("defaults", {}):
            params[name] = defaults[name] = t_proc["defaults"][name]
        elif name in t_proc.get("none_default", ()):  # the processor's default is None: the count follows it
            params[name] = defaults[name] = None
            said = _dig(model, model_key) if model_key else None
            if said is not None:
                notes.append(f"{PROCESSOR} has no {name}: the processor counts as if None, while {MODEL} "
                             f"{model_key} = {said!r}")
        elif model_key and _dig(model, model_key) is not None:
            v = _dig(model, model_key)
            params[name], keys[name] = v, KeyRef(MODEL, model_key, v)
            notes.append(f"{PROCESSOR} has no {name}: transformers' {t_proc['source'].split()[2].rsplit('/', 1)[-1]} "
                         f"has none either (it fails or counts wrongly); {MODEL} {model_key} = {v!r} used here")
        else:
            notes.append(f"{PROCESSOR} has no {name} and {MODEL} has no {model_key}: the processor cannot count")
    return notes


def _image_token(files: Mapping[str, Mapping[str, Any]], t_proc: Mapping[str, Any],
                 keys: dict[str, KeyRef]) -> tuple[str | None, int | None]:
    tc, pc, model = files.get(TOKENIZER) or {}, files.get(PROCESSOR) or {}, files.get(MODEL) or {}
    token = t_proc["image_token"]
    if not t_proc.get("image_token_fixed"):
        extra, name = tc.get("extra_special_tokens"), t_proc.get("tokenizer_key", "image_token")
        found = [
            (TOKENIZER, name, tc.get(name)),
            (TOKENIZER, f"extra_special_tokens.{name}", extra.get(name) if isinstance(extra, Mapping) else None),
            (PROCESSOR, "image_token", pc.get("image_token")),
        ]
        for file, key, v in found:
            if isinstance(v, str):
                token, keys["image_token"] = v, KeyRef(file, key, v)
                break
    for key in ("image_token_index", "image_token_id", "vision_config.image_token_id"):
        v = _dig(model, key)
        if isinstance(v, int) and not isinstance(v, bool):
            keys["image_token_id"] = KeyRef(MODEL, key, v)
            return token, v
    added = (files.get(TOKENIZER_JSON) or {}).get("added_tokens") or []
    for entry in added:
        if isinstance(entry, Mapping) and entry.get("content") == token:
            keys["image_token_id"] = KeyRef(TOKENIZER_JSON, "added_tokens", entry.get("id"))
            return token, int(entry["id"])
    for tid, entry in (tc.get("added_tokens_decoder") or {}).items():
        if isinstance(entry, Mapping) and entry.get("content") == token:
            keys["image_token_id"] = KeyRef(TOKENIZER, f"added_tokens_decoder.{tid}", token)
            return token, int(tid)
    return token, None


def _pixel(params: Mapping[str, Any], keys: Mapping[str, KeyRef], t_ip: Mapping[str, Any]) -> PixelContract:
    rescale, normalize = bool(params.get("do_rescale")), bool(params.get("do_normalize"))
    factor = float(params.get("rescale_factor") or 1 / 255)
    mean = tuple(float(x) for x in params.get("image_mean") or (0.0, 0.0, 0.0))
    std = tuple(float(x) for x in params.get("image_std") or (1.0, 1.0, 1.0))
    lo, hi = 0.0, 255.0 * factor if rescale else 255.0
    if normalize:
        lows = [(lo - m) / s for m, s in zip(mean, std, strict=True)]
        highs = [(hi - m) / s for m, s in zip(mean, std, strict=True)]
        lo, hi = min(lows), max(highs)
    over = float(t_ip.get("overshoot", 0.0)) * (hi - lo)  # a resize after normalizing rings past the range
    lo, hi = lo - over, hi + over
    raw = not (rescale or normalize)  # pixels stay integers: the dtype is the class's (and varies by release)
    dtype = str(t_ip.get("raw_dtype", "uint8")) if raw else "float32"
    elsewhere = tuple(t_ip.get("raw_dtype_elsewhere", ())) if raw else ()
    names = ("do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std")
    return PixelContract(dtype, rescale, factor, normalize, mean, std, (lo, hi),
                         {n: keys[n] for n in names if n in keys}, elsewhere)


def _samples(arith: str, p: Mapping[str, Any]) -> list[tuple[int, int]]:
    """Source sizes that take every branch of the arithmetic at this config's scale."""
    aspects = [(1, 1), (3, 4), (4, 3), (1, 2), (2, 1), (1, 3), (3, 1), (9, 16), (16, 9), (5, 7)]
    if arith == "smart_resize":
        f = p["patch_size"] * p["merge_size"]
        lo, hi = math.isqrt(p["min_pixels"]), math.isqrt(p["max_pixels"])
        scales = [max(2, lo // 3), lo, lo + f // 2, (lo + hi) // 2, hi, hi * 2]
        extra = [(f * 3 + f // 2 - 1, f * 5 + f // 2), (f * 3 + f // 2, f * 2 + f // 2 + 1), (lo, lo * 10)]
    elif arith == "split":
        mx = int(p["max_image_size"]["longest_edge"])
        scales = [mx // 2, mx, mx + 1, 2 * mx, 3 * mx]
        extra = [(mx * 2 - 1, mx), (mx, mx * 4 + 3)]
    elif arith == "anyres":
        pins = p["image_grid_pinpoints"]
        base = min(min(x) for x in pins)
        scales = [base // 2, base, 2 * base]
        extra = [(h, w) for h, w in pins] + [(h // 2 + 1, w // 2) for h, w in pins] + [(base * 3, base // 2)]
    elif arith == "dynamic_hd":
        s = int(p["size"]["height"])
        scales = [s // 2, s, 2 * s, 3 * s]
        extra = [(s * 2 + 1, s * 7), (s, s * 9), (s * 5, s * 5), (s // 3 + 11, s * 2)]
    elif arith == "tiles":
        th = int(p["size"]["height"])
        scales = [th // 2, th, 2 * th, 4 * th]
        extra = [(th, th * p["max_patches"]), (th * 2, th * 3), (th * 3, th * 2), (th, th * 2 + 1), (th * 5, th)]
    else:
        size = p.get("crop_size") if p.get("do_center_crop") and p.get("crop_size") else p["size"]
        base = int(size.get("height") or size.get("shortest_edge") or 224)
        scales = [max(2, base // 2), base, 2 * base]
        extra = [(base, base * 3), (base * 3, base), (base + 1, base - 1)]
        if arith == "pan_and_scan":
            mc = int(p["pan_and_scan_min_crop_size"])
            # below the activation ratio, above it, crops capped, crops under the minimum size, and a side at
            # the minimum crop size where floor(side / min) and the rounded aspect disagree
            extra += [(mc * 2, int(mc * 2 * 1.1)), (mc * 2, mc * 5), (mc * 7, mc * 2), (mc // 2, mc * 2),
                      (mc, mc * 7 // 2), (mc * 7 // 2, mc), (mc * 2, mc * 20)]
    sizes = [(max(1, s * a // b), s) if a <= b else (s, max(1, s * b // a)) for s in scales for a, b in aspects]
    sizes += [(max(1, h), max(1, w)) for h, w in extra]
    return list(dict.fromkeys(sizes))
