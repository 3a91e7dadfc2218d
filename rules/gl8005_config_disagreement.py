"""GL8005 config-disagreement: two files of a deployment folder state one fact differently."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphlint_rules import _pipeline as P

from graphlint.pipeline.contracts import Contracts
from graphlint.rule import Finding, Rule, Severity

_ID_KEYS = ("image_token_index", "image_token_id", "text_config.image_token_id")


class ConfigDisagreement(Rule):
    """A fact the runtime reads from one file and the processor from another is stated differently in each.

    ## What it checks
    The pairs of `rules/data/pipeline.toml` (`[[agree]]`): LLaVA-NeXT's `image_grid_pinpoints` in
    `config.json` and in `preprocessor_config.json`, the vision image size, patch size, merge size
    and temporal patch size in `config.json`'s `vision_config` and in the image processor config,
    Idefics3's tile size, and `config.json`'s patch size against the stride of the vision graph's
    patch embedding.
    And the image token: the id `config.json` gives it (`image_token_index` / `image_token_id`)
    against the id the tokenizer gives the processor's image token (`tokenizer_config.json`'s
    added tokens).

    ## Why it matters
    Each file is right for the part that reads it, so each part runs; the pipeline as a whole
    counts image features with one value and image tokens with the other. optimum-intel counts
    LLaVA-NeXT's tiles from `config.json` while the processor reads `preprocessor_config.json`: the
    result is silently wrong. An image token id that is not the tokenizer's leaves the runtime
    finding no image positions at all ("tokens: 0"). An error where the runtime is known to read
    the other file (the pair's `layouts`), else a warning.

    ## Example
    `config.json` `"image_grid_pinpoints": [[64, 128], [128, 64]]` and
    `preprocessor_config.json` `"image_grid_pinpoints": [[64, 64], [64, 128]]`.

    ## Fix
    Make both files say what the graphs were exported with (the value in `config.json`, usually).
    """

    id = "GL8005"
    name = "config-disagreement"
    severity = Severity.ERROR
    scope = "pipeline"
    source = "rules/data/pipeline.toml ([[agree]], config-disagreement)"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        cfg = c.pipeline.configs
        model_type = cfg.value("config.json", "model_type")
        for pair in P.table("agree"):
            fa, ka = pair["a"].split(":", 1)
            fb, kb = pair["b"].split(":", 1)
            va = _graph_fact(c, ka) if fa == "graph" else cfg.value(fa, ka)
            vb = cfg.value(fb, kb)
            if va is None or vb is None or _same(va, vb):
                continue
            known = c.pipeline.layout in pair.get("layouts", ()) and (
                not pair.get("model_types") or model_type in pair["model_types"])
            extra = P.basis(pair["fact"]) if known and pair.get("fact") else {"unknown": ["which file the runtime reads"]}
            said = (f"the vision graph's patch embedding strides by {va}" if fa == "graph"
                    else f"{fa} says {ka} = {va!r}")
            yield ctx.finding(
                f"{fb} says {kb} = {vb!r} but {said}: {pair['why']}.",
                config=fb, key=kb, severity=Severity.ERROR if known and pair.get("fact") else Severity.WARNING,
                pair=pair["id"], **extra)
        yield from self._image_token(ctx, c)

    def _image_token(self, ctx, c: Contracts) -> Iterator[Finding]:
        proc = c.processor
        token = getattr(proc, "image_token", None)
        if not token:
            return
        cfg = c.pipeline.configs
        key = next((k for k in _ID_KEYS if isinstance(cfg.value("config.json", k), int)), None)
        if key is None:
            return
        said = cfg.value("config.json", key)
        added = cfg.value("tokenizer_config.json", "added_tokens_decoder") or {}
        ids = [int(i) for i, t in added.items() if isinstance(t, dict) and t.get("content") == token and str(i).isdigit()]
        if not ids or said in ids:
            return
        yield ctx.finding(
            f"config.json says {key} = {said} but the tokenizer gives the processor's image token {token!r} the id "
            f"{ids[0]}: the runtime looks for id {said} and finds no image positions ('Image features and image "
            "tokens do not match: tokens: 0').",
            config="config.json", key=key, pair="image-token-id", **P.basis("image-tokens-rows"))


def _graph_fact(c: Contracts, name: str) -> Any:
    """A fact read from the vision graph itself: ``patch_stride``, the stride of its first convolution."""
    if name != "patch_stride" or not c.chain:
        return None
    sm = c.stages.get(c.chain[0])
    if sm is None:
        return None
    for node in sm.model.graph.nodes:
        if node.op_type in ("Conv", "Convolution"):
            strides = node.attr("strides")
            if isinstance(strides, str):  # OpenVINO IR: "8, 8"
                strides = [int(x) for x in strides.replace(" ", "").split(",") if x]
            return int(strides[-1]) if strides else None  # the last spatial stride (Qwen2-VL: temporal first)
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b
