"""Shared by the workflow tests (config, suppressions, baselines, HTML, CI recipes).

Real torch exports from testmodels/build_workflow.py, and two small rules that exist only in
tests: they let a test pick exactly which nodes have findings, in-process, while the CLI tests
use the built-in rules.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import onnx

from graphlint import lint
from graphlint.report import Run
from graphlint.rule import Finding, Rule, RuleContext, Severity
from graphlint.target import resolve
from testmodels import build_workflow
from testmodels.common import cached


def workflow_models() -> str:
    """The folder of built models (cached; use as a session fixture ``wf_models`` in each test module)."""
    return cached("workflow", build_workflow.build)


def copy_model(src_folder: str, name: str, dest: str, new_name: str | None = None) -> str:
    path = os.path.join(dest, new_name or name)
    shutil.copyfile(os.path.join(src_folder, name), path)
    return path


def with_metadata(src: str, dest: str, **props: str) -> str:
    """A copy of an ONNX model with extra metadata_props (keys may contain ':' via dict unpacking)."""
    m = onnx.load(src)
    for k, v in props.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.save(m, dest)
    return dest


class ReluAfter(Rule):
    """Test rule: a Relu fed by one of the op types in options["relu_after"] (default Add).

    ## What it checks
    Test only.
    """

    id = "GL3990"
    name = "test-relu-after"
    severity = Severity.ERROR
    op_types = frozenset({"Relu"})

    def check_node(self, node, ctx: RuleContext) -> Iterator[Finding]:
        src = node.inputs[0].producer if node.inputs and node.inputs[0] is not None else None
        if src is not None and src.op_type in ctx.options.get("relu_after", ("Add",)):
            yield ctx.finding(node, f"Node '{node.label}' (Relu) follows a {src.op_type}.")


class FakeUnsupported(Rule):
    """Test rule: the ops listed in options["unsupported"] are unsupported (family target-support).

    ## What it checks
    Test only.
    """

    id = "GL1990"
    name = "test-unsupported"
    severity = Severity.ERROR
    op_types = frozenset({"*"})

    def check_node(self, node, ctx: RuleContext) -> Iterator[Finding]:
        if node.op_type in ctx.options.get("unsupported", ()):
            yield ctx.finding(node, f"Node '{node.label}' ({node.op_type}) is not supported by {ctx.target.title}.")


def lint_with(paths: list[str], rules: list[type[Rule]], target: str = "trt", **rule_options) -> Run:
    """Lint in-process with the given rules (and options); the same code path as the CLI."""
    opts = lint.LintOptions()
    opts.rule_options.update(rule_options)
    results = []
    for p in paths:
        results.extend(lint.lint_model(p, [resolve(target)], rules, opts))
    return Run(results=results, failures=[], rules=list(rules), root=os.getcwd())
