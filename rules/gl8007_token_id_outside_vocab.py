"""GL8007 token-id-outside-vocab: a token id the configs give is not a row of the embedding table or the logits."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _pipeline as P

from graphlint.pipeline import TEXT_EMBEDDINGS
from graphlint.pipeline.contracts import Contracts, lm_stage
from graphlint.rule import Finding, Rule, Severity

_IMAGE_ID_KEYS = ("image_token_index", "image_token_id", "text_config.image_token_id")
_GEN_KEYS = ("eos_token_id", "bos_token_id", "pad_token_id", "decoder_start_token_id")


class TokenIdOutsideVocab(Rule):
    """A token id in `config.json` / `generation_config.json` is past the vocabulary the graphs have.

    ## What it checks
    The vocabulary is the row count of the text-embedding graph's table and the width of the
    language model's logits. The image token id (`image_token_index`, `image_token_id`) must be a
    row of the embedding table, since the runtime embeds `input_ids` before it replaces the image
    positions; `generation_config.json`'s `eos_token_id`, `bos_token_id`, `pad_token_id` must be
    ids the logits can produce.

    ## Why it matters
    An image token id past the table makes the embedding `Gather` read out of bounds: ONNX Runtime
    fails ("indices element out of data bounds"), OpenVINO returns zeros for it. An end-of-sequence
    id past the logits can never be generated, so generation only stops at `max_new_tokens`: a
    warning (it runs, and what the user meant is not known).

    ## Example
    `config.json` `"image_token_index": 32000` with an embedding table of 32000 rows (ids 0..31999).

    ## Fix
    Use the ids of the tokenizer the graphs were exported with (`tokenizer_config.json`).
    """

    id = "GL8007"
    name = "token-id-outside-vocab"
    severity = Severity.ERROR
    scope = "pipeline"
    source = "rules/data/pipeline.toml (token-id-outside-vocab)"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        cfg = c.pipeline.configs
        rows = _table_rows(c)
        if rows is not None:
            for key in _IMAGE_ID_KEYS:
                tid = cfg.value("config.json", key)
                if isinstance(tid, int) and tid >= rows:
                    yield ctx.finding(
                        f"config.json says {key} = {tid} but the text embedding table has {rows} rows (ids 0..{rows - 1}): "
                        "embedding the prompt reads out of bounds (ONNX Runtime fails, OpenVINO returns zeros).",
                        config="config.json", key=key, **P.basis("token-id-outside-vocab"))
                    break
        vocab = _logits_width(c)
        if vocab is None:
            return
        for key in _GEN_KEYS:
            ids = cfg.value("generation_config.json", key)
            for tid in ids if isinstance(ids, list) else [ids]:
                if isinstance(tid, int) and tid >= vocab:
                    yield ctx.finding(
                        f"generation_config.json says {key} = {tid} but the language model's logits have {vocab} entries: "
                        "that token can never be generated (generation runs to max_new_tokens).",
                        config="generation_config.json", key=key, severity=Severity.WARNING,
                        unknown=["whether the id is meant"])
                    break


def _table_rows(c: Contracts) -> int | None:
    """Rows of the text-embedding graph's Gather table (its largest 2-D constant feeding a Gather)."""
    for st in c.pipeline.by_role(TEXT_EMBEDDINGS):
        sm = c.stages.get(st.name)
        if sm is None:
            continue
        for node in sm.model.graph.nodes:
            if node.op_type == "Gather" and node.inputs and node.inputs[0] is not None:
                table = node.inputs[0]
                shape = table.const.shape if table.const is not None else table.shape
                if shape and len(shape) == 2 and isinstance(shape[0], int):
                    return int(shape[0])
    return None


def _logits_width(c: Contracts) -> int | None:
    lm = lm_stage(c.pipeline)
    sm = c.stages.get(lm) if lm else None
    if sm is None:
        return None
    out = next((v for v in sm.model.graph.outputs if v.name == "logits"), None)
    if out is None or not out.shape or not isinstance(out.shape[-1], int) or out.shape[-1] <= 0:
        return None
    return int(out.shape[-1])
