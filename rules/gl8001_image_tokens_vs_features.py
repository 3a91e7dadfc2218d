"""GL8001 image-tokens-vs-features: the vision side emits another number of rows than the image tokens the processor inserts."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _pipeline as P

from graphlint.pipeline import runtimes
from graphlint.pipeline.contracts import Contracts, expected_rows, pixel_input
from graphlint.pipeline.engine import shape_text
from graphlint.rule import Finding, Rule, Severity

# the processor facts that decide the token count, in the order a message names them
TOKEN_KEYS = ("image_seq_length", "num_image_tokens", "mm_tokens_per_image", "image_seq_len",
              "num_additional_image_tokens", "vision_feature_select_strategy", "merge_size", "patch_size",
              "temporal_patch_size", "size", "crop_size", "image_grid_pinpoints", "min_pixels", "max_pixels",
              "max_image_size", "scale_factor")


class ImageTokensVsFeatures(Rule):
    """The rows the vision graphs emit for an image differ from the image tokens the processor inserts for it.

    ## What it checks
    For every source image size the folder's processor arithmetic distinguishes (square, wide and
    tall images, each tile count, the min/max pixel clamps, splitting on and off:
    `graphlint/pipeline/processors.py`), what the processor feeds the vision stage, then the rows
    the vision side (vision graph, then each merger / projector graph along the edges) emits at
    exactly those shapes, computed by graphlint's shape walk over the graphs. Those rows must equal
    the image placeholder tokens the processor puts into `input_ids` for the same image, because
    the runtime scatters one row into each placeholder position.

    ## Why it matters
    This is the most reported VLM deployment failure: "Image features and image tokens do not
    match: tokens N, features M" in transformers, "Number of elements of source < number of ones in
    mask" in optimum-intel's OpenVINO pipeline, or silently wrong output when there are fewer
    placeholders than rows. It appears when a processor config is changed after export (image
    size, `image_seq_length`, `min_pixels`/`max_pixels`, `merge_size`) or when the vision graph was
    exported at one size and frozen there. An error (the runtime raises or computes something
    else); a warning when the rows cannot be computed at a fed size (what is unknown is said).

    ## Example
    A LLaVA folder whose `processor_config.json` says `"image_seq_length": 20` while its vision
    graph emits 16 rows per 32x32 image.

    ## Fix
    Make the processor config say what the graphs were exported for (the message names the key
    and the value that holds), or re-export the vision graph for the processor's sizes.
    """

    id = "GL8001"
    name = "image-tokens-vs-features"
    severity = Severity.ERROR
    scope = "pipeline"
    source = "rules/data/pipeline.toml (image-tokens-rows, stage-frozen-at-fed-size); graphlint/pipeline/processors.py"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        merge = c.merge_edge()
        if merge is None or c.processor is None:
            return
        edge = merge.edge.describe()
        proc = c.processor
        who = proc.processor_cls or proc.cls  # the class that inserts the tokens
        singles = sum(f.images == 1 for f in c.feeds)  # the sizes checked, each as a one-image prompt
        if c.processor_failures:
            sizes = sorted(c.processor_failures)
            said = ", ".join(P.size_text(s) for s in sizes[:4]) + (" ..." if len(sizes) > 4 else "")
            yield ctx.finding(
                f"The processor ({who}) itself fails for {len(sizes)} of the image sizes "
                f"checked ({said}): {c.processor_failures[sizes[0]]}, computed with the arithmetic of its "
                f"transformers class ({proc.source.split(';')[0]}).",
                config=next(iter(proc.keys.values())).file if proc.keys else None, edge=edge,
                **P.basis("processor-fails"))
        frozen = [f for f in c.feeds if f.conflict]
        if frozen:
            f = frozen[0]
            sizes = ", ".join(_said(x) for x in frozen[:4]) + (" ..." if len(frozen) > 4 else "")
            fed = ", ".join(f"'{k}' {shape_text(v)}" for k, v in f.fed.get(f.conflict_stage, {}).items())
            yield ctx.finding(
                f"Stage '{f.conflict_stage}' cannot run at what the processor ({proc.cls}) feeds for "
                f"{len(frozen)} of {len(c.feeds)} image sizes ({sizes}): fed {fed}, {f.conflict}. The graph was "
                f"frozen at another size; ONNX Runtime fails there and OpenVINO fails or returns a wrong result.",
                stage=f.conflict_stage, edge=edge, severity=Severity.ERROR, **P.basis("stage-frozen-at-fed-size"))
        bad = [(f, want) for f in c.feeds if not f.conflict and f.rows is not None
               and f.rows != (want := expected_rows(proc, f.feed))]
        if bad:
            f, want = bad[0]
            read = [proc.keys[k] for k in TOKEN_KEYS if k in proc.keys]
            ref = read[0] if read else None
            where = (" (from " + ", ".join(f"{r.file} {r.key} = {r.value!r}" for r in read[:4]) + ")") if read else ""
            need = ("" if want == f.feed.tokens else
                    f" where the runtime needs {want} rows to pack into those {f.feed.tokens} positions")
            every = len(bad) == len(c.feeds)
            which = f"For every image size (a {_said(f)} image)" if every else f"For a {_said(f)} image"
            more = "" if every or len(bad) == 1 else f"; {len(bad) - 1} more of the {len(c.feeds)} sizes checked disagree"
            yield ctx.finding(
                f"{which} the processor ({who}) inserts {f.feed.tokens} image "
                f"tokens{where} and feeds {shape_text(f.feed.pixel_values)}, but the vision side "
                f"({' -> '.join(c.chain)}) emits {f.rows} rows there{need}{more}: 'Image features and image tokens "
                f"do not match' (or, with fewer tokens than rows, silently wrong output).",
                config=ref.file if ref is not None else None, key=ref.key if ref is not None else None,
                stage=c.chain[-1], edge=edge, tokens=f.feed.tokens, rows=f.rows, expected_rows=want,
                image=list(f.feed.image), **P.basis("image-tokens-rows"))
        packed = []  # where the runtime's own code makes the features from the rows (runtimes.py)
        for f in c.feeds:
            got = (None if f.conflict or f.images > 1 or any(f is b for b, _ in bad)
                   else runtimes.features(c.pipeline, f.feed.image))
            if got is not None and got[0] != f.feed.tokens:
                packed.append((f, *got))
        if packed:
            f, n, why = packed[0]
            sizes = ", ".join(P.size_text(x.feed.image) for x, _, _ in packed[:4]) + (" ..." if len(packed) > 4 else "")
            yield ctx.finding(
                f"For a {P.size_text(f.feed.image)} image the processor ({who}) inserts "
                f"{f.feed.tokens} image tokens but the runtime makes {n} image features: {why}. "
                f"{len(packed)} of the {singles} sizes checked disagree ({sizes}): the merge fails "
                "('Number of elements of source < number of ones in mask') or the output is silently wrong.",
                config="config.json", key=runtimes.entry(c.pipeline)["pinpoints"].split(":", 1)[1],
                stage=c.chain[-1], edge=edge, tokens=f.feed.tokens, features=n, image=list(f.feed.image),
                **P.basis("image-tokens-rows"))
        legacy = runtimes.new_processing_from(c.pipeline)
        if legacy is not None:
            few = [f for f in c.feeds if f.images == 1 and f.feed.tokens < legacy[0]]
            if few:
                f = few[0]
                file, key = legacy[1].split(":", 1)
                yield ctx.finding(
                    f"{file} says {key} = {legacy[0]}, and {c.pipeline.layout} treats a prompt with fewer image tokens "
                    f"than that as a legacy prompt it expands itself; the processor ({who}) "
                    f"inserts {f.feed.tokens} for a {P.size_text(f.feed.image)} image ({len(few)} of the "
                    f"{singles} sizes checked), so the runtime fails on its prompt.",
                    config=file, key=key, edge=edge, tokens=f.feed.tokens, **P.basis("image-tokens-rows"))
        first = c.stages[c.chain[0]].model if c.chain and c.chain[0] in c.stages else None
        pix = pixel_input(first) if first is not None else None
        if pix is not None and pix.shape and isinstance(pix.shape[0], int) and not frozen and not bad:
            # processors concatenate a prompt's images along axis 0 and the runtime runs them in one call
            yield ctx.finding(
                f"Stage '{c.chain[0]}' takes '{pix.name}' with axis 0 fixed at {pix.shape[0]}, the size one image of "
                f"the processor's makes: a prompt with two images feeds it {2 * pix.shape[0]} there in one call, "
                "which the engine refuses. Whether prompts will have several images is not known from the folder; "
                "export the vision graph with that axis dynamic if they will.",
                stage=c.chain[0], edge=edge, severity=Severity.WARNING, unknown=["images per prompt"])
        unknown = [f for f in c.feeds if not f.conflict and f.rows is None]
        if unknown and not bad and not frozen and not packed and len(unknown) == len(c.feeds):
            yield ctx.finding(
                f"Whether the vision side emits one row per image token cannot be told statically: "
                f"{unknown[0].unknown}; only a run at the processor's sizes shows it.",
                stage=c.chain[-1], edge=edge, severity=Severity.INFO, unknown=["rows"])


def _said(f) -> str:
    """A fed size as people say it: the source image, and how many images the prompt has when more than one."""
    return P.size_text(f.feed.image) + (f" ({f.images} images in one prompt)" if f.images > 1 else "")
