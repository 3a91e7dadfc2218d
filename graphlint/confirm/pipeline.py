"""``--confirm`` on a deployment folder: run the whole pipeline end to end on each installed engine.

After the pipeline rules ran (graphlint.pipeline.lint), and while the stages are loaded, this module

1. plans the **cases** (graphlint.confirm.pipeline_cases): every feed the folder's processor makes (the shapes of
   :class:`~graphlint.pipeline.contracts.FeedFacts`, synthetic pixels in the range the processor's output
   has, ``image_grid_thw`` and the like from the feed's values), each with the image tokens the processor
   inserts, the rows those tokens need (:func:`~graphlint.pipeline.contracts.expected_rows`) and the
   features the runtime's own packing makes (:mod:`graphlint.pipeline.runtimes`); where the processor
   class is one graphlint has no arithmetic for, the size the folder states (``config.json``'s
   ``vision_config.image_size``, the processor config's size, else the vision graph's export size) with
   the image tokens the configs state (``image_seq_length``, ``num_image_tokens``, ``mm_tokens_per_image``);
   a prompt of two images where the vision graph's batch is fixed (a sample: the folder does not say);
2. runs them in ONE engine process per engine (graphlint.runners.pipeline_child): the vision chain, the
   row count, the merge into the text embeddings and the language model, the tensors passed between the
   stages there, within the time budget and the memory check of graphlint.confirm.execute;
3. settles the pipeline findings of the matching target: a finding the failure bears on (GL8001 for
   rows and tokens, GL8002 widths, GL8003 dtypes, GL8006/GL8007 the language model and embeddings,
   GL8008's unknown processor) is **confirmed** with the engine's message (an unknown premise becomes an
   error where the case is the processor's or the folder's own size); unknowns the runs answer are
   **cleared** (info); a failure no finding predicted is GL9104 (pipeline-runtime-failure).

``PipelineResult.confirm`` records what ran (the engine, the cases, what they settled). No engine is
imported in this process.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphlint.confirm.engines import Engine, engine_for
from graphlint.confirm.execute import memory_problem, run_child
from graphlint.confirm.pipeline_cases import Case, _dims, _np_dtype, _stated, plan_cases
from graphlint.confirm.plan import SAMPLE
from graphlint.confirm.verdicts import settle_pipeline
from graphlint.rule import Finding, Rule


@dataclass
class Failure:
    """What went wrong in one case (or at loading) on one engine."""

    engine: Engine
    kind: str  # load | vision | rows | tokens | legacy | width | dtype | text | lm | logits | crash
    stage: str
    message: str
    node: str | None = None
    case: Case | None = None
    rows: int | None = None

    @property
    def sample_only(self) -> bool:
        return self.case is not None and self.case.kind == SAMPLE

    def text(self) -> str:
        where = "loading the stages" if self.case is None else f"at {self.case.text()}"
        return f"{self.engine.title} running the pipeline fails {where}, stage '{self.stage}': {self.message}"

    def evidence(self) -> dict[str, Any]:
        e = self.engine
        out: dict[str, Any] = {"engine": e.runner, "version": e.version, "device": e.device, "stage": self.stage,
                               "kind": self.kind, "message": self.message}
        if self.node:
            out["node"] = self.node
        if self.case is not None:
            out["case"] = self.case.doc()
            if self.case.token_key:
                out["config"], out["key"] = self.case.token_key
        return out


@dataclass
class PipelineRun:
    """What one engine did with the pipeline."""

    engine: Engine
    cases: list[Case]
    records: list[dict[str, Any]] = field(default_factory=list)  # the child's per case, in order
    load: dict[str, dict[str, Any]] = field(default_factory=dict)
    crashed: str = ""
    skipped: str = ""
    seconds: float = 0.0

    def failures(self) -> list[Failure]:
        out = [Failure(self.engine, "load", name, r.get("error", ""), r.get("node"))
               for name, r in self.load.items() if not r.get("ok")]
        for case, rec in zip(self.cases, self.records, strict=False):
            if rec.get("kind") not in ("ok", "rows only"):
                out.append(Failure(self.engine, rec["kind"], rec.get("stage", ""), rec.get("error", ""),
                                   rec.get("node"), case, rec.get("rows")))
        if self.crashed and not out:
            i = len(self.records)
            case = self.cases[i] if i < len(self.cases) else None
            out.append(Failure(self.engine, "crash", "", f"the engine process died: {self.crashed}", None, case))
        return out

    def ran(self, question: str | None = None) -> list[tuple[Case, dict[str, Any]]]:
        """The cases that ran end to end (of one question)."""
        return [(c, r) for c, r in zip(self.cases, self.records, strict=False)
                if r.get("kind") == "ok" and (question is None or c.question == question)]


def _fill_spec(v: Any, bind: str | None = None) -> dict[str, Any]:
    name = v.name.lower()
    dt = _np_dtype(v.dtype)
    if "mask" in name:
        kind = "zeros" if dt.startswith("float") else "ones"  # an additive float mask: 0 attends
    elif "position" in name:
        kind = "arange"
    elif name == "window_index":  # Qwen2.5-VL: a permutation of the merged patches (optimum-intel's get_window_index)
        kind, bind = "arange", "merged"
    else:
        kind = "normal"
    return {"name": v.name, "dtype": dt, "dims": _dims(v), "kind": kind, "bind": bind}


def _lm_spec(v: Any) -> dict[str, Any]:
    name = v.name.lower()
    spec = _fill_spec(v)
    shape = v.shape or ()
    if "mask" in name:
        spec["kind"] = "mask"
    elif "position" in name:
        spec["kind"] = "mrope" if len(shape) == 3 and shape[0] == 3 else "positions"
    elif name == "beam_idx":
        spec["kind"] = "beam"
    elif "token_type" in name:
        spec["kind"] = "token_type"
    elif ("past" in name or "cache" in name) and len(shape) >= 3:
        spec["kind"] = "past"
    elif name in ("input_ids", "input"):
        spec["kind"] = "ids"
    return spec


def _past_from_config(spec: dict[str, Any], configs: Any) -> dict[str, Any]:
    """An empty KV cache [batch, kv_heads, 0, head_dim] sized as a generate loop sizes it: from config.json
    (optimum's and transformers' caches read the text config's KV heads and head dim), not from the graph."""
    if spec["kind"] != "past" or len(spec["dims"]) != 4:
        return spec
    for root in ("text_config.", ""):
        heads = configs.value("config.json", root + "num_key_value_heads") or \
            configs.value("config.json", root + "num_attention_heads")
        dim = configs.value("config.json", root + "head_dim")
        if dim is None and isinstance(heads, int):
            hidden, n = configs.value("config.json", root + "hidden_size"), configs.value("config.json",
                                                                                          root + "num_attention_heads")
            dim = hidden // n if isinstance(hidden, int) and isinstance(n, int) and n else None
        if isinstance(heads, int) and isinstance(dim, int):
            return {**spec, "dims": [spec["dims"][0], heads, None, dim]}
    return spec


def _out_index(model: Any, name: str) -> int:
    return next((i for i, v in enumerate(model.graph.outputs) if v.name == name), 0)


def write_job(c: Any, cases: list[Case], work: str, engine: Engine, config: dict[str, Any], seed: int
              ) -> tuple[dict[str, Any], str]:
    """The child's job (graphlint.runners.pipeline_child), its cases' feeds saved under ``work``; or why not."""
    from graphlint.confirm import feeds as F
    from graphlint.pipeline import TEXT_EMBEDDINGS
    from graphlint.pipeline.contracts import lm_stage
    from graphlint.pipeline.runtimes import facts_file

    pipe = c.pipeline
    me = c.merge_edge()
    lm = lm_stage(pipe)
    texts = [s.name for s in pipe.by_role(TEXT_EMBEDDINGS) if s.name in c.stages]
    if lm is None or lm not in c.stages or not texts:
        return {}, "the folder has no text-embedding and language-model stages to merge into"
    text = texts[0]
    tm = c.stages[text].model
    ints = [v for v in tm.graph.inputs if v.const is None and v.dtype and v.dtype.startswith(("int", "uint"))]
    if not ints:
        return {}, f"stage '{text}' takes no token ids"
    ids = ints[0]
    consts = c.stages[text].analyses.get("shapes", None).const
    contract = F.contracts(tm, consts).get(ids.name)
    vocab = int(contract.high) if contract is not None and contract.kind == "ids" else None
    vocab = vocab or _stated(pipe.configs, (("config.json", "text_config.vocab_size"), ("config.json", "vocab_size")))
    vocab = vocab[0] if isinstance(vocab, tuple) else (vocab or 100)
    image_input = me.edge.input if me.edge.dest == text else None
    text_out = next((e.edge.output for e in c.edges if e.edge.source == text and e.edge.dest == lm and e.out), "")
    text_out = text_out or (tm.graph.outputs[0].name if tm.graph.outputs else "")
    lmm = c.stages[lm].model
    embeds_in = next((e.edge.input for e in c.edges if e.edge.dest == lm and e.inp is not None), "inputs_embeds")
    logits = next((v for v in lmm.graph.outputs if v.name == "logits"), lmm.graph.outputs[0] if lmm.graph.outputs else None)
    ldims = _dims(logits) if logits is not None else []
    lm_vocab = ldims[-1] if ldims and ldims[-1] is not None else None
    token_id = c.processor.image_token_id if c.processor is not None else None
    if token_id is None:
        got = _stated(pipe.configs, (("config.json", "image_token_index"), ("config.json", "image_token_id"),
                                     ("config.json", "vision_config.image_token_id")))
        token_id = got[0] if got else vocab - 1
    merge_size = (c.processor.params.get("merge_size") if c.processor is not None else None) or \
        (_stated(pipe.configs, (("config.json", "vision_config.spatial_merge_size"),)) or (2,))[0]
    model_type = pipe.configs.value("config.json", "model_type")
    table = facts_file().get("merge_dtype", {}).get(pipe.layout, {})
    verdict = table.get(str(model_type))
    links, derived = [], {}
    for i, name in enumerate(c.chain[1:], 1):
        fed = set()
        for e in c.edges:
            if e.edge.source == c.chain[i - 1] and e.edge.dest == name and e.out is not None and e.inp is not None:
                links.append({"source": e.edge.source, "output": e.out.name, "dest": name, "input": e.inp.name,
                              "index": _out_index(c.stages[e.edge.source].model, e.out.name)})
                fed.add(e.inp.name)
        derived[name] = [_fill_spec(v) for v in c.stages[name].model.graph.inputs
                         if v.const is None and v.name not in fed]
    saved = []
    for i, case in enumerate(cases):
        path = os.path.join(work, f"case{i}.npz")
        np.savez(path, **case.feeds)
        saved.append({"feeds": path, "tokens": case.tokens, "expected_rows": case.expected_rows,
                      "features": case.features, "packing": case.packing, "legacy": case.legacy,
                      "images": case.images, "grids": case.grids})
    stages = [*c.chain, text, lm]
    job = {
        "engine": engine.runner, "config": config, "seed": seed, "result": os.path.join(work, "result.json"),
        "stages": {s: os.path.abspath(pipe.stage(s).path) for s in dict.fromkeys(stages)},
        "chain": c.chain, "links": links, "derived": derived,
        "merge": {"source": me.edge.source, "output": me.out.name if me.out is not None else "",
                  "index": _out_index(c.stages[me.edge.source].model, me.out.name) if me.out is not None else 0,
                  "cast": None if verdict is None else verdict == "casts",
                  "cast_source": f"{pipe.layout}'s {model_type} merge, rules/data/pipeline.toml [merge_dtype]"},
        "text": {"stage": text, "ids": ids.name, "image_input": image_input, "output": text_out,
                 "extra": [_fill_spec(v) for v in tm.graph.inputs
                           if v.const is None and v.name not in (ids.name, image_input)]},
        "lm": {"stage": lm, "embeds": embeds_in, "logits": logits.name if logits is not None else "",
               "vocab": lm_vocab, "inputs": [_past_from_config(_lm_spec(v), pipe.configs) for v in lmm.graph.inputs
                                             if v.const is None and v.name != embeds_in]},
        "image_token_id": int(token_id), "vocab": int(vocab), "merge_size": int(merge_size),
        "cases": saved,
    }
    return job, ""


# ---------------------------------------------------------------------------------------------- running

def run_engine(job: dict[str, Any], work: str, engine: Engine, cases: list[Case], budget: float) -> PipelineRun:
    pr = PipelineRun(engine, cases)
    pr.skipped = memory_problem(list(job["stages"].values()))
    if pr.skipped:
        return pr
    if engine.runner == "onnxruntime" and any(p.lower().endswith(".xml") for p in job["stages"].values()):
        pr.skipped = "onnxruntime cannot load the OpenVINO IR stages"
        return pr
    job = dict(job, result=os.path.join(work, f"result-{engine.runner}.json"))
    end = run_child("graphlint.runners.pipeline_child", job, os.path.join(work, f"job-{engine.runner}.json"), budget)
    pr.seconds, pr.crashed, result = end.seconds, end.crashed, end.result
    if not result:
        pr.skipped = pr.crashed or "the engine process wrote nothing"
        return pr
    pr.load = result.get("load") or {}
    pr.records = result.get("cases") or []
    if pr.crashed and str(result.get("step") or "").startswith("load "):
        name = result["step"].split(" ", 1)[1]
        pr.load[name] = {"ok": False, "error": f"the engine process died while loading it: {pr.crashed}"}
    return pr


def confirm_pipeline(contracts: Any, piped: list[Any], rules: list[type[Rule]], copts: Any,
                     configure: Any = None) -> None:
    """Run the pipeline of ``contracts`` on the engines of ``piped``'s targets and settle their findings."""
    t0 = time.perf_counter()
    engines: dict[Engine, list[Any]] = {}
    for pres in piped:
        eng, why = engine_for(pres.target)
        if eng is None:
            pres.confirm = {"skipped": why}
        else:
            engines.setdefault(eng, []).append(pres)
    if not engines:
        return
    cases, why = plan_cases(contracts, copts.seed)
    if not cases:
        for of in engines.values():
            for pres in of:
                pres.confirm = {"skipped": f"cannot run the pipeline end to end: {why}"}
        return
    runs: dict[Engine, PipelineRun] = {}
    with tempfile.TemporaryDirectory(prefix="graphlint-pipeline-") as work:
        for eng in engines:
            job, why = write_job(contracts, cases, work, eng, copts.engines.get(eng.runner, {}), copts.seed)
            if not job:
                runs[eng] = PipelineRun(eng, cases, skipped=f"cannot run the pipeline end to end: {why}")
                continue
            runs[eng] = run_engine(job, work, eng, cases, copts.budget)
    confirm_rules = sorted((r for r in rules if r.scope == "confirm"), key=lambda r: r.id)
    for eng, of in engines.items():
        pr = runs[eng]
        for pres in of:
            settled = settle_pipeline(pres.findings, pr) if not pr.skipped else None
            if settled is not None and settled.unpredicted:
                options = configure(pres.path, pres.target)[1] if configure is not None else {}
                pres.findings.extend(_run_rules(confirm_rules, contracts, pres, options, settled.unpredicted))
            pres.findings.sort(key=lambda f: (f.model, f.location.line or 0, f.rule_id, f.message))
            pres.confirm = run_note(pr, settled)
            pres.timings["confirm"] = time.perf_counter() - t0


def _run_rules(rules: list[type[Rule]], contracts: Any, pres: Any, options: dict[str, Any],
               unpredicted: list[Failure]) -> list[Finding]:
    """The pipeline-scope runtime rules (``check_pipeline_confirm``: GL9104) on what no finding predicted."""
    import functools

    from graphlint.engine import checked
    from graphlint.pipeline.engine import PipelineContext, crash_finding

    ctx = PipelineContext(contracts, pres.target, options)
    ctx.unpredicted = unpredicted  # type: ignore[attr-defined]
    out: list[Finding] = []
    for rule_cls in rules:
        ctx.rule = rule_cls
        out.extend(checked(rule_cls, functools.partial(rule_cls().check_pipeline_confirm, ctx),
                           functools.partial(crash_finding, contracts, pres.target, rule_cls),
                           options.get("severity_overrides", {})))
    return out


def run_note(pr: PipelineRun, settled: Any) -> dict[str, Any]:
    """What ran for one pipeline and target (``PipelineResult.confirm``)."""
    e = pr.engine
    doc: dict[str, Any] = {"engine": e.runner, "version": e.version, "device": e.device,
                           "seconds": round(pr.seconds, 3), "end_to_end": True}
    if pr.skipped:
        doc["skipped"] = pr.skipped
        return doc
    points = []
    for case, rec in zip(pr.cases, pr.records, strict=False):
        p = {**case.doc(), "ok": rec.get("kind") in ("ok", "rows only")}
        for k in ("rows", "width", "logits"):
            if k in rec:
                p[k] = rec[k]
        if rec.get("kind") not in ("ok", "rows only"):
            p.update(failed=rec.get("kind"), stage=rec.get("stage"), error=rec.get("error"))
        points.append(p)
    doc["points"] = points
    if len(pr.records) < len(pr.cases):
        doc["not_run"] = len(pr.cases) - len(pr.records)
    bad = {k: v.get("error", "") for k, v in pr.load.items() if not v.get("ok")}
    if bad:
        doc["load_error"] = "; ".join(f"{k}: {v}" for k, v in bad.items())
    if pr.crashed:
        doc["crashed"] = pr.crashed
    if settled is not None:
        doc.update(confirmed=settled.confirmed, cleared=settled.cleared, contradicted=0,
                   unpredicted=len(settled.unpredicted))
    return doc

