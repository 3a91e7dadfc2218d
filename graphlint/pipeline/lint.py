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
from graphlint.engine import LintResult, run_rules
from graphlint.errors import GraphlintError, InputError
from graphlint.load import load_with_background
from graphlint.pipeline import Pipeline
from graphlint.pipeline.contracts import Feeds, StageModel, build, fed_inputs
from graphlint.pipeline.engine import PipelineResult, run_pipeline_rules
from graphlint.rule import Rule
from graphlint.target import Target


def read_processor(pipe: Pipeline) -> tuple[Any, str | None]:
    """The processor arithmetic for the folder's configs, or the class graphlint has none for."""
    from graphlint.pipeline import processors

    files = pipe.configs.data
    proc = processors.read_processor(files)
    return proc, (None if proc is not None else processors.unknown_class(files))


def lint_pipeline(pipe: Pipeline, targets_for, rules: list[type[Rule]], configure, attach,
                  structure_work) -> tuple[list[LintResult], list[PipelineResult], list[tuple[str, str]]]:
    """Results per stage and target, the pipeline's results per target, and (path, problem) for
    stages that could not be read. ``targets_for(model)``: the run's targets that can take it;
    ``configure(path, target)``: that target and the rule options as configured for the file;
    ``attach(analyses, results)``: origins for the findings (graphlint.lint's)."""
    stages: dict[str, StageModel] = {}
    failures: list[tuple[str, str]] = []
    timings: dict[str, float] = {}
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
            timings[f"load:{st.name}"] = time.perf_counter() - t0
        processor, unknown = read_processor(pipe)
        feeds = Feeds.of(processor)
        fed = fed_inputs(stages, pipe, feeds)
        results: list[LintResult] = []
        used: dict[str, Target] = {}
        for st in pipe.stages:
            sm = stages.get(st.name)
            if sm is None:
                continue
            mine = []
            for target in targets_for(sm.model):
                target, options = configure(st.path, target)
                if st.name in fed:
                    options["fed"] = fed[st.name]
                res = run_rules(sm.model, target, rules, options, sm.analyses)
                res.timings = {"load": timings.get(f"load:{st.name}", 0.0), **res.timings}
                mine.append(res)
                used.setdefault(target.spec, target)
            attach(sm.analyses, mine)
            results.extend(mine)
        contracts = build(pipe, stages, processor, unknown, feeds)
        piped = []
        for target in used.values():
            _, options = configure(pipe.folder, target)
            piped.append(run_pipeline_rules(contracts, target, rules, options))
        return results, piped, failures
    finally:
        for sm in stages.values():
            sm.analyses.close()
