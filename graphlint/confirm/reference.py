"""The PyTorch reference: what the model means, when ``graphlint.check`` is given the
``torch.onnx.ONNXProgram`` itself (its ``exported_program`` runs in the caller's own process, where
torch already is). Each engine's outputs at each point are compared with it, and an engine that
differs is wrong by definition (GL9103, no bisection: the exported program has no ONNX values).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from graphlint.confirm.engines import Engine
from graphlint.confirm.execute import EngineRun, RunRecord
from graphlint.confirm.plan import Plan

ENGINE = "pytorch"

Reference = Callable[[dict[str, np.ndarray]], list[np.ndarray]]


def from_program(program: Any, input_names: list[str]) -> tuple[Reference, str] | None:
    """A reference function over ONNX feeds, and torch's version; None when the program has none."""
    ep = getattr(program, "exported_program", None)
    if ep is None:
        return None
    import torch

    module = ep.module()

    def run(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            out = module(*[torch.from_numpy(np.ascontiguousarray(feeds[n])) for n in input_names])
        return [t.detach().cpu().numpy() for t in _leaves(out)]

    return run, torch.__version__.split("+")[0]


def _leaves(out: Any) -> list[Any]:
    """The tensors of a forward's output in the order the exporter flattens them."""
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _leaves(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _leaves(o)]
    return [out] if hasattr(out, "detach") else []


def reference_run(fn: Reference, version: str, plan: Plan, seed: int, output_names: list[str]) -> EngineRun:
    """The reference at every point of ``plan``, on the feeds the engines got (same seeds)."""
    er = EngineRun(Engine(ENGINE, version, "cpu"), [])
    t0 = time.perf_counter()
    for i, point in enumerate(plan.points):
        feeds = plan.feeds(point, seed + i)
        try:
            outs = fn(feeds)
        except Exception as e:
            er.runs.append(RunRecord(point, False, f"{type(e).__name__}: {e}"[:300]))
            continue
        names = output_names if len(output_names) == len(outs) else [f"output{j}" for j in range(len(outs))]
        values = dict(zip(names, outs, strict=True))
        er.runs.append(RunRecord(point, True, outputs={k: (tuple(v.shape), str(v.dtype)) for k, v in values.items()},
                                 values=values))
    er.seconds = time.perf_counter() - t0
    return er
