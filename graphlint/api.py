"""graphlint as a library: check a model from Python and get a typed report (docs/api.md).

``graphlint.check(model, target)`` lints what an export script has in hand: a path (``.onnx``,
or an OpenVINO IR ``.xml``), an ``onnx.ModelProto``, the bytes of one, a ``torch.onnx.ONNXProgram``
(what ``torch.onnx.export(..., dynamo=True)`` returns) or an ``openvino.Model``. The same
configuration, selection and severity contract as the command line apply. A model given in memory
is written to a temporary folder that lives as long as the report (its findings and SARIF name
that file).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphlint.report import LoadFailure, Run
from graphlint.rule import Finding, Severity

if TYPE_CHECKING:
    from graphlint.lint import LintOptions

__all__ = ["FixResult", "Report", "check", "fix", "lint_run"]


@dataclass
class Report:
    """The findings of one ``check`` over one model (or one deployment folder) for one or more targets."""

    run: Run
    _scratch: Any = field(default=None, repr=False)  # the TemporaryDirectory of an in-memory model

    @property
    def findings(self) -> list[Finding]:
        """Every finding not suppressed (by the configuration, the model's own graphlint:ignore)."""
        return self.run.findings()

    @property
    def errors(self) -> list[Finding]:
        """The findings that say a target rejects the model or fails at run time."""
        return [f for f in self.findings if f.severity >= Severity.ERROR]

    @property
    def failures(self) -> list[LoadFailure]:
        """Models graphlint could not read at all (the command line exits 2 for them)."""
        return list(self.run.failures)

    @property
    def pipelines(self) -> list[Any]:
        """A deployment folder's pipelines, one result per target (graphlint.pipeline.engine.PipelineResult:
        ``pipeline`` with its stages and edges, ``contracts`` with each edge's verdict, ``findings``)."""
        return list(self.run.pipelines)

    @property
    def ok(self) -> bool:
        """No error and no unreadable model: the targets take the model as far as graphlint can tell."""
        return not self.errors and not self.failures

    def to_text(self, *, show_info: bool = False, expand: bool = False) -> str:
        from graphlint.report import render

        return render(self.run, "text", show_info=show_info, expand=expand)

    def to_json(self) -> str:
        from graphlint.report import render

        return render(self.run, "json")

    def to_sarif(self) -> str:
        from graphlint.report import render

        return render(self.run, "sarif")

    def to_html(self, title: str = "graphlint report") -> str:
        from graphlint.html import render_html

        return render_html(self.run, title)


def check(model: Any, target: str | Sequence[str] = "trt", *, select: Sequence[str] = (),
          ignore: Sequence[str] = (), shapes: Sequence[str] = (), config: str | None = None,
          root: str | None = None, confirm: bool | dict[str, Any] | None = None) -> Report:
    """Lint ``model`` for ``target`` (``"trt"``, ``"ort@1.32"``, ``"openvino@npu"``, or a list of them).

    ``select`` / ``ignore`` take rule ids, prefixes, names or families as ``--select`` does;
    ``shapes`` the ``NAME:MIN,OPT,MAX`` profiles of ``--shapes``; ``config`` a graphlint.toml or
    pyproject.toml (default: the one found from ``root``, else the working folder). ``confirm``:
    ``True`` runs the model on the installed engines as ``--confirm`` does, a dict does so with the
    settings of the ``[confirm]`` table (``{"budget": 60, "openvino": {...}}``), ``None`` takes the
    configuration's. Given a ``torch.onnx.ONNXProgram``, confirm also compares every engine with its
    exported program."""
    from graphlint.config import resolve_options

    path, scratch = _as_file(model)
    targets = [target] if isinstance(target, str) else list(target)
    opts = resolve_options(targets=targets, select=list(select), ignore=list(ignore), shapes=list(shapes),
                           config_path=config, repo_root=root, models=[path],
                           confirm=None if confirm is None else bool(confirm))
    if isinstance(confirm, dict):
        from graphlint.confirm.options import parse

        _, opts.confirm = parse(confirm, "confirm")
    if opts.confirm is not None and hasattr(model, "exported_program") and hasattr(model, "model_proto"):
        opts.confirm.reference = model  # torch.onnx.ONNXProgram: its exported program is the reference
    opts.jobs = 1  # one model, in this process
    return Report(lint_run([path], opts), scratch)


def lint_run(paths: Sequence[str], opts: LintOptions, baseline: str | None = None) -> Run:
    """Lint ``paths`` with resolved options, then the suppressions and the baseline: what ``check``
    and the ``graphlint check`` / ``graphlint report`` commands share (they add the rendering)."""
    from graphlint.lint import lint_paths
    from graphlint.workflow import apply_workflow

    run = lint_paths(list(paths), opts)
    apply_workflow(run, opts, baseline)
    return run


@dataclass
class FixResult:
    """What ``fix`` did: the verified model and each pass with its outcome."""

    model: Any  # the fixed onnx.ModelProto; for an OpenVINO IR, the path of the fixed .xml
    passes: list[dict[str, Any]]  # pass, status (applied / refused / ...), changes, reason, max_abs_diff
    verified_with: str | None  # the engine that ran the original and the rewrite on the same inputs
    max_abs_diff: dict[str, float]  # per output, rewrite vs original
    notes: list[str]
    held_back: list[dict[str, Any]]  # findings whose rewrite was not applied, and why
    _scratch: Any = field(default=None, repr=False)

    @property
    def changed(self) -> bool:
        return any(p["status"] == "applied" for p in self.passes)


def fix(model: Any, target: str = "trt", *, select: Sequence[str] = (), ignore: Sequence[str] = (),
        shapes: Sequence[str] = (), unsafe_fixes: bool = False, config: str | None = None,
        root: str | None = None) -> FixResult:
    """Apply the suggested rewrites of ``check``'s findings as verified passes (``graphlint fix``):
    each pass is checked and run against the original; one that breaks equivalence is dropped.
    The model given is never changed; the result holds the fixed copy."""
    from graphlint.config import resolve_options
    from graphlint.fix.run import FixOptions, fix_path

    path, scratch = _as_file(model)
    if scratch is None:
        scratch = tempfile.TemporaryDirectory(prefix="graphlint-")
    out = os.path.join(scratch.name, "fixed.xml" if path.endswith(".xml") else "fixed.onnx")
    opts = resolve_options(targets=[target], select=list(select), ignore=list(ignore), shapes=list(shapes),
                           config_path=config, repo_root=root, models=[path])
    report = fix_path(path, FixOptions(output=out, unsafe_fixes=unsafe_fixes), opts)
    d = report.to_dict()
    fixed: Any = out
    if not out.endswith(".xml") and os.path.exists(out):
        import onnx

        fixed = onnx.load(out)
    return FixResult(fixed if os.path.exists(out) else None, d["passes"], d["verified_with"], d["max_abs_diff"],
                     d["notes"], d["held_back"], scratch)


def _as_file(model: Any) -> tuple[str, Any]:
    """A path to lint, and the temporary folder that holds it when the model came in memory."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model), None
    scratch = tempfile.TemporaryDirectory(prefix="graphlint-")
    onnx_path = os.path.join(scratch.name, "model.onnx")
    if isinstance(model, (bytes, bytearray, memoryview)):
        with open(onnx_path, "wb") as f:
            f.write(bytes(model))
        return onnx_path, scratch
    kind = f"{type(model).__module__}.{type(model).__qualname__}"
    if kind.startswith("onnx.") and hasattr(model, "SerializeToString"):  # onnx.ModelProto
        import onnx

        onnx.save(model, onnx_path, save_as_external_data=model.ByteSize() >= 2**31 - 2**20)
        return onnx_path, scratch
    if hasattr(model, "model_proto") and hasattr(model, "save"):  # torch.onnx.ONNXProgram
        model.save(onnx_path)
        return onnx_path, scratch
    if kind.startswith("openvino") and hasattr(model, "get_ordered_ops"):  # openvino.Model
        import openvino as ov

        xml = os.path.join(scratch.name, "model.xml")
        ov.save_model(model, xml, compress_to_fp16=False)
        return xml, scratch
    scratch.cleanup()
    raise TypeError(f"graphlint.check takes a path, an onnx.ModelProto, bytes, a torch.onnx.ONNXProgram or an "
                    f"openvino.Model, not {kind}")
