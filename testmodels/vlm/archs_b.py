"""Qwen2-VL, Qwen2.5-VL, Idefics3 and SmolVLM source folders for the optimum-intel VLM corpus.

Each builder writes, from a tiny random config with seeded weights, the Hugging Face folder a user
would hand to `optimum-cli export openvino --task image-text-to-text`: the model
(save_pretrained), its processor (image processor, tokenizer built offline, chat template) and
returns the prompt and the source image sizes that exercise the processor. Runs in VENV (below), not
in the corpus venv; never imports graphlint.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from testmodels.vlm import Arch, Builder, seed_all
from testmodels.vlm.tokenizer import build_tokenizer

# The optimum-intel 2.2.0 exporters of these four are capped at transformers 5.0 (Qwen2-VL, Qwen2.5-VL) and
# 4.57.6 (Idefics3, SmolVLM): MAX_TRANSFORMERS_VERSION in optimum/exporters/openvino/model_configs.py, so
# `optimum-cli export openvino` refuses them under the corpus venv's transformers 5.5.4 ("Maximum required
# is 5.0, got: 5.5.4"). They are built and exported in this venv (transformers 4.57.6, the rest as pinned).
VENV = ".venvs/optimum_intel_tf457"
VOCAB = 320


# Qwen2-VL's chat template, reduced to what one image and one text need (the released template's
# image branch writes exactly this placeholder).
_QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}{% if content['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] == 'text' %}{{ content['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|image_pad|>", "<|video_pad|>"]
_CONVERSATION = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe the image."}]}]
# Qwen2-VL: patch 14, merge 2, so the processor resizes to multiples of 28; min 28x28 (one merged
# token) and max 112x112 (16 tokens): 28..112 px give 1..16 image tokens, larger images hit max_pixels.
_QWEN_MIN_PIXELS = 28 * 28
_QWEN_MAX_PIXELS = 112 * 112
_QWEN_SIZES = [(56, 56), (56, 112), (112, 56), (20, 20), (224, 224), (70, 42), (84, 140)]


def _qwen(out: Path, five: bool, hidden: int = 64) -> Arch:
    import transformers as tf

    seed_all()
    # Qwen's tokenizer has no unk token: <|endoftext|> stands in (the WordLevel model needs one).
    generic = build_tokenizer(VOCAB, _QWEN_SPECIALS, bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                              unk="<|endoftext|>")
    # transformers 4.57's Qwen2-VL processor accepts only a Qwen2 tokenizer class: same backend, its class.
    tok = tf.Qwen2TokenizerFast(tokenizer_object=generic.backend_tokenizer, bos_token=None, eos_token="<|im_end|>",
                                pad_token="<|endoftext|>", unk_token="<|endoftext|>",
                                additional_special_tokens=generic.additional_special_tokens)
    assert len(tok) == VOCAB
    ids = {t: tok.convert_tokens_to_ids(t) for t in _QWEN_SPECIALS}
    # head_dim 16 at every width (heads = hidden / 16): M-RoPE sections 2 + 3 + 3 = head_dim / 2
    text = dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2,
                num_attention_heads=hidden // 16, num_key_value_heads=2, max_position_embeddings=512,
                rope_theta=1e6, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"])
    common = dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                  vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    if five:
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden,
                      patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                      fullatt_block_indexes=[1])
        cfg = tf.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **common)
        model = tf.Qwen2_5_VLForConditionalGeneration(cfg)
        processor_cls = tf.Qwen2_5_VLProcessor
    else:
        vision = dict(depth=1, embed_dim=32, hidden_size=hidden, num_heads=2, mlp_ratio=2, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2)
        cfg = tf.Qwen2VLConfig(text_config=text, vision_config=vision, **common)
        model = tf.Qwen2VLForConditionalGeneration(cfg)
        processor_cls = tf.Qwen2VLProcessor
    model.eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(out)
    size = {"shortest_edge": _QWEN_MIN_PIXELS, "longest_edge": _QWEN_MAX_PIXELS}
    # min_pixels / max_pixels override size when the processor is loaded (4.57): both are written, as released.
    pix = dict(size=size, min_pixels=_QWEN_MIN_PIXELS, max_pixels=_QWEN_MAX_PIXELS, patch_size=14, merge_size=2,
               temporal_patch_size=2)
    image_processor = tf.Qwen2VLImageProcessor(**pix)
    video_processor = tf.Qwen2VLVideoProcessor(**pix)
    processor = processor_cls(image_processor=image_processor, tokenizer=tok, video_processor=video_processor,
                              chat_template=_QWEN_TEMPLATE)
    processor.save_pretrained(out)
    prompt = processor.apply_chat_template(_CONVERSATION, add_generation_prompt=True)
    return Arch(prompt=prompt, image_sizes=list(_QWEN_SIZES),
                notes="patch 14, merge 2; min_pixels 28x28, max_pixels 112x112: (20, 20) is raised to 28x28 "
                      "(4 patches, 1 token), (224, 224) lowered to 112x112 (64 patches, 16 tokens); vision "
                      f"{'hidden 32, out 64, window 56, full attention in block 1' if five else 'embed 32'}, "
                      "text hidden 64, 2 layers")


def qwen2_vl(out: Path) -> Arch:
    return _qwen(out, five=False)


def qwen2_5_vl(out: Path) -> Arch:
    return _qwen(out, five=True)


_IDEFICS_ROW_COL = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
_IDEFICS_SPECIALS = ["<unk>", "<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>",
                     "<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>",
                     *_IDEFICS_ROW_COL]
# Idefics3's and SmolVLM's released chat template: "User:<image>text<end_of_utterance>\nAssistant:".
_IDEFICS_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
# (tile px, scale_factor, longest edge, vision layers). Idefics3: tiles of 32 px, patch 8 (16 patches),
# pixel shuffle by 2: 4 image tokens a tile. SmolVLM as released uses scale_factor 4: tiles of 64 px, patch 8
# (64 patches), shuffle by 4: 4 tokens a tile. Every image is first resized to the longest edge (3 tiles).
_IDEFICS_GEOMETRY = {False: (32, 2, 96, 1), True: (64, 4, 192, 2)}
_IDEFICS_PATCH = 8
_IDEFICS_SIZES = [(32, 32), (24, 40), (40, 24), (96, 96), (8, 200), (200, 8), (200, 200), (16, 16)]


def _idefics(out: Path, smol: bool, hidden: int = 64) -> Arch:
    import transformers as tf

    seed_all()
    tok = build_tokenizer(VOCAB, _IDEFICS_SPECIALS, bos="<|begin_of_text|>", eos="<end_of_utterance>",
                          pad="<|finetune_right_pad_id|>", unk="<unk>")
    # The released (Llama 3) tokenizers return no token_type_ids; generate() refuses them as unused kwargs.
    tok.model_input_names = ["input_ids", "attention_mask"]
    tok.init_kwargs["model_input_names"] = tok.model_input_names
    image_id = tok.convert_tokens_to_ids("<image>")
    text = dict(model_type="llama", vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                num_hidden_layers=2, num_attention_heads=hidden // 16, num_key_value_heads=2,
                max_position_embeddings=512,
                bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    tile, scale, longest, layers = _IDEFICS_GEOMETRY[smol]
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=2,
                  image_size=tile, patch_size=_IDEFICS_PATCH)
    seq_len = (tile // _IDEFICS_PATCH) ** 2 // scale**2
    if smol:
        cfg = tf.SmolVLMConfig(text_config=text, vision_config=vision, image_token_id=image_id,
                               scale_factor=scale, pad_token_id=tok.pad_token_id)
        model = tf.SmolVLMForConditionalGeneration(cfg)
    else:
        cfg = tf.Idefics3Config(text_config=text, vision_config=vision, image_token_id=image_id,
                                scale_factor=scale, pad_token_id=tok.pad_token_id)
        model = tf.Idefics3ForConditionalGeneration(cfg)
    model.eval()
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(out)
    kw = dict(size={"longest_edge": longest}, max_image_size={"longest_edge": tile}, do_image_splitting=True)
    if smol:
        video = tf.SmolVLMVideoProcessor(size={"longest_edge": tile}, max_image_size={"longest_edge": tile})
        processor = tf.SmolVLMProcessor(image_processor=tf.SmolVLMImageProcessor(**kw), tokenizer=tok,
                                        video_processor=video, image_seq_len=seq_len,
                                        chat_template=_IDEFICS_TEMPLATE)
    else:
        processor = tf.Idefics3Processor(image_processor=tf.Idefics3ImageProcessor(**kw), tokenizer=tok,
                                         image_seq_len=seq_len, chat_template=_IDEFICS_TEMPLATE)
    processor.save_pretrained(out)
    prompt = processor.apply_chat_template(_CONVERSATION, add_generation_prompt=True)
    return Arch(prompt=prompt, image_sizes=list(_IDEFICS_SIZES),
                notes=f"tile {tile} px (patch {_IDEFICS_PATCH}, scale_factor {scale}: {seq_len} <image> tokens a "
                      f"tile); every image is resized to longest edge {longest} then split (this processor never "
                      "leaves one unsplit): square 3x3 tiles + global, 5:3 2x3 + global, 25:1 1x3 + global")


def idefics3(out: Path) -> Arch:
    return _idefics(out, smol=False)


def smolvlm(out: Path) -> Arch:
    return _idefics(out, smol=True)


ARCHS: dict[str, Builder] = {
    "qwen2_vl": qwen2_vl,
    "qwen2_5_vl": qwen2_5_vl,
    "idefics3": idefics3,
    "smolvlm": smolvlm,
}

# Second exports whose language model has another width: the seeds swap in the graph that feeds
# inputs_embeds (Qwen: the merger; Idefics3 / SmolVLM: the vision graph, connector included).
VARIANTS: dict[str, dict[str, Builder]] = {
    "qwen2_vl": {"projector96": partial(_qwen, five=False, hidden=96)},
    "qwen2_5_vl": {"projector32": partial(_qwen, five=True, hidden=32)},
    "idefics3": {"projector96": partial(_idefics, smol=False, hidden=96)},
    "smolvlm": {"projector32": partial(_idefics, smol=True, hidden=32)},
}
# The graph whose output is the image rows merged into inputs_embeds.
FEEDS_LM = {"qwen2_vl": "openvino_vision_embeddings_merger_model",
            "qwen2_5_vl": "openvino_vision_embeddings_merger_model",
            "idefics3": "openvino_vision_embeddings_model", "smolvlm": "openvino_vision_embeddings_model"}


def f16_output(graph_xml: Path, dest: Path) -> None:
    """The graph with its first output converted to f16 (what a half-precision export of that stage emits)."""
    import openvino as ov
    import openvino.opset13 as ops

    m = ov.Core().read_model(str(graph_xml))
    src = m.get_results()[0].input_value(0)
    names = set(src.get_names())
    cvt = ops.convert(src, "f16")
    src.get_tensor().set_names(set())
    cvt.output(0).get_tensor().set_names(names)
    m.get_results()[0].input(0).replace_source_output(cvt.output(0))
    m.validate_nodes_and_infer_types()
    dest.mkdir(parents=True, exist_ok=True)
    ov.save_model(m, str(dest / graph_xml.name), compress_to_fp16=False)


def build(outdir: Path, names: list[str]) -> dict:
    """Export each arch with the framework's export/keep (the CLI of this venv), then its seed variants."""
    import importlib.metadata as md
    import json
    import tempfile

    from testmodels.vlm import optimum_intel_vlm as oi

    rec_path = outdir / "build_b.json"
    record = json.loads(rec_path.read_text()) if rec_path.exists() else {"archs": {}, "export_failures": {}}
    record["venv"] = VENV
    record["tools"] = {t: md.version(t) for t in oi.TOOLS}
    with tempfile.TemporaryDirectory(prefix="vlm_b_") as tmp:
        for name in names:
            arch, exp, rec = oi.export(name, ARCHS[name], Path(tmp))
            print(name, rec, flush=True)
            if arch is None:
                record["export_failures"][name] = rec
                continue
            record["export_failures"].pop(name, None)
            sizes = oi.keep(exp, outdir / name)
            record["archs"][name] = {"prompt": arch.prompt, "image_sizes": [list(x) for x in arch.image_sizes],
                                     "notes": arch.notes, **rec, "files": sizes,
                                     "folder_bytes": sum(sizes.values()), "feeds_lm": FEEDS_LM[name]}
            graph = FEEDS_LM[name]
            f16_output(outdir / name / f"{graph}.xml", outdir / "_variants" / name / "f16_vision")
            if graph != "openvino_vision_embeddings_model":  # Qwen: also the patch encoder's rows into the merger
                f16_output(outdir / name / "openvino_vision_embeddings_model.xml",
                           outdir / "_variants" / name / "f16_patch_embed")
            for v, b in VARIANTS[name].items():
                _, vexp, vrec = oi.export(f"{name}.{v}", b, Path(tmp))
                print(name, v, vrec, flush=True)
                if "error" in vrec:
                    record["export_failures"][f"{name}.{v}"] = vrec
                    continue
                dest = outdir / "_variants" / name / v
                dest.mkdir(parents=True, exist_ok=True)
                for ext in (".xml", ".bin"):
                    (dest / f"{graph}{ext}").write_bytes((vexp / f"{graph}{ext}").read_bytes())
    rec_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


if __name__ == "__main__":
    import sys

    build(Path(sys.argv[1]).resolve(), sys.argv[2:] or list(ARCHS))
