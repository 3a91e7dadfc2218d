"""Helpers shared by the tests/test_fix_*.py files."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from graphlint.config import resolve_options
from graphlint.fix.run import FixOptions, FixReport, fix_path


def run_fix(path: str, out: str | None, *, target: str = "trt", rewrites=(), select=(), shapes=(),
            **kw) -> FixReport:
    opts = resolve_options(targets=[target], select=list(select), ignore=[], shapes=list(shapes),
                           config_path=None, repo_root=".")
    fopts = FixOptions(output=out, rewrites=[(r, {}) if isinstance(r, str) else r for r in rewrites], **kw)
    return fix_path(path, fopts, opts)


def steps(report: FixReport) -> dict[str, str]:
    return {s.name: s.status for s in report.outcome.steps}


def ort_outputs(path: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds), strict=True))


def ops(path: str) -> set[tuple[str, str]]:
    return {(n.domain or "ai.onnx", n.op_type) for n in onnx.load(path).graph.node}
