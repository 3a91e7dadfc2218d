"""ONNX Runtime (CPU execution provider) as a deployment runs it: default session options unless
the user configures others (``[confirm.onnxruntime]``: ``SessionOptions`` attributes, and
``session.*`` config entries)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from graphlint.runners import failure

NAME = "onnxruntime"
DISTRIBUTIONS = ("onnxruntime", "onnxruntime-openvino", "onnxruntime-gpu", "onnxruntime-directml")


class Session:
    engine = NAME
    device = "cpu"
    precision = None  # what the engine computes float32 in: as written

    def __init__(self, path: str, config: dict[str, Any], outputs: list[str] | None = None) -> None:
        import onnxruntime as ort

        self.version = ort.__version__
        so = ort.SessionOptions()
        so.log_severity_level = 3
        for key, value in config.items():
            if key.startswith("session."):
                so.add_session_config_entry(key, str(value))
            elif key == "graph_optimization_level":
                so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, str(value))
            else:
                setattr(so, key, value)
        source: Any = path
        if outputs:
            source = _with_outputs(path, outputs)
        try:
            self.sess = ort.InferenceSession(source, so, providers=["CPUExecutionProvider"])
        except Exception as e:
            raise failure(e) from None
        self.names = [o.name for o in self.sess.get_outputs()]
        self.inputs = {i.name for i in self.sess.get_inputs()}

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import onnxruntime as ort

        given = {k: v for k, v in feeds.items() if k in self.inputs}
        try:
            outs = self.sess.run(self.names, given)
        except Exception as e:
            if "No corresponding Numpy type" not in str(e):
                raise failure(e) from None
            # float8 / int4 outputs: the run worked, numpy cannot hold the result; keep their shapes only
            vals = self.sess.run_with_ort_values(self.names, {k: ort.OrtValue.ortvalue_from_numpy(v)
                                                               for k, v in given.items()})
            return {n: np.empty(v.shape(), dtype=np.void(1)) for n, v in zip(self.names, vals, strict=True)}
        return dict(zip(self.names, (np.asarray(o) for o in outs), strict=True))


def _with_outputs(path: str, outputs: list[str]) -> bytes:
    """The model with intermediate values declared as outputs (bisection), as bytes: external data
    is read from the model's own folder (its references were vetted when the model was loaded)."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    onnx.load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))
    have = {o.name for o in model.graph.output}
    for name in outputs:
        if name not in have:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    return model.SerializeToString()
