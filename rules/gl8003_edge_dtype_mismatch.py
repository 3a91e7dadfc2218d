"""GL8003 edge-dtype-mismatch: a stage's output dtype differs from the dtype of the input it feeds."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint_rules import _pipeline as P

from graphlint.pipeline.contracts import Contracts
from graphlint.rule import Finding, Rule, Severity


class EdgeDtypeMismatch(Rule):
    """A stage feeds another stage a tensor of another element type than that input declares (f16 vision into f32 `inputs_embeds`).

    ## What it checks
    Each edge of the pipeline: the source output's dtype against the destination input's. On a
    direct edge (text embeddings into the language model, vision into its merger) the runtime
    passes the tensor as it is. On the image-token merge it depends on the runtime's merge code
    (`rules/data/pipeline.toml`, `merge_dtype`): optimum-intel's LLaVA merge casts, its Qwen2-VL
    merge does not.

    ## Why it matters
    ONNX Runtime rejects an input of another element type ("Unexpected input data type");
    OpenVINO's Python API converts silently, so an f16 vision graph built for a GPU next to an f32
    language model works in one runtime and fails or drifts in another. An error where the runtime
    fails (a direct edge on ONNX Runtime or TensorRT; merges the table lists as failing); a warning
    where the target converts (a direct edge on OpenVINO) or the merge's behaviour is not known.

    ## Example
    `openvino_vision_embeddings_model.xml` compressed to f16 outputs while
    `openvino_language_model.xml` takes f32 `inputs_embeds`.

    ## Fix
    Export every stage at the same precision, or convert the output back (OpenVINO: keep the
    output f32 with a `Convert` at the end; ONNX: a `Cast` to the consumer's type).
    """

    id = "GL8003"
    name = "edge-dtype-mismatch"
    severity = Severity.ERROR
    scope = "pipeline"
    source = "rules/data/pipeline.toml (edge-dtype, merge_dtype)"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        model_type = c.pipeline.configs.value("config.json", "model_type")
        for ef in c.edges:
            if ef.out is None or ef.inp is None or not ef.out.dtype or not ef.inp.dtype:
                continue
            if ef.out.dtype == ef.inp.dtype:
                continue
            text = (f"Stage '{ef.edge.source}' output '{ef.out.name}' is {ef.out.dtype} but stage "
                    f"'{ef.edge.dest}' input '{ef.inp.name}' is {ef.inp.dtype}")
            if not ef.edge.merge:
                if ctx.target.name == "openvino":  # its Python API converts a feed to the input's element type
                    yield ctx.finding(text + ": OpenVINO converts the feed (at the source's precision); ONNX Runtime "
                                      "would reject it.", stage=ef.edge.source, edge=ef.edge.describe(),
                                      severity=Severity.WARNING)
                    continue
                yield ctx.finding(text + ": ONNX Runtime rejects the feed and OpenVINO converts it silently.",
                                  stage=ef.edge.source, edge=ef.edge.describe(), **P.basis("edge-dtype"))
                continue
            verdict = P.table("merge_dtype").get(c.pipeline.layout, {}).get(str(model_type))
            if verdict == "casts":
                continue
            if verdict == "fails":
                yield ctx.finding(text + f": {c.pipeline.layout}'s {model_type} merge does not convert it and fails.",
                                  stage=ef.edge.source, edge=ef.edge.describe(), **P.basis("edge-dtype"))
                continue
            yield ctx.finding(
                text + f": whether {c.pipeline.layout}'s merge for '{model_type}' converts it is not known.",
                stage=ef.edge.source, edge=ef.edge.describe(), severity=Severity.WARNING,
                unknown=["what the runtime's merge does"])
