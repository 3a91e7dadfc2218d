"""Tiny LLaVA, LLaVA-NeXT and Gemma 3 source folders (random seeded weights, offline processor + tokenizer).

Sizes are chosen so every folder stays small and every processor path is exercised:
- vision towers see 32 x 32 px at patch 8 (a 4 x 4 patch grid); the processor's size is set to the same 32 px;
- LLaVA-NeXT's grid pinpoints allow 1 x 1, 1 x 2, 2 x 1 and 2 x 2 tiles of 32 px, so wide and tall images
  give different tile counts and a different number of image tokens after unpadding;
- Gemma 3 pools the 4 x 4 patches to mm_tokens_per_image = 4 tokens.
The phi3_v, phi4mm / phi4_multimodal and internvl_chat exporters of optimum-intel 2.2.0 are capped at
transformers 4.53.3 / 4.57.6 (MAX_TRANSFORMERS_VERSION in optimum/exporters/openvino/model_configs.py), and
phi3_v / phi4mm / internvl_chat are remote-code models: they are recorded as skipped by optimum_intel_vlm.py.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from testmodels.vlm import Arch, Builder, seed_all
from testmodels.vlm.tokenizer import build_tokenizer

VOCAB = 320
IMG = 32
PATCH = 8
SIZES = [(32, 32), (48, 96), (96, 40), (20, 20), (120, 120)]  # square, wide, tall, small, large

LLAVA_TEMPLATE = ("{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
                  "{% if c['type'] == 'image' %}<image>\n{% else %}{{ c['text'] }}{% endif %}{% endfor %} "
                  "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}")
GEMMA_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' "
                  "else m['role'] }}\n{% for c in m['content'] %}{% if c['type'] == 'image' %}<start_of_image>"
                  "{% else %}{{ c['text'] }}{% endif %}{% endfor %}<end_of_turn>\n{% endfor %}"
                  "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def _clip_vision() -> dict:
    return dict(model_type="clip_vision_model", image_size=IMG, patch_size=PATCH, hidden_size=32,
                intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, projection_dim=32)


def _llama_text(hidden: int) -> dict:
    # hidden 48 (not the vision tower's 32): a projector width error cannot hide behind equal widths
    return dict(model_type="llama", vocab_size=VOCAB, hidden_size=hidden, intermediate_size=96, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                bos_token_id=2, eos_token_id=3, pad_token_id=0, tie_word_embeddings=False)


def _llava_tokenizer():
    # ids: <pad> 0, <unk> 1, <s> 2, </s> 3, <image> 4 (the config's image_token_index)
    return build_tokenizer(VOCAB, ["<pad>", "<unk>", "<s>", "</s>", "<image>"], bos="<s>", eos="</s>",
                           pad="<pad>", unk="<unk>")


def llava(d: Path, hidden: int = 48) -> Arch:
    import transformers as T

    seed_all()
    cfg = T.LlavaConfig(vision_config=_clip_vision(), text_config=_llama_text(hidden), image_token_index=4,
                        vision_feature_select_strategy="default", vision_feature_layer=-2,
                        image_seq_length=(IMG // PATCH) ** 2, projector_hidden_act="gelu", pad_token_id=0)
    T.LlavaForConditionalGeneration(cfg).eval().save_pretrained(d)
    ip = T.CLIPImageProcessor(size={"shortest_edge": IMG}, crop_size={"height": IMG, "width": IMG})
    T.LlavaProcessor(image_processor=ip, tokenizer=_llava_tokenizer(), patch_size=PATCH,
                     vision_feature_select_strategy="default", num_additional_image_tokens=1,
                     chat_template=LLAVA_TEMPLATE).save_pretrained(d)
    return Arch("USER: <image>\nWhat is in this image? ASSISTANT:", SIZES,
                f"CLIP {IMG}px/patch {PATCH} (16 patches + CLS, 'default' strategy drops CLS: 16 image tokens), "
                "llama 2 layers hidden 48, projector 32 -> 48")


def llava_next(d: Path, hidden: int = 48) -> Arch:
    import transformers as T

    seed_all()
    pins = [[IMG, IMG], [IMG, 2 * IMG], [2 * IMG, IMG], [2 * IMG, 2 * IMG]]
    cfg = T.LlavaNextConfig(vision_config=_clip_vision(), text_config=_llama_text(hidden), image_token_index=4,
                            vision_feature_select_strategy="default", vision_feature_layer=-2,
                            image_grid_pinpoints=pins, image_seq_length=(IMG // PATCH) ** 2, pad_token_id=0)
    T.LlavaNextForConditionalGeneration(cfg).eval().save_pretrained(d)
    ip = T.LlavaNextImageProcessor(size={"shortest_edge": IMG}, crop_size={"height": IMG, "width": IMG},
                                   image_grid_pinpoints=pins)
    T.LlavaNextProcessor(image_processor=ip, tokenizer=_llava_tokenizer(), patch_size=PATCH,
                         vision_feature_select_strategy="default", num_additional_image_tokens=1,
                         chat_template=LLAVA_TEMPLATE).save_pretrained(d)
    return Arch("USER: <image>\nWhat is in this image? ASSISTANT:", SIZES,
                f"anyres: base {IMG}px tile + up to 2 x 2 tiles (pinpoints {pins}), unpadded, a newline row each")


def gemma3(d: Path, hidden: int = 48) -> Arch:
    import transformers as T

    seed_all()
    specials = ["<pad>", "<unk>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                "<end_of_image>", "<image_soft_token>"]
    tok = build_tokenizer(VOCAB, specials, bos="<bos>", eos="<eos>", pad="<pad>", unk="<unk>",
                          extra={"extra_special_tokens": {"image_token": "<image_soft_token>",
                                                          "boi_token": "<start_of_image>",
                                                          "eoi_token": "<end_of_image>"}})
    text = dict(model_type="gemma3_text", vocab_size=VOCAB, hidden_size=hidden, intermediate_size=96, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, head_dim=24, max_position_embeddings=512,
                sliding_window=64, bos_token_id=2, eos_token_id=3, pad_token_id=0)
    vision = dict(model_type="siglip_vision_model", image_size=IMG, patch_size=PATCH, hidden_size=32,
                  intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
    cfg = T.Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4, boi_token_index=6,
                         eoi_token_index=7, image_token_index=8, pad_token_id=0, bos_token_id=2, eos_token_id=3)
    model = T.Gemma3ForConditionalGeneration(cfg).eval()
    # transformers initializes the projector matrix to zeros: image features would then be all zero and no
    # preprocessing or projector seed could change the output; give it seeded random values instead
    import torch

    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, 0.3)
    model.save_pretrained(d)
    ip = T.Gemma3ImageProcessor(size={"height": IMG, "width": IMG})
    T.Gemma3Processor(image_processor=ip, tokenizer=tok, image_seq_length=4,
                      chat_template=GEMMA_TEMPLATE).save_pretrained(d)
    return Arch("<bos><start_of_turn>user\n<start_of_image>What is in this image?<end_of_turn>\n<start_of_turn>model\n",
                SIZES, f"SigLIP {IMG}px/patch {PATCH} (4 x 4 patches) avg-pooled to mm_tokens_per_image 4; "
                "gemma3 text 2 layers hidden 48")


ARCHS: dict[str, Builder] = {"llava": llava, "llava_next": llava_next, "gemma3": gemma3}
# Second exports whose graphs replace a healthy folder's graph in a seed (name -> builder). The language
# model is built wider (64) or narrower (32) than the healthy 48, so the variant's vision graph ends in a
# projector of that width: fed into the healthy 48-wide language model it is a projector width mismatch.
VARIANTS: dict[str, dict[str, Builder]] = {
    "llava": {"projector64": partial(llava, hidden=64)},
    "llava_next": {"projector32": partial(llava_next, hidden=32)},
    "gemma3": {"projector64": partial(gemma3, hidden=64)},
}
