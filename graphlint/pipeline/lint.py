"""Lint a deployment folder's pipeline: its stages as models, then the contracts between them.

Each stage is loaded once and linted for every requested target that can take it (an OpenVINO IR
stage is not an ONNX Runtime model), with the sizes the folder's processor feeds it as the fed
sizes of the shape rules (``options["fed"]``). The stages stay loaded, in this process, until the
pipeline rules have read them: a pipeline is linted here, not in a worker.
"""

from __future__ import annotations

import time
from typing import Any

from graphlint.analysis import Analyses
from graphlint.engine import LintResult
from graphlint.errors import GraphlintError, InputError
from graphlint.load import load_with_background
from graphlint.pipeline import Pipeline
from graphlint.pipeline.contracts import Feeds, StageModel, build, fed_inputs
from graphlint.pipeline.engine import PipelineResult, run_pipeline_rules
from graphlint.rule import Rule


def read_processor(pipe: Pipeline) -> tuple[Any, str | None]:
    """The processor arithmetic for the folder's configs, or the class graphlint has none for."""
    from graphlint.pipeline import processors

    files = pipe.configs.data
    proc = processors.read_processor(files)
    return proc, (None if proc is not None else processors.unknown_class(files))


def lint_pipeline(pipe: Pipeline, lint_stage, configure, rules: list[type[Rule]], structure_work,
                  confirm: Any = None) -> tuple[list[LintResult], list[PipelineResult], list[tuple[str, str]]]:
    """Results per stage and target, the pipeline's results per target, and (path, problem) for
    stages that could not be read. ``lint_stage(path, model, analyses, load_seconds, extra)``: a loaded
    stage's results for the run's targets that take it, ``extra`` rule options added (graphlint.lint's
    lint_loaded); ``configure(path, target)``: the target and rule options as configured for a file;
    ``confirm`` (graphlint.confirm.options.ConfirmOptions, under --confirm): after the pipeline rules, the
    whole pipeline is run end to end on the installed engines and its findings settled
    (graphlint.confirm.pipeline), while the stages are still loaded."""
    stages: dict[str, StageModel] = {}
    failures: list[tuple[str, str]] = []
    seconds: dict[str, float] = {}
    try:
        for st in pipe.stages:
            t0 = time.perf_counter()
            try:
                model, background = load_with_background(st.path, meanwhile=structure_work)
            except InputError as e:
                failures.append((st.path, e.problem))
                continue
            except GraphlintError as e:
                failures.append((st.path, str(e)))
                continue
            stages[st.name] = StageModel(model, Analyses(model, background))
            seconds[st.name] = time.perf_counter() - t0
        processor, unknown = read_processor(pipe)
        feeds = Feeds.of(processor)
        fed = fed_inputs(stages, pipe, feeds)
        results: list[LintResult] = []
        for st in pipe.stages:
            sm = stages.get(st.name)
            if sm is not None:
                extra = {"fed": fed[st.name]} if st.name in fed else {}
                results.extend(lint_stage(st.path, sm.model, sm.analyses, seconds[st.name], extra))
        contracts = build(pipe, stages, processor, unknown, feeds)
        piped = []
        for target in {res.target.spec: res.target for res in results}.values():
            _, options = configure(pipe.folder, target)
            piped.append(run_pipeline_rules(contracts, target, rules, options))
        if confirm is not None and piped:
            from graphlint.confirm.pipeline import confirm_pipeline

            confirm_pipeline(contracts, piped, rules, confirm, configure)
        return results, piped, failures
    finally:
        for sm in stages.values():
            sm.analyses.close()
