"""One analysis manager per model: results keyed by (name, target), per-model ones shared by every
target, dependencies computed first and declared, statistics recorded in order."""

from __future__ import annotations

import os

import pytest

from graphlint import analysis
from graphlint.analysis import Analyses, AnalysisContext
from graphlint.engine import run_rules
from graphlint.load import load_model
from graphlint.rule import Rule, Severity
from graphlint.target import resolve
from testmodels import build_core
from testmodels.common import cached

CALLS: list[tuple[str, str | None]] = []


def _per_model(ctx: AnalysisContext) -> int:
    CALLS.append(("per_model", None if ctx.target is None else ctx.target.name))
    ctx.record("test_nodes", len(ctx.model.graph.nodes))
    return len(ctx.model.graph.nodes)


def _per_target(ctx: AnalysisContext) -> tuple[str, int]:
    CALLS.append(("per_target", ctx.target.name))
    return ctx.target.name, ctx.analysis("test_per_model")


def _undeclared(ctx: AnalysisContext) -> int:
    return ctx.analysis("test_per_model")


def _cycle_a(ctx: AnalysisContext) -> None:
    return None


def _cycle_b(ctx: AnalysisContext) -> None:
    return None


def _legacy(model, target) -> str:
    """A graphlint 0.1 analysis: (model, target), with an early part that is no longer run."""
    return f"{model.format}:{target}"


@pytest.fixture(scope="module", autouse=True)
def registered():
    """The analyses above, registered for this module's tests only."""
    regs = [("test_per_model", _per_model, {"per_target": False}),
            ("test_per_target", _per_target, {"requires": ("test_per_model",)}),
            ("test_undeclared", _undeclared, {}),
            ("test_cycle_a", _cycle_a, {"requires": ("test_cycle_b",)}),
            ("test_cycle_b", _cycle_b, {"requires": ("test_cycle_a",)}),
            ("test_legacy", _legacy, {"per_target": False, "early": lambda model: "ignored"})]
    for name, fn, kw in regs:
        analysis.analysis(name, **kw)(fn)
    yield
    for name, _, _ in regs:
        del analysis._REGISTRY[name]


@pytest.fixture(scope="module")
def model():
    return load_model(os.path.join(cached("core", build_core.build), "convnet_opset17.onnx"))


def test_keys_sharing_and_dependencies(model):
    CALLS.clear()
    analyses = Analyses(model)
    trt, ort = resolve("trt"), resolve("ort")
    n = len(model.graph.nodes)
    assert analyses.get("test_per_target", trt) == ("trt", n)
    assert analyses.get("test_per_target", ort) == ("ort", n)
    assert analyses.get("test_per_target", trt) == ("trt", n)  # cached under (name, trt)
    assert analyses.get("test_per_model", ort) == n
    # the per-model analysis ran once, before its dependent, and saw no target
    assert CALLS == [("per_model", None), ("per_target", "trt"), ("per_target", "ort")]
    assert analyses.stats["test_nodes"] == n
    assert set(analyses.computed(trt)) == {"test_per_model", "test_per_target"}


def test_an_undeclared_dependency_or_a_cycle_is_an_error(model):
    analyses = Analyses(model)
    with pytest.raises(KeyError, match="without declaring it"):
        analyses.get("test_undeclared", resolve("trt"))
    with pytest.raises(RuntimeError, match="cycle: test_cycle_a -> test_cycle_b -> test_cycle_a"):
        analyses.get("test_cycle_a", resolve("trt"))
    with pytest.raises(KeyError, match="no analysis named"):
        analyses.get("no_such_analysis", None)


def test_analyses_of_the_older_form_still_run(model):
    assert Analyses(model).get("test_legacy", resolve("trt")) == "onnx:None"
    assert model.precomputed == {} and analysis.early_key("x") == "early:x"


class _Reads(Rule):
    """Reads a per-target analysis through ctx.analysis."""

    id = "GL9904"
    name = "reads-analysis"
    severity = Severity.INFO
    requires = ("test_per_target",)

    def check(self, ctx):
        yield ctx.finding(None, repr(ctx.analysis("test_per_target")))


def test_rules_share_the_model_s_manager_across_targets(model):
    CALLS.clear()
    analyses = Analyses(model)
    for spec in ("trt", "ort"):
        res = run_rules(model, resolve(spec), [_Reads], {}, analyses)
        assert [f.message for f in res.findings] == [repr((spec, len(model.graph.nodes)))]
        assert res.stats["test_nodes"] == len(model.graph.nodes)
    assert [c for c in CALLS if c[0] == "per_model"] == [("per_model", None)]


def test_required_is_the_transitive_closure_and_tolerates_unknown_names():
    """What graphlint.lint asks the loader to compute early is chosen from this closure; a rule
    pack's misspelt requirement must leave that rule to fail alone (GL9002), not the run."""
    assert analysis.required(["test_per_target"]) == {"test_per_target", "test_per_model"}
    assert analysis.required(["test_cycle_a"]) == {"test_cycle_a", "test_cycle_b"}
    assert analysis.required(["no_such_analysis"]) == {"no_such_analysis"}
    assert "components" in analysis.required(["partition"])
    assert "components" not in analysis.required(["shapes", "support"])


class _Misspelt(_Reads):
    """Declares an analysis nobody registered (so its check never runs)."""

    id = "GL9905"
    name = "misspelt-requirement"
    requires = ("no_such_analysis",)


def test_a_rule_requiring_an_unknown_analysis_fails_alone(model):
    """lint_model picks the loader's early work from the rules' requirements: an unknown name
    there must not end the run, only that rule (GL9002), while the partition still runs."""
    from graphlint.lint import LintOptions, lint_model
    from graphlint.registry import load_rules

    partition = [r for r in load_rules() if r.id == "GL1010"]
    res, = lint_model(model.path, [resolve("trt")], [_Misspelt, *partition], LintOptions())
    assert [(f.rule_id, f.properties.get("crashed_rule")) for f in res.findings] == [("GL9002", "GL9905")]
    assert res.stats["partition"]["islands"] >= 1
