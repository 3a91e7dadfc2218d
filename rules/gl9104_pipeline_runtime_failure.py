"""GL9104 pipeline-runtime-failure: under --confirm, a deployment folder run end to end failed where no pipeline rule said so."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.ir import ONNX, OPENVINO
from graphlint.rule import Finding, Rule, Severity


class PipelineRuntimeFailure(Rule):
    """A deployment folder's pipeline, run end to end on an engine, failed and no pipeline finding predicted it.

    ## What it checks
    With `--confirm` on a deployment folder, graphlint runs the whole pipeline on every installed engine
    that matches a requested target, in one child process per engine: the vision graph and its mergers at
    every size the folder's processor feeds (synthetic pixels in the processor's range, `image_grid_thw`
    from the processor's values), the rows they return counted against the image tokens the processor
    inserts (through the runtime's own packing where graphlint knows it, `rules/data/pipeline.toml`), the
    rows scattered into the text embeddings at the image tokens, and the language model run on the result
    with its attention mask, position ids (M-RoPE's three rows), `beam_idx` and an empty cache. Where the
    processor class is one graphlint has no arithmetic for, it runs at the image size the configs state
    (`config.json` `vision_config.image_size`, else the vision graph's export size) and holds the rows to
    the image token count the configs state (`image_seq_length`, `num_image_tokens`,
    `mm_tokens_per_image`). A failure that a pipeline finding predicted confirms that finding; this rule
    reports the rest: the engine's message, the stage, the size, and the config key the count comes from.

    ## Why it matters
    "Image features and image tokens do not match" and its relatives happen between the files of a
    folder, in the runtime's own code, and with processors graphlint cannot compute. A run shows them
    with the engine's own message before a user meets them; each one here is also a miss of the static
    pipeline rules.

    ## Example
    A folder whose processor class is a custom one, whose `processor_config.json` says
    `"image_seq_length": 20`, and whose vision graph returns 16 rows for the 32x32 image `config.json`'s
    `vision_config.image_size` states: "Image features and image tokens do not match: tokens 20,
    features 16".

    ## Fix
    Read the message: the stage, the size and the key are named. Make the configs say what the graphs were
    exported for (the image token count, the sizes), or re-export the stage for the sizes fed. An error
    means a size the processor feeds (or the folder states) fails; a failure only at a size graphlint
    chose (two images in one prompt where the folder does not say) is a warning.
    """

    id = "GL9104"
    name = "pipeline-runtime-failure"
    family = "runtime"
    severity = Severity.ERROR
    scope = "confirm"
    dialects = frozenset({ONNX, OPENVINO})
    source = "engine runs of a whole deployment folder under --confirm (graphlint/confirm/pipeline.py)"

    def check_pipeline_confirm(self, ctx) -> Iterator[Finding]:
        """``ctx``: a graphlint.pipeline.engine.PipelineContext with ``unpredicted`` (graphlint.confirm.pipeline.Failure)."""
        from graphlint.confirm.verdicts import basis

        seen: set[tuple[str, str]] = set()
        for f in ctx.unpredicted:
            key = (f.kind, f.stage)
            if key in seen:  # one finding per kind of failure and stage; the first failing case is named
                continue
            seen.add(key)
            same = sum(1 for g in ctx.unpredicted if (g.kind, g.stage) == key)
            more = f" ({same - 1} more prompt{'s' if same > 2 else ''} fail alike)" if same > 1 else ""
            severity = Severity.WARNING if f.sample_only else Severity.ERROR
            tail = (" The prompt is one graphlint chose (the folder does not say whether prompts carry two images)."
                    if f.sample_only else "")
            config, cfg_key = (f.case.token_key if f.case is not None and f.case.token_key else (None, None))
            if f.kind not in ("rows", "tokens", "legacy"):
                config = cfg_key = None
            stage = f.stage if f.stage and ctx.pipeline.stage(f.stage) is not None else None
            e = f.engine
            yield ctx.finding(
                f"{f.text()}{more}.{tail}", config=config, key=cfg_key, stage=stage,
                severity=severity, basis=basis(e),
                confirm={"verdict": "runtime", **f.evidence()}, kind=f.kind,
                unknown=["images per prompt"] if f.sample_only else None)
