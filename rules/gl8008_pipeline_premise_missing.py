"""GL8008 pipeline-premise-missing: the folder does not state what a pipeline contract needs."""

from __future__ import annotations

from collections.abc import Iterator

from graphlint.pipeline.contracts import Contracts
from graphlint.rule import Finding, Rule, Severity


class PipelinePremiseMissing(Rule):
    """A deployment folder leaves out what graphlint needs to check how its graphs are fed.

    ## What it checks
    - A pipeline with a vision stage but no image processor config (`preprocessor_config.json`),
      or one whose processor class graphlint has no arithmetic for: which sizes are fed and how
      many image tokens are inserted cannot be told.
    - Config files that are not readable JSON, edges whose ports do not exist in the graphs, and
      stages a layout names that are missing or outside the folder.

    ## Why it matters
    The contracts between the files are where multimodal deployments fail; a contract whose
    premise is missing is not checked, and this says so instead of staying silent. A warning that
    says what to add.

    ## Example
    A folder with `openvino_vision_embeddings_model.xml` and `openvino_language_model.xml` but no
    `preprocessor_config.json`.

    ## Fix
    Ship the processor config beside the graphs (`processor.save_pretrained(folder)`), or name the
    ports in the `[pipeline]` table of `graphlint.toml`.
    """

    id = "GL8008"
    name = "pipeline-premise-missing"
    severity = Severity.WARNING
    scope = "pipeline"
    source = "graphlint/pipeline/detect.py, graphlint/pipeline/processors.py"

    def check_pipeline(self, ctx) -> Iterator[Finding]:
        c: Contracts = ctx.contracts
        pipe = c.pipeline
        for name, why in sorted(pipe.configs.problems.items()):
            yield ctx.finding(f"{name} is {why}: the facts it holds are not checked.", config=name,
                              unknown=["config"])
        for note in pipe.notes:
            yield ctx.finding(note[0].upper() + note[1:] + ".", unknown=["stage"])
        for ef in c.edges:
            if ef.problem and all(s in c.stages for s in (ef.edge.source, ef.edge.dest)):
                yield ctx.finding(f"Edge {ef.edge.describe()}: {ef.problem}; name the port in graphlint.toml's "
                                  "[pipeline] table.", edge=ef.edge.describe(), unknown=["port"])
        if not c.chain or c.merge_edge() is None:
            return
        if c.unknown_processor:
            yield ctx.finding(
                f"The image processor class {c.unknown_processor!r} is not one graphlint has arithmetic for "
                "(graphlint/pipeline/processors.py): the sizes it feeds and the image tokens it inserts are not "
                "checked against the vision graphs.", config="preprocessor_config.json",
                key="image_processor_type", unknown=["processor"])
        elif c.processor is None:
            yield ctx.finding(
                "The folder has a vision stage but no image processor config (preprocessor_config.json): which "
                "sizes are fed and how many image tokens are inserted cannot be checked; add the processor's "
                "config (processor.save_pretrained(folder)).", stage=c.chain[0], unknown=["processor"])
