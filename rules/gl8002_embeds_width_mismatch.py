"""GL8002 embeds-width-mismatch: a stage's output width differs from the width of the input it feeds."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _pipeline as P

from graphlint.pipeline.contracts import Contracts
from graphlint.rule import Finding, Rule, Severity

HIDDEN_KEYS = ("text_config.hidden_size", "hidden_size", "model.decoder.hidden_size")


class EmbedsWidthMismatch(Rule):
    """The vision (projector, merger) or text-embedding output is not as wide as the language model's `inputs_embeds`.

    ## What it checks
    Each edge of the pipeline: the last dim of the source stage's output (as declared, or as the
    shape walk computes it at the processor's sizes) against the last dim of the input it feeds
    (`inputs_embeds` of the language model, or the merger's input). Also `config.json`'s hidden
    size against the language model's `inputs_embeds` width, since the runtime sizes its buffers
    from it.

    ## Why it matters
    The runtime scatters the image rows into `inputs_embeds`: a narrower projector fails
    ("shape mismatch"), a wider one is cut to the first `hidden_size` values and the model answers
    about an image it never saw, without any error. It happens when a vision graph from one export
    is paired with a language model from another, or the projector was exported for another
    text model. An error.

    ## Example
    `openvino_vision_embeddings_model.xml` emits `[?, ?, 64]` and `openvino_language_model.xml`
    takes `inputs_embeds` `[?, ?, 32]`.

    ## Fix
    Export the vision side and the language model from the same checkpoint, or the projector for
    this language model's hidden size.
    """

    id = "GL8002"
    name = "embeds-width-mismatch"
    severity = Severity.ERROR
    scope = "pipeline"
    source = "rules/data/pipeline.toml (embeds-width)"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        for ef in c.edges:
            if ef.out is None or ef.inp is None:
                continue
            got = _last(ef.out.shape)
            if got is None and ef.edge.merge:
                widths = {f.width for f in c.feeds if f.width is not None}
                got = widths.pop() if len(widths) == 1 else None
            want = _last(ef.inp.shape)
            if got is None or want is None or got == want:
                continue
            how = ("the merge cuts each row to its first values: silently wrong output" if got > want
                   else "the merge fails")
            yield ctx.finding(
                f"Stage '{ef.edge.source}' output '{ef.out.name}' is {got} wide but stage '{ef.edge.dest}' input "
                f"'{ef.inp.name}' takes {want}: {how}.",
                stage=ef.edge.source, edge=ef.edge.describe(), out_width=got, in_width=want, **P.basis("embeds-width"))
        lm = next((ef.inp for ef in c.edges if ef.inp is not None and ef.inp.name == "inputs_embeds"), None)
        want = _last(lm.shape) if lm is not None else None
        # the first hidden size a config states (a VLM's text_config first) is the one a runtime would read
        stated = next(((name, key, v) for key in HIDDEN_KEYS for name in ("config.json", "genai_config.json")
                       if isinstance(v := c.pipeline.configs.value(name, key), int)), None)
        if stated is not None and want is not None and stated[2] != want:
            name, key, hidden = stated
            yield ctx.finding(
                f"{name} says {key} = {hidden} but the language model's 'inputs_embeds' is {want} wide: "
                "the runtime sizes the embeddings from the config.",
                config=name, key=key, severity=Severity.WARNING, unknown=["whether the runtime reads it"])

def _last(shape) -> int | None:
    if not shape:
        return None
    d = shape[-1]
    return d if isinstance(d, int) and d > 0 else None
