"""``graphlint check --confirm``: run what static analysis could not prove on the engines installed.

After the rules ran on a model, :func:`confirm_model` plans the sizes to run at and the inputs to
feed (graphlint.confirm.plan, .feeds), runs the model on each installed engine that matches a
requested target, each in a child process within a time budget (.execute, .child), then

1. settles the static findings: confirmed, cleared or contradicted (.verdicts);
2. checks each output's shape and compares the engines' values, bisecting a difference to the first
   node where it appears (.outputs, .bisect);
3. runs the runtime rules (``scope = "confirm"``: GL9101 runtime failure, GL9102 output shape,
   GL9103 engines disagree) on what is left, as findings of the same result.

Nothing here is imported unless ``--confirm`` is given, and no engine is imported in this process.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from graphlint.confirm.options import ConfirmOptions
from graphlint.rule import Finding, Rule, RuleContext


class ConfirmContext(RuleContext):
    """What a runtime rule sees: the rule context of the model and target, and the engine's record."""

    def __init__(self, base: RuleContext, run: Any, plan: Any, unpredicted: list[Any], shapes: list[Any],
                 divergences: list[Any], nodes: dict[str, Any]) -> None:
        super().__init__(base.model, base.target, base.analyses, base.options)
        self.run = run
        self.plan = plan
        self.unpredicted = unpredicted
        self.shape_problems = shapes
        self.divergences = divergences
        self._nodes = nodes

    def node(self, name: str | None) -> Any:
        """The node an engine named (by its name, its output's, or the label findings use), if any."""
        if not name:
            return None
        hit = self._nodes.get(name)
        return hit if hit is not None else next((n for n in self._nodes.values() if n.label == name), None)


def confirm_model(path: str, model: Any, analyses: Any, results: list[Any], options: dict[str, Any],
                  rules: list[type[Rule]], copts: ConfirmOptions) -> None:
    """Run ``model`` on the engines of ``results``' targets and settle their findings in place."""
    from graphlint.confirm import execute, outputs, verdicts
    from graphlint.confirm.engines import engine_for
    from graphlint.confirm.plan import SAMPLE, make_plan

    t0 = time.perf_counter()
    engines: dict[Any, list[Any]] = {}
    notes: dict[str, str] = {}
    for res in results:
        eng, why = engine_for(res.target)
        if eng is None:
            notes[res.target.spec] = why
        else:
            engines.setdefault(eng, []).append(res)
    refused = _refused(model)
    if refused:
        for res in results:
            res.confirm = {"skipped": refused}
        return
    if not engines:
        for res in results:
            res.confirm = {"skipped": notes[res.target.spec]}
        return
    facts = analyses.get("shapes", None)
    first = results[0]
    plan = make_plan(model, facts.const, options, [f for r in results for f in r.findings],
                     first.target.option("input_ranges"))
    if not copts.sample:
        plan.points = [p for p in plan.points if p.kind != SAMPLE]
    if plan.problem or not plan.points:
        why = plan.problem or "no size to run at: give the sizes you feed with --shapes"
        for res in results:
            res.confirm = {"skipped": f"cannot feed the model: {why}"}
        return
    runs: dict[Any, Any] = {}
    with tempfile.TemporaryDirectory(prefix="graphlint-feeds-") as feeds_dir:
        execute.write_feeds(plan, feeds_dir, copts.seed)
        for eng, of in engines.items():
            runs[eng] = execute.run_engine(path, eng, [r.target.spec for r in of], plan, feeds_dir, copts.budget,
                                           copts.engines.get(eng.runner, {}),
                                           profile=execute.profile_for(plan) if eng.runner == "tensorrt" else None)
        ran = [er for er in runs.values() if er.runs]
        shapes = outputs.shape_problems(model, ran)
        ref = _reference(model, plan, copts)
        both = ran + ([ref] if ref is not None else [])
        diverged = outputs.divergences(both) if (copts.compare or ref) and len(both) > 1 else []
        for d in diverged:
            if ref is not None and (d.a is ref or d.b is ref):  # PyTorch says what the model means
                from graphlint.confirm.bisect import Located

                engine = d.a if d.b is ref else d.b
                d.bisected = Located(None, None, f"at output '{d.output}' (against the PyTorch reference)",
                                     [engine.engine.runner])
            elif copts.bisect:
                from graphlint.confirm import bisect

                d.bisected = bisect.locate(path, model, d, plan, feeds_dir, copts)
    confirm_rules = sorted((r for r in rules if r.scope == "confirm"), key=lambda r: r.id)
    nodes = verdicts.nodes_by_name(model)
    for eng, of in engines.items():
        er = runs[eng]
        for res in of:
            settled = verdicts.settle(res.findings, er, plan, nodes)
            mine = verdicts.confirm_drift(res.findings, [d for d in diverged if d.a is er or d.b is er], er)
            wrong_shapes = verdicts.confirm_shapes(res.findings, [s for s in shapes if s.engine is er], model)
            ctx = ConfirmContext(RuleContext(model, res.target, analyses, options), er, plan, settled.unpredicted,
                                 wrong_shapes, mine, nodes)
            res.findings.extend(_run_rules(confirm_rules, ctx))
            res.findings.sort(key=Finding.sort_key)
            res.confirm = verdicts.run_note(er, settled)
    for res in results:
        if getattr(res, "confirm", None) is None:
            res.confirm = {"skipped": notes.get(res.target.spec, "not run")}
        res.timings["confirm"] = time.perf_counter() - t0


def _reference(model: Any, plan: Any, copts: ConfirmOptions) -> Any:
    """The PyTorch reference's runs (``copts.reference``: the ONNXProgram ``graphlint.check`` was given)."""
    if copts.reference is None:
        return None
    from graphlint.confirm import reference

    made = reference.from_program(copts.reference, list(plan.inputs))
    if made is None:
        return None
    fn, version = made
    return reference.reference_run(fn, version, plan, copts.seed, [v.name for v in model.graph.outputs])


def _refused(model: Any) -> str:
    """Why the model must not be handed to an engine: weights the loader refused to follow (a location
    outside the model's folder, a symlink out of it) or could not find, which an engine would read.
    Read from the model itself, not from GL0005's findings, which a user may have ignored."""
    for issue in model.issues:
        if issue.kind == "external-data":
            return f"its external data cannot be read safely ({issue.message}); no engine is given it"
    return ""


def _run_rules(rules: list[type[Rule]], ctx: ConfirmContext) -> list[Finding]:
    import functools

    from graphlint.engine import checked, crash_finding

    out: list[Finding] = []
    for rule_cls in rules:
        ctx.rule = rule_cls
        out.extend(checked(rule_cls, functools.partial(rule_cls().check_confirm, ctx),
                           functools.partial(crash_finding, ctx.model, ctx.target, rule_cls),
                           ctx.options.get("severity_overrides", {})))
    return out
