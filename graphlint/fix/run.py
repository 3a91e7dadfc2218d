"""``graphlint fix`` without the CLI: lint, turn findings into pass requests, run the passes, write.

    outcome = fix_path("model.onnx", FixOptions(output="model.fixed.onnx"), lint_opts)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphlint.errors import GraphlintError, InputError, UsageError
from graphlint.fix.base import ONNX_FORMAT, OPENVINO_FORMAT, FixContext, Pass, load_passes
from graphlint.fix.manager import APPLIED, FixOutcome, PassManager
from graphlint.fix.verify import Verifier
from graphlint.lint import LintOptions
from graphlint.rewrites import CATALOGUE
from graphlint.rule import Finding

# Rewrites with no pass here, and the pass that reaches the same goal and can be verified.
ALTERNATIVES = {"trt-plugin": "unfuse-contrib"}


@dataclass
class FixOptions:
    output: str | None = None
    in_place: bool = False
    diff: bool = False  # show what would change, write nothing
    unsafe_fixes: bool = False
    layouts: dict[str, str] = field(default_factory=dict)
    rewrites: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # --rewrite NAME[:k=v,...]
    inputs: dict[str, np.ndarray] | None = None  # --inputs FILE.npz
    extra_passes: dict[str, Pass] = field(default_factory=dict)  # third-party / test passes by name


@dataclass
class Planned:
    requests: dict[str, list[dict[str, Any]]]
    held_back: list[tuple[Finding, str]]  # findings whose rewrite is not applied, and why


@dataclass
class FixReport:
    path: str
    output: str | None
    target: str
    outcome: FixOutcome
    plan: Planned
    written: list[str] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)  # findings for applied rewrites still there

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        return {
            "model": self.path, "output": self.output, "target": self.target, "written": self.written,
            "verified_with": o.engine, "notes": o.notes, "max_abs_diff": o.max_abs_diff,
            "passes": [s.to_dict() for s in o.steps],
            "held_back": [{"rule": f.rule_id, "node": f.node, "rewrite": f.rewrite.name if f.rewrite else None,
                           "why": why} for f, why in self.plan.held_back],
            "remaining": [{"rule": f.rule_id, "message": f.message} for f in self.remaining],
        }


def model_format(path: str) -> str:
    return OPENVINO_FORMAT if path.lower().endswith(".xml") else ONNX_FORMAT


def _params(f: Finding) -> dict[str, Any]:
    """The rewrite's params, with the node/value the finding names filled in where the spec wants them."""
    assert f.rewrite is not None
    params = dict(f.rewrite.params)
    spec = CATALOGUE.get(f.rewrite.name)
    wants = spec.params if spec else ()
    if "node" in wants and "node" not in params and f.node:
        params["node"] = f.node
    for key in ("value", "input"):
        if key in wants and key not in params and f.value:
            params[key] = f.value
    return params


def plan(findings: list[Finding], passes: dict[str, Pass], opts: FixOptions, select: list[str],
         ctx: FixContext, static_shapes: set[str] | None = None) -> Planned:
    """Pass requests from the findings' rewrites plus the explicit options; unsafe ones only when asked."""
    requests: dict[str, list[dict[str, Any]]] = {}
    held: list[tuple[Finding, str]] = []
    named = {s.upper() for s in select}
    explicit = {name for name, _ in opts.rewrites}
    for f in findings:
        if f.rewrite is None or f.suppressed:
            continue
        rw = f.rewrite
        alt = ALTERNATIVES.get(rw.name)
        if rw.name not in passes and alt and alt in passes and f.node:
            # e.g. a TensorRT plugin cannot be built or checked here; the standard-op subgraph can.
            held.append((f, f"no pass for {rw.name!r}; applying the verified alternative {alt!r} instead"))
            requests.setdefault(alt, []).append({"node": f.node, **({"op_type": f.op_type} if f.op_type else {})})
            continue
        if rw.name not in passes:
            held.append((f, f"no pass for rewrite {rw.name!r} on this model format"))
            continue
        if not rw.safe and not (opts.unsafe_fixes or f.rule_id.upper() in named or rw.name in explicit):
            held.append((f, f"{rw.name} changes results; run with --unsafe-fixes or --select {f.rule_id}"))
            continue
        requests.setdefault(rw.name, []).append(_params(f))
    for name, params in opts.rewrites:
        if name not in passes:
            known = ", ".join(sorted(passes))
            raise UsageError(f"--rewrite {name!r}: no such pass for this model format (known: {known})")
        requests.setdefault(name, []).append(params)
    if opts.layouts:
        requests.setdefault("set-layout", []).extend({"value": k, "layout": v} for k, v in opts.layouts.items())
    for name, shape in ctx.shapes.items():
        if name in (static_shapes or set()):  # --shapes NAME:SHAPE (one shape) means: fix it
            requests.setdefault("fix-input-shape", []).append({"input": name, "shape": list(shape)})
    return Planned(requests, held)


def _load(path: str, fmt: str) -> Any:
    if fmt == OPENVINO_FORMAT:
        from graphlint.fix.ir_model import IRModel

        return IRModel.load(path)
    import onnx

    try:
        return onnx.load(path)  # external data is loaded from the model's folder (onnx refuses escapes)
    except Exception as e:
        raise InputError(path, f"cannot load for fixing ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def fix_path(path: str, opts: FixOptions, lint_opts: LintOptions, progress=None) -> FixReport:
    from graphlint import lint
    from graphlint.target import resolve

    fmt = model_format(path)
    if len(lint_opts.targets) > 1:
        raise UsageError("fix takes one --target at a time")
    target = resolve(lint_opts.targets[0] if lint_opts.targets else lint.DEFAULT_TARGET[fmt])
    output = path if opts.in_place else opts.output
    if not opts.diff and not output:
        raise UsageError("give -o OUTPUT, --in-place or --diff")
    if output and not opts.in_place and os.path.exists(output) and os.path.samefile(output, path):
        raise UsageError("output is the input model; use --in-place to overwrite it")
    if output and fmt == ONNX_FORMAT and not output.lower().endswith(".onnx"):
        raise UsageError(f"output {output!r} must end in .onnx")
    if output and fmt == OPENVINO_FORMAT and not output.lower().endswith(".xml"):
        raise UsageError(f"output {output!r} must end in .xml")
    if output:
        from graphlint.fsutil import check_output_path

        check_output_path(output)

    rules = lint.selected_rules(lint_opts)
    results = _lint(path, target, rules, lint_opts)
    model_ir = results[0].model
    refused = [i for i in model_ir.issues if i.kind == "external-data"]
    if refused:
        raise InputError(path, f"not fixing: {refused[0].message}")
    if any(i.kind == "impossible-dims" for i in model_ir.issues):
        # The passes and the verification run onnx's shape inference, which a negative dim can
        # abort (SIGABRT, onnx#8481): the dims must be corrected first.
        raise InputError(path, "not fixing: it declares dims no tensor can have (GL0007 says which); "
                               "correct them first")
    findings = [f for r in results for f in r.findings]

    profiles = lint_opts.rule_options.get("shapes", {})
    shapes = {name: tuple(p.opt) for name, p in profiles.items()}
    static = {name for name, p in profiles.items() if p.min == p.max}
    workdir = tempfile.mkdtemp(prefix="graphlint-fix-")
    try:
        ctx = FixContext(target=target, shapes=shapes, layouts=dict(opts.layouts),
                         model_dir=os.path.dirname(os.path.abspath(path)), workdir=workdir)
        passes: dict[str, Pass] = {n: cls() for n, cls in load_passes(fmt).items()}
        passes.update(opts.extra_passes)
        planned = plan(findings, passes, opts, lint_opts.select, ctx, static)
        model = _load(path, fmt)
        verifier = Verifier(fmt, workdir, shapes=shapes, user_feeds=opts.inputs)
        try:
            outcome = PassManager(passes, verifier, progress).run(model, planned.requests, ctx)
        except ValueError as e:
            raise UsageError(str(e)) from None
        report = FixReport(path, None if opts.diff else output, target.spec, outcome, planned)
        if opts.diff or not output:
            return report
        if not outcome.changed and os.path.exists(output) and os.path.samefile(output, path):
            return report  # --in-place with nothing to do: leave the file alone
        try:
            report.written = _write(outcome.model, path, output, fmt)
        except OSError as e:  # disk full, permissions: the atomic writer left nothing behind
            raise GraphlintError(f"cannot write {output}: {e.strerror or e}") from None
        applied = {s.name for s in outcome.steps if s.status == APPLIED}
        again = _lint(output, target, rules, lint_opts)
        report.remaining = [f for r in again for f in r.findings
                            if f.rewrite is not None and f.rewrite.name in applied and not f.suppressed]
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _lint(path: str, target: Any, rules: list, lint_opts: LintOptions) -> list:
    """Lint one model for one target, with the suppressions (model metadata, config) applied."""
    from graphlint import lint
    from graphlint.report import Run

    results = lint.lint_model(path, [target], rules, lint_opts)
    try:
        from graphlint.workflow import apply_suppressions
    except ImportError:  # an older workflow module: no suppressions to honour
        return results
    apply_suppressions(Run(results=results, failures=[], rules=rules, root=lint_opts.root),
                       list(getattr(lint_opts, "suppressions", [])))
    return results


def _write(model: Any, src: str, output: str, fmt: str) -> list[str]:
    from graphlint.fix import write

    if fmt == OPENVINO_FORMAT:
        return write.save_ir(model, output)
    import onnx

    external = write.has_external_data(onnx.load(src, load_external_data=False))
    return write.save_onnx(model, output, external=external)
