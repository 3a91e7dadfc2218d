"""GL8006 kv-position-geometry: the language model's cache or position-id inputs disagree with the config the runtime reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphlint_rules import _pipeline as P

from graphlint.pipeline.contracts import Contracts, lm_stage
from graphlint.rule import Finding, Rule, Severity

MROPE_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


class KvPositionGeometry(Rule):
    """The language model's `past_key_values` or `position_ids` are not shaped as the config tells the runtime.

    ## What it checks
    - Each `past_key_values.*` / `past_key_*` input of the language model, `[batch, kv_heads, past,
      head_dim]`: its KV-head count and head dim against `config.json` (`num_key_value_heads`,
      `head_dim` or `hidden_size / num_attention_heads`, under `text_config` for a VLM) and, in an
      onnxruntime-genai folder, `genai_config.json`'s `model.decoder.num_key_value_heads` and
      `head_size`, from which genai allocates the cache.
    - `position_ids`: M-RoPE models (Qwen2-VL, Qwen2.5-VL: `rope_scaling.mrope_section`) are fed
      position ids of shape `(3, batch, seq)`; a language model exported with 2-D position ids
      cannot take them, and one with 3-D ids in a folder whose config has no M-RoPE will not be fed them.

    ## Why it matters
    The runtime builds these tensors from the config, not from the graph: a cache of another geometry
    fails at the first decode step, after the prompt has already run. An error when the graph and
    the config disagree.

    ## Example
    `genai_config.json` `"num_key_value_heads": 4` and `past_key_values.0.key` `[batch, 2, past, 16]`.

    ## Fix
    Regenerate the config from the checkpoint the graph was exported from, or re-export.
    """

    id = "GL8006"
    name = "kv-position-geometry"
    severity = Severity.ERROR
    scope = "pipeline"
    source = "rules/data/pipeline.toml (kv-geometry)"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        lm = lm_stage(c.pipeline)
        sm = c.stages.get(lm) if lm else None
        if sm is None:
            return
        cfg = c.pipeline.configs
        text = "text_config." if isinstance(cfg.value("config.json", "text_config"), dict) else ""
        want = _geometry(cfg, text)
        for v in sm.model.graph.inputs:
            if not v.name.startswith(("past_key_values", "past_key", "past_value")) or not v.shape or len(v.shape) != 4:
                continue
            for axis, what in ((1, "kv_heads"), (3, "head_dim")):
                got = v.shape[axis]
                for (file, key), expected in want.get(what, {}).items():
                    if isinstance(got, int) and got > 0 and expected != got:
                        yield ctx.finding(
                            f"Stage '{lm}' input '{v.name}' has {got} {what.replace('_', ' ')} (axis {axis}) but {file} "
                            f"says {key} = {expected}: the runtime allocates the cache from the config.",
                            config=file, key=key, stage=lm, **P.basis("kv-geometry"))
                        return
        pos = next((v for v in sm.model.graph.inputs if v.name == "position_ids"), None)
        model_type = cfg.value("config.json", "model_type")
        mrope = cfg.value("config.json", f"{text}rope_scaling.mrope_section") or cfg.value(
            "config.json", "rope_scaling.mrope_section")
        if pos is None or pos.shape is None:
            return
        if (mrope or model_type in MROPE_TYPES) and len(pos.shape) == 2:
            yield ctx.finding(
                f"config.json gives {model_type} M-RoPE (position ids of shape (3, batch, seq)) but stage '{lm}' takes "
                f"'position_ids' of rank 2: the runtime's 3-D position ids do not fit.",
                config="config.json", key="model_type", stage=lm, **P.basis("kv-geometry"))


def _geometry(cfg: Any, text: str) -> dict[str, dict[tuple[str, str], int]]:
    out: dict[str, dict[tuple[str, str], int]] = {"kv_heads": {}, "head_dim": {}}
    kv = cfg.value("config.json", f"{text}num_key_value_heads")
    if isinstance(kv, int):
        out["kv_heads"][("config.json", f"{text}num_key_value_heads")] = kv
    hd = cfg.value("config.json", f"{text}head_dim")
    hidden, heads = cfg.value("config.json", f"{text}hidden_size"), cfg.value("config.json", f"{text}num_attention_heads")
    if isinstance(hd, int):
        out["head_dim"][("config.json", f"{text}head_dim")] = hd
    elif isinstance(hidden, int) and isinstance(heads, int) and heads and hidden % heads == 0:
        out["head_dim"][("config.json", f"{text}hidden_size")] = hidden // heads
    for key, what in (("model.decoder.num_key_value_heads", "kv_heads"), ("model.decoder.head_size", "head_dim")):
        v = cfg.value("genai_config.json", key)
        if isinstance(v, int):
            out[what][("genai_config.json", key)] = v
    return out
