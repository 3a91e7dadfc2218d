"""Engine drift on real torch exports: the engine differs from torch exactly where GL2010/GL2011 say so.

interpolate(antialias=True) (dynamo, opset 18) -> Resize antialias=1, which OpenVINO ignores;
MaxPool2d(ceil_mode=True) with padding whose last window starts in the padding (both exporters),
where OpenVINO's output is one larger than torch's; and close variants (no antialias, ceil_mode
without that window, pixel_unshuffle, which torch exports as Reshape/Transpose rather than
SpaceToDepth) where the engines reproduce torch and the rules stay silent.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from testmodels import engines
from testmodels.export_engine_drift import exports
from tests.fixhelp import run_fix, steps

RULES = ["GL2010", "GL2011"]


@pytest.fixture(scope="module")
def folder() -> str:
    return exports()


def _io(folder: str, case: str) -> tuple[np.ndarray, np.ndarray]:
    with np.load(os.path.join(folder, f"{case}.npz")) as z:
        return z["x"], z["y"]


def _findings(path: str, target: str) -> list:
    from graphlint.lint import LintOptions, lint_paths

    run = lint_paths([path], LintOptions(targets=[target], select=RULES))
    assert not run.failures
    return list(run.findings())


def _differs(engine: str, path: str, x: np.ndarray, y: np.ndarray) -> engines.Verdict:
    return engines.compare([y], engines.run(engine, path, [x]))


def test_interpolate_antialias_drifts_on_openvino_only(folder):
    path = os.path.join(folder, "interp_antialias_dynamo.onnx")
    x, y = _io(folder, "interp_antialias")
    v = _differs("openvino", path, x, y)
    assert v.status == "values" and v.max_abs > 0.05  # the antialias filter is missing, not rounding
    assert not _differs("ort", path, x, y).differs
    found = _findings(path, "openvino")
    assert [f.properties["engine_drift"] for f in found] == ["openvino-resize-antialias"]
    assert found[0].op_type == "Resize" and found[0].severity.label == "warning"
    assert not _findings(path, "ort")


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_interpolate_without_antialias_is_silent(folder, exporter):
    path = os.path.join(folder, f"interp_plain_{exporter}.onnx")
    x, y = _io(folder, "interp_plain")
    for target in ("openvino", "ort"):
        assert not _differs(target, path, x, y).differs
        assert not _findings(path, target)


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_maxpool_ceil_last_window_wrong_shape_on_openvino_and_fixed(folder, exporter, tmp_path):
    path = os.path.join(folder, f"maxpool_ceil_pad_{exporter}.onnx")
    x, y = _io(folder, "maxpool_ceil_pad")
    assert _differs("openvino", path, x, y).status == "shape"
    assert not _differs("ort", path, x, y).differs
    found = _findings(path, "openvino")
    assert [(f.rule_id, f.severity.label) for f in found] == [("GL2011", "error")]
    assert found[0].rewrite is not None and found[0].rewrite.name == "maxpool-explicit-pads"
    out = str(tmp_path / "fixed.onnx")
    report = run_fix(path, out, target="openvino", select=RULES)
    assert steps(report)["maxpool-explicit-pads"] == "applied"
    assert not _differs("openvino", out, x, y).differs
    assert not _findings(out, "openvino")


@pytest.mark.parametrize("case", ["maxpool_ceil_nopad", "pixel_unshuffle"])
@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_close_exports_are_silent(folder, case, exporter):
    path = os.path.join(folder, f"{case}_{exporter}.onnx")
    x, y = _io(folder, case)
    for target in ("openvino", "ort"):
        assert not _differs(target, path, x, y).differs
        assert not _findings(path, target)
