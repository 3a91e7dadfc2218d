"""graphlint's processor arithmetic against the real transformers processors.

Each case builds a real transformers processor from a small config (no hub: the image processor
with explicit kwargs, a tiny tokenizer built offline with `tokenizers` holding the special tokens),
saves it with save_pretrained, reads the JSON files back into graphlint.pipeline.processors, then runs
the real processor on synthetic images of every size sample_sizes() names plus a seeded random set,
and compares pixel_values' shape and dtype, the image-token count in input_ids, every other image
tensor's shape and the small integer tensors' values.

Needs transformers (the dev venv's 5.25, the release rules/data/processors.toml cites) and pillow:
transformers 5 runs an image processor on its PIL backend or its torchvision one, and torchvision from
the index does not load with this torch. SmolVLM's processor also needs num2words. Where torchvision
loads, every case also runs on the torchvision processors (Phi-4-multimodal has no other); there, and
under another transformers release, raw pixels' dtype may be any the table lists. The committed VLM
folders (testmodels/vlm) are read by graphlint and run by their own processor as transformers loads it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("PIL", reason="transformers' image processors need pillow (or torchvision) to run")
T = pytest.importorskip("transformers", reason="the real processors are the reference")

from graphlint.pipeline.processors import Processor, read_processor, unknown_class  # noqa: E402

ROW_COL = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
GEMMA3_TOKENS = {"image_token": "<image_soft_token>", "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>"}


def tiny_tokenizer(specials: list[str], named: dict[str, str] | None = None) -> Any:
    """A word-level tokenizer with the processor's special tokens, built offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "[PAD]": 1, "<bos>": 2, "hello": 3, "world": 4}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = {"extra_special_tokens": named} if named else {}
    tok = T.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", bos_token="<bos>", **kw)
    if specials:
        tok.add_special_tokens({"additional_special_tokens": specials})
    return tok


def _no_video_processor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen2-VL's and SmolVLM's processors take a video processor, which needs torchvision; images never use it.

    ProcessorMixin's class check of that argument reads the video-processor registry, which is empty without
    torchvision: let None through (the image path is untouched).
    """
    from transformers.processing_utils import ProcessorMixin

    orig = ProcessorMixin.check_argument_for_proper_class

    def check(self: Any, name: str, arg: Any) -> Any:
        return None if name == "video_processor" and arg is None else orig(self, name, arg)

    monkeypatch.setattr(ProcessorMixin, "check_argument_for_proper_class", check)


def _ip(name: str, backend: str) -> Any:
    """transformers 5 names the torchvision-backed class plainly and the PIL one with a Pil suffix."""
    return getattr(T, name + "Pil" if backend == "pil" else name)


def _save(proc: Any, folder: str) -> dict[str, dict[str, Any]]:
    if getattr(proc, "video_processor", "absent") is None:  # save_pretrained cannot save a None attribute
        proc.tokenizer.save_pretrained(folder)
        config = {k: v for k, v in proc.to_dict().items() if k != "video_processor"}
        if "image_processor" not in config:  # transformers 4 keeps it in preprocessor_config.json
            proc.image_processor.save_pretrained(folder)
        with open(os.path.join(folder, "processor_config.json"), "w") as f:
            json.dump(config, f)
    else:
        proc.save_pretrained(folder)
    files = {}
    for name in os.listdir(folder):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                files[name] = json.load(f)
    return files


# name -> (builder taking the backend, prompt placeholder, random size range)
Case = tuple[Callable[[str], Any], str, int]


def _llava(**ip: Any) -> Callable[[str], Any]:
    def make(backend: str) -> Any:
        kw = {"size": {"shortest_edge": 32}, "crop_size": {"height": 32, "width": 32}} | ip
        cls = _ip("LlavaImageProcessor" if kw.pop("llava_cls", False) else "CLIPImageProcessor", backend)
        strategy = kw.pop("strategy", "default")
        return T.LlavaProcessor(image_processor=cls(**kw), tokenizer=tiny_tokenizer(["<image>"]), patch_size=8,
                                vision_feature_select_strategy=strategy, num_additional_image_tokens=1)
    return make


def _llava_next(backend: str, pinpoints: list[list[int]] | None = None, raw: bool = False) -> Any:
    pinpoints = pinpoints or [[32, 64], [64, 32], [64, 64], [96, 32], [32, 96]]
    kw = {"do_rescale": False, "do_normalize": False} if raw else {}
    ip = _ip("LlavaNextImageProcessor", backend)(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                                 image_grid_pinpoints=pinpoints, **kw)
    return T.LlavaNextProcessor(image_processor=ip, tokenizer=tiny_tokenizer(["<image>"]), patch_size=8,
                                vision_feature_select_strategy="default", num_additional_image_tokens=1)


def _qwen(cls_name: str, **ip: Any) -> Callable[[str], Any]:
    def make(backend: str) -> Any:
        return getattr(T, cls_name)(image_processor=_ip("Qwen2VLImageProcessor", backend)(**ip), video_processor=None,
                                    tokenizer=tiny_tokenizer(["<|image_pad|>", "<|video_pad|>"]))
    return make


def _idefics(cls_name: str, ip_name: str, **ip: Any) -> Callable[[str], Any]:
    def make(backend: str) -> Any:
        extra = {"video_processor": None} if cls_name == "SmolVLMProcessor" else {}
        kw = {"size": {"longest_edge": 96}, "max_image_size": {"longest_edge": 32}} | ip
        tok = tiny_tokenizer(["<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>", *ROW_COL])
        return getattr(T, cls_name)(image_processor=_ip(ip_name, backend)(**kw), tokenizer=tok, image_seq_len=4,
                                    **extra)
    return make


def _gemma3(backend: str, **ip: Any) -> Any:
    return T.Gemma3Processor(image_processor=_ip("Gemma3ImageProcessor", backend)(size={"height": 32, "width": 32},
                                                                                   **ip),
                             tokenizer=tiny_tokenizer([], GEMMA3_TOKENS), image_seq_length=5)


def _paligemma(backend: str) -> Any:
    ip = _ip("SiglipImageProcessor", backend)(size={"height": 32, "width": 32})
    ip.image_seq_length = 16
    return T.PaliGemmaProcessor(image_processor=ip, tokenizer=tiny_tokenizer([]))


def _internvl(**ip: Any) -> Callable[[str], Any]:
    def make(backend: str) -> Any:
        named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                 "video_token": "<video>"}
        kw = {"size": {"height": 32, "width": 32}, "max_patches": 6} | ip
        return T.InternVLProcessor(image_processor=_ip("GotOcr2ImageProcessor", backend)(**kw), video_processor=None,
                                   tokenizer=tiny_tokenizer([], named), image_seq_length=3)
    return make


def _phi4(backend: str) -> Any:
    if backend == "pil":
        pytest.skip("transformers has Phi-4-multimodal's image processor on torchvision only")
    named = {"image_token": "<|image|>", "audio_token": "<|audio|>"}
    cls = getattr(T, "Phi4MultimodalImageProcessor", None) or T.Phi4MultimodalImageProcessorFast  # transformers 4
    ip = cls(size={"height": 56, "width": 56}, patch_size=7, dynamic_hd=6)
    return T.Phi4MultimodalProcessor(image_processor=ip, audio_processor=T.Phi4MultimodalFeatureExtractor(),
                                     tokenizer=tiny_tokenizer([], named))


CASES: dict[str, Case] = {
    "llava": (_llava(), "hello <image> world", 160),
    "llava-no-crop-full": (_llava(do_center_crop=False, strategy="full"), "hello <image> world", 160),
    "llava-raw-uint8": (_llava(do_rescale=False, do_normalize=False), "hello <image> world", 160),
    "llava-rescale-only": (_llava(do_normalize=False), "hello <image> world", 160),
    "idefics3-raw": (_idefics("Idefics3Processor", "Idefics3ImageProcessor", do_rescale=False, do_normalize=False),
                     "hello <image> world", 300),
    "qwen2-vl-raw": (_qwen("Qwen2VLProcessor", min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64, do_rescale=False,
                           do_normalize=False), "hello <|image_pad|> world", 400),
    "llava-next-raw": (lambda backend: _llava_next(backend, raw=True), "hello <image> world", 300),
    "gemma3-raw": (lambda backend: _gemma3(backend, do_rescale=False, do_normalize=False),
                   "hello <start_of_image> world", 200),
    "phi4-multimodal": (_phi4, "hello <|image|> world", 500),
    "internvl-raw": (_internvl(do_rescale=False, do_normalize=False), "hello <IMG_CONTEXT> world", 300),
    "llava-pad-square": (_llava(llava_cls=True, do_pad=True, do_center_crop=False), "hello <image> world", 160),
    "llava-next": (_llava_next, "hello <image> world", 300),
    # the largest pinpoint first: small images fit all of them and the least waste decides
    "llava-next-big-first": (lambda backend: _llava_next(backend, [[64, 96], [64, 64], [32, 64], [64, 32], [96, 32], [32, 96]]),
                             "hello <image> world", 300),
    "qwen2-vl": (_qwen("Qwen2VLProcessor", min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64),
                 "hello <|image_pad|> world", 600),
    "qwen2.5-vl": (_qwen("Qwen2_5_VLProcessor", size={"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 30},
                         patch_size=14, merge_size=2), "hello <|image_pad|> world", 400),
    "qwen2-vl-patch16-merge1": (_qwen("Qwen2VLProcessor", patch_size=16, merge_size=1, min_pixels=64 * 64,
                                      max_pixels=256 * 256), "hello <|image_pad|> world", 500),
    "idefics3": (_idefics("Idefics3Processor", "Idefics3ImageProcessor"), "hello <image> world", 300),
    "idefics3-no-split": (_idefics("Idefics3Processor", "Idefics3ImageProcessor", do_image_splitting=False),
                          "hello <image> world", 300),
    "smolvlm": (_idefics("SmolVLMProcessor", "SmolVLMImageProcessor", size={"longest_edge": 128}),
                "hello <image> world", 300),
    "gemma3": (_gemma3, "hello <start_of_image> world", 200),
    "paligemma": (_paligemma, "<image>hello world", 200),
    "internvl": (_internvl(), "hello <IMG_CONTEXT> world", 300),
    "internvl-min2-max12": (_internvl(min_patches=2, max_patches=12), "hello <IMG_CONTEXT> world", 300),
}


def _sizes(proc: Processor, hi: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return proc.sample_sizes() + [(rng.randint(8, hi), rng.randint(8, hi)) for _ in range(25)]


def _image(h: int, w: int, seed: int) -> Any:
    """A PIL image as users pass them (a numpy array 3 pixels high reads as channels-first)."""
    from PIL import Image

    # extremes in every channel so the value range is exercised, noise elsewhere
    img = np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    img[0, 0], img[-1, -1] = 0, 255
    return Image.fromarray(img)


# the release processors.toml cites, on the PIL backend: every fact must hold exactly
REFERENCE = T.__version__ == "5.25.0"
IMAGE_KEYS = {"pixel_values", "image_pixel_values", "image_sizes", "image_grid_thw", "pixel_attention_mask",
              "image_attention_mask"}


def _compare(real: Any, proc: Processor, sizes: list[tuple[int, int]], prompt: str, strict: bool = REFERENCE,
             **call: Any) -> int:
    feeds = proc.feeds(sizes)
    assert proc.image_token_id is not None
    for (h, w), feed in zip(sizes, feeds, strict=True):
        # "pt": transformers 4's torchvision processors return nothing else
        out = real(images=[_image(h, w, h * 1000 + w)], text=[prompt], return_tensors="pt", **call)
        out = {k: np.asarray(v) for k, v in out.items()}
        where = f"image {h}x{w}"
        assert tuple(out[proc.pixel_key].shape) == feed.pixel_values, where
        assert int((out["input_ids"] == proc.image_token_id).sum()) == feed.tokens, where
        assert feed.rows == feed.tokens
        assert {k for k in out if k in IMAGE_KEYS} - {proc.pixel_key} == set(feed.extras), where
        for key, shape in feed.extras.items():
            assert tuple(out[key].shape) == shape, (where, key)
        for key, value in feed.values.items():
            assert tuple(int(x) for x in np.asarray(out[key]).reshape(-1)) == value, (where, key)
        pv = np.asarray(out[proc.pixel_key])
        if strict:
            assert str(pv.dtype) == proc.pixel.dtype, where
        else:  # another release or the torchvision backend: raw pixels' dtype varies
            assert str(pv.dtype) in (proc.pixel.dtype, *proc.pixel.dtype_elsewhere), where
        lo, hi = proc.pixel.range
        assert lo - 1e-5 <= float(pv.min()) and float(pv.max()) <= hi + 1e-5, (where, pv.min(), pv.max())
    return len(sizes)


def _backend(backend: str) -> None:
    if backend == "torchvision":
        from transformers.utils import is_torchvision_available

        if not is_torchvision_available():
            pytest.skip("torchvision is not installed: the index's torchvision does not load with the dev venv's torch "
                        "2.13; the PIL backend is the reference here")


@pytest.mark.parametrize("backend", ["pil", "torchvision"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_feeds_match_transformers(name: str, backend: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _backend(backend)
    if name.startswith("smolvlm"):
        pytest.importorskip("num2words", reason="transformers' SmolVLMProcessor refuses to start without num2words")
    _no_video_processor(monkeypatch)
    make, prompt, hi = CASES[name]
    real = make(backend)
    files = _save(real, str(tmp_path))
    assert unknown_class(files) is None
    proc = read_processor(files)
    assert proc is not None, sorted(files)
    assert proc.processor_cls == type(real).__name__
    assert proc.image_token_id == real.tokenizer.convert_tokens_to_ids(proc.image_token)
    assert "transformers v5.25.0" in proc.source
    n = _compare(real, proc, _sizes(proc, hi, seed=len(name)), prompt, strict=REFERENCE and backend == "pil")
    assert n >= 40


FOLDERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testmodels", "vlm")


def _folders() -> list[str]:
    out = []
    for layout in ("optimum_intel", "hand"):
        root = os.path.join(FOLDERS, layout)
        if os.path.isdir(root):
            out += sorted(f"{layout}/{d}" for d in os.listdir(root)
                          if os.path.isfile(os.path.join(root, d, "tokenizer_config.json")))
    return out


def _load_without_video(path: str, files: dict[str, dict[str, Any]], name: str) -> Any:
    """The folder's processor (class `name`) built from its parts with no video processor (needs torchvision)."""
    import inspect

    cls = getattr(T, name)
    pc = files.get("processor_config.json", {})
    params = inspect.signature(cls.__init__).parameters
    kw = {k: v for k, v in pc.items() if k in params and k not in ("image_processor", "tokenizer", "video_processor")}
    return cls(image_processor=T.AutoImageProcessor.from_pretrained(path),
               tokenizer=T.AutoTokenizer.from_pretrained(path), video_processor=None, **kw)


@pytest.mark.parametrize("folder", _folders())
def test_real_folders(folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed VLM deployment folders (optimum-intel exports, hand exports): their own processor."""
    path = os.path.join(FOLDERS, folder)
    files = {}
    for name in os.listdir(path):
        if name.endswith(".json"):
            with open(os.path.join(path, name)) as f:
                files[name] = json.load(f)
    proc = read_processor(files)
    assert proc is not None, sorted(files)
    try:
        real = T.AutoProcessor.from_pretrained(path)
    except ImportError:  # Qwen2-VL's / SmolVLM's video processor needs torchvision: images never use it
        if proc.processor_cls == "SmolVLMProcessor":
            pytest.importorskip("num2words", reason="transformers' SmolVLMProcessor refuses to start without it")
        _no_video_processor(monkeypatch)
        real = _load_without_video(path, files, proc.processor_cls)
    placeholder = getattr(real, "boi_token", None) or real.image_token
    hi = max(max(s) for s in proc.sample_sizes())
    assert _compare(real, proc, _sizes(proc, hi, seed=7), f"hello {placeholder} world") >= 40


def test_layouts_read_alike(tmp_path: Any) -> None:
    """transformers 5 nests the image processor in processor_config.json; 4 writes preprocessor_config.json."""
    files = _save(_llava_next("pil"), str(tmp_path))
    nested = files["processor_config.json"]
    flat = dict(files)
    flat["preprocessor_config.json"] = nested["image_processor"]
    flat["processor_config.json"] = {k: v for k, v in nested.items() if k != "image_processor"}
    a, b = read_processor(files), read_processor(flat)
    assert a is not None and b is not None
    sizes = a.sample_sizes()
    assert a.feeds(sizes) == b.feeds(sizes)
    assert a.keys["image_grid_pinpoints"].file == "processor_config.json"
    assert a.keys["image_grid_pinpoints"].key == "image_processor.image_grid_pinpoints"
    assert b.keys["image_grid_pinpoints"].file == "preprocessor_config.json"


def test_qwen_pixel_bounds_keys(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """min_pixels / max_pixels: read from size (transformers 5) or the old top-level keys, which win."""
    _no_video_processor(monkeypatch)
    files = _save(CASES["qwen2.5-vl"][0]("pil"), str(tmp_path))
    proc = read_processor(files)
    assert proc is not None
    assert proc.keys["max_pixels"].key == "image_processor.size.longest_edge"
    assert proc.keys["size.shortest_edge"].value == proc.params["min_pixels"] == 56 * 56
    ipd = files["processor_config.json"]["image_processor"]
    ipd["max_pixels"] = 28 * 28 * 8
    old = read_processor(files)
    assert old is not None and old.keys["max_pixels"].key == "image_processor.max_pixels"
    real = T.Qwen2VLImageProcessorPil.from_dict(ipd)  # transformers reads the same dict the same way
    out = real(images=[_image(1000, 700, 0)], return_tensors="pt")
    (feed,) = old.feeds([(1000, 700)])
    assert tuple(out["pixel_values"].shape) == feed.pixel_values
    assert tuple(int(x) for x in out["image_grid_thw"].reshape(-1)) == feed.values["image_grid_thw"]
    assert feed.tokens < proc.feeds([(1000, 700)])[0].tokens


def test_processor_keys_fall_back_to_model_config(tmp_path: Any) -> None:
    """patch_size / strategy / image token id from config.json when the processor config lacks them."""
    files = _save(_llava()("pil"), str(tmp_path))
    pc = files["processor_config.json"]
    for key in ("patch_size", "vision_feature_select_strategy"):
        pc.pop(key)
    files["config.json"] = {"model_type": "llava", "image_token_index": 7, "vision_feature_select_strategy": "full",
                            "vision_config": {"patch_size": 16}}
    proc = read_processor(files)
    assert proc is not None
    assert proc.keys["patch_size"].file == "config.json" and proc.keys["patch_size"].key == "vision_config.patch_size"
    assert proc.image_token_id == 7
    # no strategy in the processor config: the processor counts the CLS row (None), whatever config.json says
    assert proc.feeds([(50, 40)])[0].tokens == (32 // 16) ** 2 + 1
    assert proc.params["vision_feature_select_strategy"] is None
    assert any("no vision_feature_select_strategy" in n and "'full'" in n for n in proc.notes)
    # transformers' LlavaProcessor has no patch_size then, and fails: graphlint says so
    assert any("no patch_size" in n and "vision_config.patch_size" in n for n in proc.notes)
    with open(tmp_path / "processor_config.json", "w") as f:
        json.dump(pc, f)
    loaded = T.AutoProcessor.from_pretrained(str(tmp_path))
    with pytest.raises(TypeError):
        loaded(images=[_image(50, 40, 0)], text=["hello <image> world"], return_tensors="pt")
    assert not read_processor(_save(_llava()("pil"), str(tmp_path / "ok"))).notes
    # patch_size there, strategy not: transformers counts, and as graphlint does
    files = _save(_llava()("pil"), str(tmp_path / "nostrategy"))
    files["processor_config.json"].pop("vision_feature_select_strategy")
    with open(tmp_path / "nostrategy" / "processor_config.json", "w") as f:
        json.dump(files["processor_config.json"], f)
    proc = read_processor(files)
    assert proc is not None
    real = T.AutoProcessor.from_pretrained(str(tmp_path / "nostrategy"))
    assert _compare(real, proc, [(50, 40), (20, 90)], "hello <image> world") == 2


def test_gemma3_token_count_is_the_processors(tmp_path: Any) -> None:
    """config.json's mm_tokens_per_image is not read by the processor: without image_seq_length it inserts 256."""
    real = _gemma3("pil")
    files = _save(real, str(tmp_path))
    files["config.json"] = {"model_type": "gemma3", "mm_tokens_per_image": 5}
    del files["processor_config.json"]["image_seq_length"]
    proc = read_processor(files)
    assert proc is not None and proc.defaults["image_seq_length"] == 256
    with open(tmp_path / "processor_config.json", "w") as f:
        json.dump(files["processor_config.json"], f)
    loaded = T.AutoProcessor.from_pretrained(str(tmp_path))
    assert _compare(loaded, proc, [(40, 50), (30, 90)], "hello <start_of_image> world") == 2


def test_gemma3_pan_and_scan(tmp_path: Any) -> None:
    """Gemma3Processor switches pan-and-scan off whatever the image processor config says; on at call time,
    graphlint's crop arithmetic must match too."""
    real = _gemma3("pil")
    real.image_processor.do_pan_and_scan = True  # saved in the config, overridden by the processor
    files = _save(real, str(tmp_path))
    proc = read_processor(files)
    assert proc is not None and proc.params["do_pan_and_scan"] is False
    assert "do_pan_and_scan" in proc.defaults
    call = {"do_pan_and_scan": True, "pan_and_scan_min_crop_size": 8, "pan_and_scan_min_ratio_to_activate": 1.2,
            "pan_and_scan_max_num_crops": 4}
    on = dataclasses.replace(proc, params=proc.params | call)
    sizes = [*on.sample_sizes(), (40, 50), (70, 30), (16, 100), (100, 12), (33, 40), (9, 200), (30, 30)]
    feeds = on.feeds(sizes)
    assert any(f.pixel_values[0] > 1 for f in feeds) and any(f.pixel_values[0] == 1 for f in feeds)
    _compare(real, on, sizes, "hello <start_of_image> world", **call)
    _compare(real, proc, sizes[:8], "hello <start_of_image> world")


def test_unknown_class() -> None:
    files = {"preprocessor_config.json": {"image_processor_type": "FancyImageProcessorFast"}}
    assert unknown_class(files) == "FancyImageProcessor"
    assert read_processor(files) is None
    assert read_processor({"config.json": {"model_type": "llama"}}) is None
    audio = {"preprocessor_config.json": {"feature_extractor_type": "Phi4MultimodalFeatureExtractor",
                                          "sampling_rate": 16000}}
    assert read_processor(audio) is None and unknown_class(audio) is None
    assert unknown_class({"config.json": {"model_type": "llama"}}) is None
