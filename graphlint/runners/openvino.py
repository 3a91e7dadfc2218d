"""OpenVINO on CPU as a deployment runs it: ``read_model`` + ``compile_model`` with the plugin's
defaults (on AMX / AVX512_BF16 hosts that means bf16 for float32 graphs) unless the user sets
properties (``[confirm.openvino]``, e.g. ``INFERENCE_NUM_THREADS = 1``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphlint.runners import failure

NAME = "openvino"
DISTRIBUTIONS = ("openvino",)


class Session:
    engine = NAME
    device = "cpu"

    def __init__(self, path: str, config: dict[str, Any], outputs: list[str] | None = None) -> None:
        import openvino as ov

        self.version = ov.get_version().split("-")[0]
        core = ov.Core()
        try:
            model = core.read_model(path)
            if outputs:
                model.add_outputs(list(outputs))
            self.compiled = core.compile_model(model, "CPU", {k: str(v) for k, v in config.items()})
        except Exception as e:
            raise failure(e) from None
        try:
            self.precision = _dtype_name(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        except Exception:
            self.precision = None


    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        by_port = {}
        for p in self.compiled.inputs:
            name = next((n for n in p.get_names() if n in feeds), None)
            if name is not None:
                by_port[p] = feeds[name]
        try:
            # A request of its own per run: a reused one returns the previous size's output shape where a
            # new size makes the plugin give up (measured on the corpus IRs), and a stateful LLM would
            # carry the last run's KV cache into the next sequence.
            res = self.compiled.create_infer_request().infer(by_port)
        except Exception as e:
            raise failure(e) from None
        out: dict[str, np.ndarray] = {}
        for p in self.compiled.outputs:
            names = sorted(p.get_names())
            out[p.get_any_name() if names else str(p.index)] = np.asarray(res[p]).copy()
        return out


def _dtype_name(element_type: object) -> str | None:
    """An OpenVINO element type as the numpy-style name graphlint uses (bfloat16, float16, float32)."""
    text = str(element_type).lower()
    for key, name in (("bf16", "bfloat16"), ("bfloat16", "bfloat16"), ("f16", "float16"), ("float16", "float16"),
                      ("f32", "float32"), ("float32", "float32")):
        if key in text:
            return name
    return None
