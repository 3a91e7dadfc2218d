"""ai.onnx.ml per target: graphlint's support tables against the engines, one-node model per op version.

The classic-ML exporters (skl2onnx, onnxmltools) write ai.onnx.ml ops. Each target's table holds the
domain like com.microsoft (ONNX Runtime: its kernel registry; OpenVINO: the frontend probe, which
converts only Normalizer; TensorRT: none in its operator document). Here every case of
testmodels/pipelines/ml_ops_probe.py (every ai.onnx.ml op at each schema version, plus the text ops
skl2onnx's TF-IDF pipeline writes) is run in ONNX Runtime and OpenVINO now, and graphlint's load
verdict (an error of the validity and support families) must match the engine's.
"""

from __future__ import annotations

import pytest

from graphlint.lint import LintOptions, lint_paths
from testmodels.pipelines import ml_ops_probe as probe

CASES = [make() for make in probe.CASES]


def errors(path: str, target: str) -> list:
    """Load-verdict errors: the validity and target-support families (as the backend conformance)."""
    run = lint_paths([path], LintOptions(targets=[target], select=["validity", "target-support"]))
    assert not run.failures, run.failures
    return [f for f in run.results[0].findings if f.severity.label == "error"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_ml_ops_table_matches_the_engines(tmp_path, case):
    import onnx

    model = probe.build(case)
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    engine = {"ort": probe.probe_ort(model, case.feeds, None)["verdict"],
              "openvino": probe.probe_openvino(model, case.feeds, None)["verdict"]}
    for target, verdict in engine.items():
        refused = errors(path, target)
        assert bool(refused) == (verdict != "accepts"), (target, verdict, [f.message for f in refused][:2])
    if case.domain == probe.ML:
        assert errors(path, "trt"), "TensorRT's parser has no ai.onnx.ml importer"
