"""GL8004 pixel-contract: what the processor feeds as pixel values is not what the vision graph expects."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _pipeline as P

from graphlint.analysis.inputs import preprocess_chain
from graphlint.pipeline.contracts import Contracts, pixel_input
from graphlint.pipeline.processors import class_default
from graphlint.rule import Finding, Rule, Severity

_INTEGER = ("uint8", "int8", "uint16", "int16", "int32", "int64")


class PixelContract(Rule):
    """The processor's `pixel_values` (dtype, rescale, normalization) do not match the vision graph's input.

    ## What it checks
    The folder's image processor config (`do_rescale`, `rescale_factor`, `do_normalize`,
    `image_mean`, `image_std`, read as the processor class reads them:
    `graphlint/pipeline/processors.py`) against the vision graph's `pixel_values` input and the
    preprocessing the graph does itself:
    - an integer (`uint8`) input fed the processor's float pixels;
    - rescaling switched off (values up to 255) into a graph that does not divide by 255, or done
      twice (the processor rescales and the graph divides by 255 again);
    - normalization switched off where the processor class normalizes by default and the graph
      does not normalize, or done twice (the graph subtracts a [0,1] mean of its own too).

    ## Why it matters
    The largest class of field reports: nothing fails, the model just sees another image. OpenVINO's
    Python API converts a float feed to a `u8` input (negative values wrap around); a tower trained
    on normalized pixels fed 0..255 values answers about noise. An error (the pipeline computes
    something else than the model means).

    ## Example
    `preprocessor_config.json` with `"do_rescale": false` beside a vision graph that takes float
    `pixel_values` and starts with its patch embedding.

    ## Fix
    Restore the key the message names (`do_rescale: true`, `do_normalize: true`), or move the
    preprocessing into the graph and switch it off in the config, not both.
    """

    id = "GL8004"
    name = "pixel-contract"
    severity = Severity.ERROR
    scope = "pipeline"
    source = "rules/data/pipeline.toml (pixel-range, uint8-input-fed-float); rules/data/processors.toml (class defaults)"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        proc = c.processor
        if proc is None or not c.chain:
            return
        stage = c.chain[0]
        sm = c.stages.get(stage)
        if sm is None:
            return
        inp = pixel_input(sm.model)
        if inp is None:
            return
        pix = proc.pixel
        keys = pix.keys or {}

        def at(name: str) -> dict:
            ref = keys.get(name)
            return {"config": ref.file, "key": ref.key} if ref is not None else {}

        if inp.dtype in _INTEGER and pix.dtype.startswith("float"):
            yield ctx.finding(
                f"Stage '{stage}' takes '{inp.name}' as {inp.dtype} but the processor ({proc.cls}) feeds {pix.dtype} "
                f"pixels in [{pix.range[0]:.3g}, {pix.range[1]:.3g}]: OpenVINO converts them (negative values wrap, "
                f"[0,1] values become 0 or 1) and ONNX Runtime rejects the feed.",
                stage=stage, **at("do_rescale"), **P.basis("uint8-input-fed-float"))
            return
        if inp.dtype and not inp.dtype.startswith(("float", "bfloat")):
            return
        chain = preprocess_chain(inp, sm.analyses.get("shapes", None).const)
        scales = chain.scale_255() is not None
        normalizes = chain.unit_normalization() is not None
        if not pix.rescale and not scales:
            yield ctx.finding(
                f"The processor ({proc.cls}) does not rescale (do_rescale = false), so stage '{stage}' gets pixel values "
                f"up to {pix.range[1]:.3g}, and the graph does not divide by 255 either: the vision tower sees values "
                "about 255 times too large and the output is wrong.",
                stage=stage, **at("do_rescale"), **P.basis("pixel-range"))
        elif pix.rescale and scales:
            yield ctx.finding(
                f"The processor ({proc.cls}) rescales by {pix.rescale_factor:.6g} and stage '{stage}' divides by 255 "
                "again: the tower sees values 255 times too small.",
                stage=stage, **at("do_rescale"), **P.basis("pixel-range"))
        if not pix.normalize and not normalizes and class_default(proc.cls, "do_normalize", True):
            yield ctx.finding(
                f"The processor ({proc.cls}) does not normalize (do_normalize = false, its class normalizes by default) "
                f"and stage '{stage}' does not subtract a mean either: the tower is fed pixels in "
                f"[{pix.range[0]:.3g}, {pix.range[1]:.3g}] instead of the normalized values it was trained on.",
                stage=stage, **at("do_normalize"), **P.basis("pixel-range"))
        elif pix.normalize and normalizes:
            yield ctx.finding(
                f"The processor ({proc.cls}) normalizes with mean {list(pix.mean)} and stage '{stage}' subtracts a "
                "[0,1] mean of its own too: the pixels are normalized twice.",
                stage=stage, **at("do_normalize"), **P.basis("pixel-range"))
